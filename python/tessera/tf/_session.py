"""tf.Session for the graphs of tessera.tf._graph.

sess.run lowers what the fetches need to IR modules (IR text, parsed by
the C++ core): ops placed on the CPU (tf.device("cpu"), or no scope) run
on the host through the IR interpreter; each compiled function is one IPU
program (a session on the IPU Model, compiled on first use, kept for the
Session's life) whose loop, if loops.repeat made one, runs on the device
(a pipelining_ops.pipeline runs as a staged module with the session's
PipelineConfig, one step per micro-batch);
ops ipu_scope placed on the IPU outside ipu_compiler.compile are compiled
as a program too (a cluster per set of fetches), as TensorFlow does.
Variables live in the Session, by name, and are written to and read back
from the device around every IPU run, so host and IPU parts share them.
"""

import sys
import threading
import weakref

import numpy as np

from .. import _tessera
from ._graph import IR_TYPES, Operation, Tensor, get_default_graph

__all__ = ["Session", "InvalidArgumentError", "FailedPreconditionError"]


class InvalidArgumentError(ValueError):
    """A feed that does not fit (TensorFlow's errors.InvalidArgumentError)."""


class FailedPreconditionError(RuntimeError):
    """A variable read before it was initialised."""


def _type(t):
    return "%s[%s]" % (IR_TYPES[t.dtype], ", ".join(str(d) for d in t.shape))


def _number(x):
    return repr(float(x))


def _attr(v):
    if isinstance(v, (list, tuple)):
        return "[%s]" % ", ".join(str(int(i)) for i in v)
    if isinstance(v, str):
        return '"%s"' % v
    if isinstance(v, float):
        return _number(v)
    return str(int(v))


class _Module:
    """One IR module being written: the host's part of a run, or a
    compiled function (`fn`)."""

    def __init__(self, session, fn=None):
        self.s, self.fn = session, fn
        self.lines, self.refs, self.outputs = [], {}, []
        self.feeds = {}       # host: IR input name -> value
        self.bindings = {}    # function: IR variable name -> host value fn
        self.infeeds = []     # function: infeed input names, in order
        self.train = None
        self.records = []
        self.shards = 1
        self.n = 0

    def ref(self, t):
        if id(t) in self.refs:
            return self.refs[id(t)]
        r = self._leaf(t) if not _is_ir_op(t) or self._foreign(t) else None
        if r is None:
            ops = [self.ref(i) for i in t.inputs]
            r = self._new()
            attrs = ", ".join("%s = %s" % (k, _attr(v))
                              for k, v in t.attrs.items())
            ann = ""
            if self.fn is not None and t.shard is not None:
                ann = " @ipu(%d)" % t.shard
                self.shards = max(self.shards, t.shard + 1)
            if self.fn is not None and t.stage is not None:
                ann += " @stage(%d)" % t.stage
            self.lines.append("%s = %s(%s)%s : %s%s" % (
                r, t.op, ", ".join(ops), " {%s}" % attrs if attrs else "",
                _type(t), ann))
        self.refs[id(t)] = r
        return r

    def _new(self):
        self.n += 1
        return "%%v%d" % self.n

    def _foreign(self, t):
        """A tensor computed elsewhere: in a function, the host's; on the
        host, the IPU's (ipu_scope's ops, a compiled function's)."""
        if self.fn is not None:
            return not self.fn.contains(t)
        return t.device == "ipu" or t.function is not None

    def _declare(self, kind, name, t, init=None):
        r = '%%"%s"' % name
        line = "%s = %s : %s" % (r, kind, _type(t))
        if init:
            line += " init " + init
        self.lines.append(line)
        return r

    def _leaf(self, t):
        if t.op == "variable":
            if self.fn is not None and not t.attrs["resource"]:
                from ._ops import RESOURCE_ADVICE
                raise TypeError("the IPU cannot use variable %s: %s."
                                % (t.var_name, RESOURCE_ADVICE))
            kind = "variable" if t.attrs["trainable"] else \
                "variable nontrainable"
            r = self._declare(kind, t.var_name, t, t.attrs["init"])
            if self.fn is None:
                self.feeds[t.var_name] = self.s._variable(t)
            return r
        if t.op == "constant":
            r = self._new()
            v = t.attrs["value"].ravel()
            vals = _number(v[0]) if v.size == 1 else \
                "[%s]" % ", ".join(_number(x) for x in v)
            self.lines.append("%s = constant : %s %s" % (r, _type(t), vals))
            return r
        if self.fn is None:
            name = "in/%d" % len(self.feeds)
            self.feeds[name] = self.s._value(t)
            return self._declare("input", name, t)
        if t.op == "infeed":
            name = "infeed/%d" % t.attrs["index"]
            self.infeeds.append(name)
            return self._declare("input", name, t)
        # Values the host gives the function once per run (its arguments,
        # what it captured, a loop's initial state) are variables it keeps.
        name = "%s/%d" % (t.op if t.op in ("arg", "loop_state") else
                          "capture", len(self.bindings))
        self.bindings[name] = self.fn.host_value(t)
        return self._declare("variable nontrainable", name, t, "zeros")

    def output(self, name, t):
        self.outputs.append('output "%s" = %s' % (name, self.ref(t)))

    def add_ops(self, ops):
        for op in ops:
            if op.op == "train":
                if self.train is not None:
                    raise NotImplementedError(
                        "one optimizer minimize() per run is supported")
                self.output("loss", op.inputs[0])
                self.train = op.attrs
            elif op.op == "assign":
                target = op.inputs[0]
                name = self.ref(target.state)[2:-1] \
                    if hasattr(target, "state") else target.var_name
                self.output("update/" + name, op.inputs[1])
                if _text_has_records():
                    self.records.append('update %%"%s" = %s'
                                        % (name, self.ref(op.inputs[1])))
            elif op.op == "group":
                self.add_ops([i for i in op.inputs
                              if not isinstance(i, Tensor)])
            elif op.op == "outfeed_enqueue":
                for k, t in enumerate(op.inputs):
                    self.output("outfeed/%d/%d" % (id(op), k), t)

    def program(self):
        text = 'module "tf1" {\n  %s\n}\n' % "\n  ".join(
            self.lines + self.outputs + self.records)
        p = _tessera.Tf1Program(text)
        if self.train is not None:
            opt = self.train["optimizer"]
            # A pipeline's train op carries its own accumulation settings.
            pipe = self.train.get("pipeline")
            if pipe is None:
                p.train("loss", opt._core(), bool(opt._cross_replica),
                        int(opt._accumulation))
            else:
                p.train("loss", opt._core(), bool(opt._cross_replica),
                        pipe.count, pipe.recompute, pipe.accumulator_type)
        return p


