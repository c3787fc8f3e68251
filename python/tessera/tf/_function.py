"""What ipu_compiler.compile traces: a function's ops, the host values it
takes, and the loop (loops.repeat) and infeed it runs.

A function becomes one IR module (tessera.tf._session._Module): ops carry
the shard ipu_shard gave them as @ipu(k), and the pipeline stage
pipelining_ops.pipeline gave them as @stage(s) (tessera.ipu.pipelining_ops
traces the stages; the session's PipelineConfig places them)."""

from ._graph import Operation, Tensor, convert, get_default_graph

__all__ = ["Function", "Cluster", "compile_function", "repeat"]


class Function:
    def __init__(self):
        self.inputs = []      # host tensors, one per argument
        self.results = []     # tensors the function returns
        self.ops = []         # operations made inside it (train, outfeed)
        self.steps = 1
        self.infeed = None
        self.loop_inits = {}  # id(loop_state tensor) -> initial tensor
        self.pipeline = None  # pipelining_ops.pipeline's settings

    def contains(self, t):
        """Whether the program computes `t` (else the host gives it)."""
        return t.function is self

    def host_value(self, t):
        """How the session gets the value of `t` (an argument, a captured
        host tensor or a loop's initial state) for one run."""
        if t.op == "arg":
            host = self.inputs[t.attrs["index"]]
            return lambda s: s._value(host)
        if t.op == "loop_state":
            init = self.loop_inits[id(t)]
            if init.function is self:
                return self.host_value(init)
            return lambda s: s._value(init)
        if t.function is not None and t.function is not self:
            raise ValueError("%s belongs to another compiled function"
                             % t.name)
        return lambda s: s._value(t)


class Cluster(Function):
    """Ops ipu_scope placed on the IPU outside ipu_compiler.compile, with
    the tensors and ops fetched from them: compiled as one program."""

    def __init__(self, results, ops):
        super().__init__()
        self.results = list(results)
        self.ops = list(ops)

    def contains(self, t):
        return t.device == "ipu" and t.function is None


def _flatten(out):
    if out is None:
        return []
    if isinstance(out, (list, tuple)):
        return [x for o in out for x in _flatten(o)]
    if isinstance(out, dict):
        return [x for o in out.values() for x in _flatten(o)]
    return [out]


def compile_function(computation, inputs=None):
    """ipu_compiler.compile: traces `computation` into one IPU program.
    Returns a list of tensors (its results) or, when it returns only ops,
    an operation that runs it."""
    g = get_default_graph()
    if g.function is not None:
        raise NotImplementedError("ipu_compiler.compile inside "
                                  "ipu_compiler.compile is not supported")
    fn = Function()
    host = [convert(x) for x in (inputs or [])]
    fn.inputs = host
    with g.placement(device="ipu", function=fn):
        args = [Tensor("arg", (), {"index": i}, t.dtype, t.shape,
                       name="arg%d" % i) for i, t in enumerate(host)]
        out = computation(*args)
    flat = _flatten(out)
    fn.results = [t for t in flat if isinstance(t, Tensor)]
    for t in fn.results:
        if t.function is not fn:
            raise ValueError("ipu_compiler.compile: %s is not computed by the "
                             "compiled function" % t.name)
    with g.placement(device="cpu"):
        saved = g.function
        g.function = None
        try:
            if not fn.results:
                return Operation("call_run", (), {"call": fn})
            return [Tensor("call_output", (), {"call": fn, "index": i},
                           t.dtype, t.shape, name="compile_out")
                    for i, t in enumerate(fn.results)]
        finally:
            g.function = saved


def repeat(n, body, inputs=None, infeed_queue=None, use_while_v1=True):
    """loops.repeat: `body` runs n times on the device. Its arguments are
    `inputs` (loop state: body returns their next values) followed by the
    infeed's element; it may return ops (a train step, an outfeed
    enqueue) too."""
    g = get_default_graph()
    fn = g.function
    if fn is None:
        raise ValueError("loops.repeat must be called inside "
                         "ipu_compiler.compile (the loop runs on the IPU)")
    if fn.steps != 1 or fn.infeed is not None or fn.pipeline is not None:
        raise NotImplementedError("one loops.repeat or pipelining_ops."
                                  "pipeline per compiled function")
    fn.steps = int(n)
    state = []
    for i, x in enumerate(inputs or []):
        x = convert(x)
        s = Tensor("loop_state", (), {"index": i}, x.dtype, x.shape,
                   name="loop_state")
        fn.loop_inits[id(s)] = x
        state.append(s)
    feeds = []
    if infeed_queue is not None:
        fn.infeed = infeed_queue
        feeds = infeed_queue._dequeue()
    out = body(*state, *feeds)
    if state:
        nxt = [t for t in _flatten(out) if isinstance(t, Tensor)]
        if len(nxt) != len(state):
            raise ValueError("loops.repeat: body must return the %d loop "
                             "inputs' next values, returned %d tensors"
                             % (len(state), len(nxt)))
        for s, t in zip(state, nxt):
            Operation("assign", (_StateRef(s), t))
    return out


class _StateRef:
    """A loop state as an assign target: its variable's name."""

    def __init__(self, state):
        self.var_name = None
        self.state = state