_records = []


def _text_has_records():
    """Whether this build's IR text takes training records (`update %v =
    %new` after the outputs). Where it does, a session writes back only
    recorded updates, so assigns are recorded as well as output as
    "update/<v>" (which the host's write-back and older builds read)."""
    if not _records:
        try:
            _tessera.Tf1Program(
                'module "probe" {\n  %v = variable : float[] init zeros\n'
                '  %c = constant : float[] 1.0\n  update %v = %c\n}\n')
            _records.append(True)
        except (ValueError, RuntimeError):
            _records.append(False)
    return _records[0]


def _copy_config(c):
    """A copy of the configured system, to set this program's shards and
    replicas in."""
    out = _tessera.Config()
    for name in ("auto_select_ipus", "replication_factor", "ipu_model",
                 "floating_point_behaviour", "executable_cache_path",
                 "device_connection_type", "synthetic_data", "host_threads"):
        setattr(out, name, getattr(c, name))
    return out


def _is_ir_op(t):
    from ._graph import HOST_ONLY, STRUCTURAL
    return t.op not in HOST_ONLY and t.op not in STRUCTURAL


def _flatten(fetches):
    """The fetches as a flat list and a function that rebuilds their
    structure from values."""
    if isinstance(fetches, (list, tuple)):
        parts = [_flatten(f) for f in fetches]
        flat = [x for p in parts for x in p[0]]

        def rebuild(values):
            out, i = [], 0
            for (f, r) in parts:
                out.append(r(values[i:i + len(f)]))
                i += len(f)
            return type(fetches)(out) if isinstance(fetches, tuple) else out
        return flat, rebuild
    if isinstance(fetches, dict):
        keys = list(fetches)
        flat, r = _flatten([fetches[k] for k in keys])
        return flat, lambda v: dict(zip(keys, r(v)))
    return [fetches], lambda v: v[0]


class Session:
    """Runs fetches of the default graph: sess.run(fetches, feed_dict)."""

    def __init__(self, target="", graph=None, config=None):
        self.graph = graph or get_default_graph()
        self._vars = {}
        self._programs = {}
        self._device = None
        # One run's feeds and values, per thread: a thread may dequeue an
        # outfeed while another runs the loop filling it.
        self._local = threading.local()

    @property
    def _memo(self):
        return self._local.__dict__.setdefault("memo", {})

    @_memo.setter
    def _memo(self, value):
        self._local.memo = value

    @property
    def _feeds(self):
        return self._local.__dict__.setdefault("feeds", {})

    @_feeds.setter
    def _feeds(self, value):
        self._local.feeds = value

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        # The IPU programs go first: their infeeds' threads may call Python
        # (a dataset's map function) and must stop while Python runs.
        self._programs.clear()
        self._memo = {}
        if self._device is not None:
            self._device.detach()
            self._device = None

    def __del__(self):
        self.close()

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        self._feeds = self._check_feeds(feed_dict or {})
        self._memo = {}
        flat, rebuild = _flatten(fetches)
        # Host training steps run in one module with the host tensors
        # fetched beside them, so those see the values before the step, as
        # TensorFlow's do.
        steps = [f for f in flat if type(f) is Operation and
                 f.op in ("train", "assign") and f.function is None]
        done = set()
        for where in ("cpu", "ipu"):
            ops = [op for op in steps if (op.device == "ipu") ==
                   (where == "ipu")]
            if not ops:
                continue
            tensors = [f for f in flat if isinstance(f, Tensor) and
                       _is_ir_op(f) and f.function is None and
                       (f.device == "ipu") == (where == "ipu")]
            if where == "ipu":
                values = self._run_call(self._cluster(tensors, ops))
            else:
                values = self._host(tensors, ops)
                for op in ops:
                    self._step_global(op, 1)
            for t, v in zip(tensors, values):
                self._memo[id(t)] = v
            done.update(id(op) for op in ops)
        return rebuild([None if id(f) in done else self._fetch(f)
                        for f in flat])

    # -- feeds and leaves ---------------------------------------------------

    @staticmethod
    def _check_feeds(feed_dict):
        feeds = {}
        for t, value in feed_dict.items():
            if not isinstance(t, Tensor):
                raise TypeError("feed_dict keys must be tensors, got %r" % t)
            v = np.asarray(value)
            if tuple(v.shape) != tuple(t.shape):
                raise InvalidArgumentError(
                    "Cannot feed value of shape %s for Tensor '%s', which has "
                    "shape %s" % (tuple(v.shape), t.name, tuple(t.shape)))
            feeds[id(t)] = v.astype(t.dtype)
        return feeds

    def _variable(self, t):
        if t.var_name not in self._vars:
            raise FailedPreconditionError(
                "Attempting to use uninitialized value %s: run "
                "tf.global_variables_initializer() first" % t.var_name)
        return self._vars[t.var_name]

    def _fetch(self, f):
        if isinstance(f, Tensor):
            return self._value(f)
        if isinstance(f, Operation):
            if f.op == "outfeed_dequeue":
                return f.attrs["queue"]._tf1_dequeue()
            self._run_op(f)
            return None
        return f  # a NumPy value (tf.constant here is NumPy's)

    def _value(self, t):
        if id(t) in self._memo:
            return self._memo[id(t)]
        if t.op == "placeholder":
            if id(t) not in self._feeds:
                raise InvalidArgumentError(
                    "You must feed a value for placeholder tensor '%s' with "
                    "dtype %s and shape %s" % (t.name, t.dtype.name,
                                               list(t.shape)))
            v = self._feeds[id(t)]
        elif t.op == "variable":
            v = self._variable(t)
        elif t.op == "constant":
            v = t.attrs["value"]
        elif t.op == "call_output":
            v = self._run_call(t.attrs["call"])[t.attrs["index"]]
        elif t.op == "py_func":
            v = np.asarray(t.attrs["func"](*[self._value(i)
                                             for i in t.inputs]), t.dtype)
        elif t.op in ("arg", "infeed", "loop_state") or \
                t.function is not None:
            raise ValueError("%s is a value inside ipu_compiler.compile; "
                             "fetch what compile returns instead" % t.name)
        elif t.device == "ipu":
            v = self._run_call(self._cluster([t]))[0]
        else:
            v = self._host([t])[0]
        self._memo[id(t)] = v
        return v

    # -- the host -----------------------------------------------------------

    def _host(self, tensors, ops=()):
        m = _Module(self)
        for i, t in enumerate(tensors):
            m.output("out/%d" % i, t)
        m.add_ops(ops)
        p = m.program()
        feeds = dict(m.feeds)
        for name, _, _, _ in p.variables():
            if name in self._vars:
                feeds[name] = self._vars[name]
        out = p.interpret(feeds)
        for name, value in out.items():
            if name.startswith("update/"):
                var = name[len("update/"):]
                self._vars[var] = value.astype(self._vars.get(
                    var, value.astype(np.float32)).dtype)
        return [out["out/%d" % i].astype(t.dtype).reshape(t.shape)
                for i, t in enumerate(tensors)]

    def _run_op(self, op):
        kind = op.op
        if kind == "init_vars":
            self._initialize(op.inputs or list(self.graph.variables.values()))
        elif kind == "infeed_init":
            # Every program reading the queue starts it again.
            q = op.attrs["queue"]
            q._initialized = True
            for key in [k for k in self._programs
                        if k[:2] == ("infeed", id(q))]:
                del self._programs[key]
        elif kind == "group":
            for i in op.inputs:
                self._fetch(i)
        elif kind in ("train", "assign") and op.device == "ipu":
            self._run_call(self._cluster([], [op]))
        elif kind in ("train", "assign"):
            self._host([], [op])
            self._step_global(op, 1)
        elif kind == "call_run":
            self._run_call(op.attrs["call"])
        else:
            raise NotImplementedError("cannot run op %r on the host"
                                      % kind)

    def _initialize(self, variables):
        m = _Module(self)
        for i, v in enumerate(variables):
            m._declare("variable" if v.attrs["trainable"] else
                       "variable nontrainable", v.var_name, v,
                       v.attrs["init"])
            m.refs[id(v)] = '%%"%s"' % v.var_name
            m.output("init/%d" % i, v)
        m.feeds = {}
        out = m.program().interpret({})
        for i, v in enumerate(variables):
            self._vars[v.var_name] = out["init/%d" % i].astype(
                v.dtype).reshape(v.shape)

    def _step_global(self, op, steps):
        gs = op.attrs.get("global_step") if op.op == "train" else None
        if gs is not None and gs.var_name in self._vars:
            self._vars[gs.var_name] = self._vars[gs.var_name] + steps

    # -- the IPU ------------------------------------------------------------

    def _attach(self, n):
        """Attaches the system's IPUs the session runs on (select_ipus'
        device, else the first free device of n IPUs), so they show in
        `tessera monitor` and no other process takes them; the IPU Model
        computes."""
        from ..ipu import config as ipu_config
        if self._device is not None:
            return
        selected = ipu_config._selected_device()
        try:
            self._device = (_tessera.attach_device(selected)
                            if selected is not None
                            else _tessera.acquire_ipus(n))
            where = "IPU%s: %d (IPUs %s)" % (
                "s" if n > 1 else "", self._device.id,
                ", ".join(str(i) for i in self._device.ipus))
        except Exception as e:  # the system is busy: the IPU Model runs it
            where = "an IPU Model of %d IPUs (%s)" % (
                n, str(e).splitlines()[0])
        self.attached = where
        print("Device /device:IPU:0 attached to %s" % where, file=sys.stderr)

    def _cluster(self, tensors, ops=()):
        """The IPU program of ops placed by ipu_scope outside
        ipu_compiler.compile: `tensors` and `ops` with every IPU-placed op
        they need (TensorFlow compiles such a cluster for the IPU too)."""
        from ._function import Cluster
        key = ("cluster",) + tuple(id(x) for x in list(tensors) + list(ops))
        if key not in self._programs:
            self._programs[key] = Cluster(tensors, ops)
        return self._programs[key]

    def _compiled(self, fn):
        from ..ipu import config as ipu_config
        entry = self._programs.get(("program", id(fn)))
        if entry is not None:
            return entry
        m = _Module(self, fn)
        for i, t in enumerate(fn.results):
            m.output("out/%d" % i, t)
        m.add_ops(fn.ops)
        outfeeds = [name for name in (o.split('"')[1] for o in m.outputs)
                    if name.startswith(("out/", "outfeed/"))]
        if not m.infeeds:
            m.lines.insert(0, '%"tick" = input : int[]')
        program = m.program()
        config = _copy_config(ipu_config._current_system())
        n = config.auto_select_ipus
        self._attach(n)
        # As TensorFlow does: the IPUs beyond the graph's shards replicate
        # it (each replica taking its own infeed elements).
        shards = m.shards
        if fn.pipeline is not None:
            pipeline = config.pipeline
            shards = fn.pipeline.configure(pipeline, n)
            config.pipeline = pipeline
            if n > shards and n % shards == 0:
                raise NotImplementedError(
                    "the pipeline uses %d IPUs and the system has %d, which "
                    "would replicate it %d times; replicated pipelines are "
                    "not supported yet: set auto_select_ipus to %d"
                    % (shards, n, n // shards, shards))
        if n % shards:
            raise ValueError(
                "the compiled function uses %d shards but the system has %d "
                "IPUs: set auto_select_ipus to a multiple of %d"
                % (shards, n, shards))
        config.auto_select_ipus = shards
        config.replication_factor = n // shards
        ipu = _tessera.Tf1IpuProgram(program, config, m.infeeds or ["tick"],
                                     outfeeds, int(fn.steps))
        self.from_cache = ipu.compile()
        entry = _Program(m, program, ipu, outfeeds, n // shards, fn)
        self._programs[("program", id(fn))] = entry
        me = weakref.ref(self)
        for op in fn.ops:
            if op.op == "outfeed_enqueue":
                op.attrs["queue"]._tf1_sources.append(
                    lambda: _drain_if_open(me, id(fn)))
        return entry

    def _run_call(self, fn):
        key = ("call", id(fn))
        if key in self._memo:
            return self._memo[key]
        entry = self._compiled(fn)
        m, program = entry.module, entry.program
        variables = {}
        for name, dtype, shape, _ in program.variables():
            if name in m.bindings:
                variables[name] = np.asarray(m.bindings[name](self),
                                             dtype).reshape(shape)
            elif name in self.graph.variables:
                variables[name] = self._variable(self.graph.variables[name])
            else:  # optimizer state the passes made: zero at first
                variables[name] = self._vars.get(name, np.zeros(shape, dtype))
        dataset = None
        if fn.infeed is not None:
            q = fn.infeed
            if not q._initialized:
                raise FailedPreconditionError(
                    "the infeed queue of loops.repeat was not initialised: "
                    "run sess.run(infeed_queue.initializer) first")
            if ("infeed", id(q), id(fn)) not in self._programs:
                dataset = q._dataset._core
                self._programs[("infeed", id(q), id(fn))] = True
        after = entry.ipu.run(variables, dataset)
        for name, value in after.items():
            if name not in m.bindings:
                self._vars[name] = value
        for op in fn.ops:
            self._step_global(op, fn.steps)
        entry.drain()
        results = [entry.result(i, t) for i, t in enumerate(fn.results)]
        self._memo[key] = results
        return results


class _Program:
    """A compiled function's IPU program and the routing of what its steps
    outfeed: to the outfeed queues, and the last step's values as the
    function's results."""

    def __init__(self, module, program, ipu, outfeeds, replicas, fn):
        self.module, self.program, self.ipu = module, program, ipu
        self.replicas, self.fn = replicas, fn
        self.index = {name: k for k, name in enumerate(outfeeds)}
        self.lock = threading.Lock()
        self.pending = []   # elements of a step not all replicas sent yet
        self.last = []

    def _component(self, step, name, t):
        # One step's value: the replicas' stacked when replicated.
        v = [r[self.index[name]].reshape(t.shape) for r in step]
        return v[0] if self.replicas == 1 else np.stack(v)

    def drain(self):
        """Routes the steps outfed so far (callable from any thread)."""
        with self.lock:
            elements = self.pending + list(self.ipu.dequeue())
            n = len(elements) - len(elements) % self.replicas
            self.pending = elements[n:]
            steps = [elements[i:i + self.replicas]
                     for i in range(0, n, self.replicas)]
            if not steps:
                return
            for op in self.fn.ops:
                if op.op == "outfeed_enqueue":
                    op.attrs["queue"]._tf1_put(op.attrs["names"], [
                        [self._component(s, "outfeed/%d/%d" % (id(op), k), t)
                         for k, t in enumerate(op.inputs)] for s in steps])
            self.last = steps[-1][0]

    def result(self, i, t):
        return self.last[self.index["out/%d" % i]].astype(t.dtype).reshape(
            t.shape)


def _drain_if_open(session_ref, fn_id):
    """An outfeed queue's source: drains the program while its session is
    open."""
    s = session_ref()
    entry = s._programs.get(("program", fn_id)) if s is not None else None
    if entry is not None:
        entry.drain()
