"""tf.keras's Sequential and functional Model over tessera::nn::Model.

A model is built in C++ once its input shape is known (from an Input, from
`input_shape=` on its first layer, or from the data fit() gets, as Keras
builds a Sequential on first use). compile() records the options; fit(),
evaluate() and predict() convert their arguments once and run in C++ with
the GIL released.
"""

import sys

import numpy as np

from .. import _tessera
from .. import data as _data
from . import callbacks as _callbacks
from . import layers as _layers
from . import losses as _losses
from . import metrics as _metrics
from . import optimizers as _optimizers

__all__ = ["Model", "Sequential", "PipelineStageAssignment"]

_DEFAULT_SEED = 1


def _system_config():
    from ..ipu import config as ipu_config
    return ipu_config._current_system()


def _synthetic_data_initializer():
    from ..ipu import config as ipu_config
    return ipu_config._current_synthetic_initializer()


def _as_arrays(values):
    """An array, a list of arrays or a dict of arrays, with lists' and
    dicts' entries as arrays (views where they were arrays)."""
    if values is None:
        return None
    if isinstance(values, dict):
        return {k: _as_arrays(v) for k, v in values.items()}
    if isinstance(values, (list, tuple)) and values and \
            hasattr(values[0], "shape"):
        return [np.asarray(v) for v in values]
    return values if hasattr(values, "shape") else np.asarray(values)


def _examples(values):
    """The examples (first dimension) of what _as_arrays returns."""
    if isinstance(values, dict):
        values = list(values.values())
    if isinstance(values, list):
        values = values[0]
    return len(values)


def _cut(values, begin, end):
    """Rows begin..end of each array of `values` (views, no copy)."""
    if values is None:
        return None
    if isinstance(values, dict):
        return {k: v[begin:end] for k, v in values.items()}
    if isinstance(values, list):
        return [v[begin:end] for v in values]
    return values[begin:end]


class Model:
    """A functional model: Model(inputs, outputs) with tensors from
    keras.Input() and layers applied to them. inputs and outputs may be
    lists (or dicts) of tensors: fit, evaluate and predict then take one
    array per input (a list in order, or a dict by Input name) and one
    label array per output (a list, or a dict by output layer name);
    compile takes one loss for all outputs or one per output (a list or a
    dict by output name) and loss_weights; predict returns a list of
    arrays, one per output. Datasets give elements
    ((x1, x2, ...), (y1, y2, ...)). The logs are "loss" (the weighted
    sum), then "<output>_loss" and "<output>_accuracy" for each output,
    as Keras names them."""

    def __init__(self, inputs=None, outputs=None, name=None, seed=None,
                 **kwargs):
        self.stop_training = False
        self.history = None
        self.optimizer = None
        self._compile_args = None
        self._core = None
        self._name = name or ("sequential" if isinstance(self, Sequential)
                              else "model")
        self._seed = _DEFAULT_SEED if seed is None else int(seed)
        # Pipelining and accumulation options, kept here until the C++
        # model exists (a Sequential is built on first use) and given to it
        # then: None, or the C++ call's arguments.
        self._stages = None
        self._pipelining = None
        self._accumulation = None
        if inputs is None and outputs is None:
            return
        inputs = self._tensors(inputs, "inputs")
        outputs = self._tensors(outputs, "outputs")
        for i, t in enumerate(inputs):
            if t._input_layer is None:
                raise TypeError("Model: input %d must be a tensor "
                                "keras.Input() returned" % i)
        self._core = _tessera.Model([t._t for t in inputs],
                                    [t._t for t in outputs], self._name,
                                    self._seed)
        self._stages = self._scoped_stages(inputs, outputs)
        self._apply_options()

    @staticmethod
    def _tensors(tensors, what):
        """`tensors` (one KerasTensor, or a list, tuple or dict of them) as a
        list (a dict's in its order)."""
        if isinstance(tensors, dict):
            tensors = list(tensors.values())
        elif not isinstance(tensors, (list, tuple)):
            tensors = [tensors]
        if not tensors:
            raise ValueError("Model: give at least one tensor as %s" % what)
        for i, t in enumerate(tensors):
            if not isinstance(t, _layers.KerasTensor):
                raise TypeError("Model: %s[%d] is %s, not a Keras tensor "
                                "(keras.Input() or a layer's output)"
                                % (what, i, type(t).__name__))
        return list(tensors)

    def _scoped_stages(self, inputs, outputs):
        """The stage of each layer after the Input from the PipelineStage
        scopes they were called in (None when none was), in the C++ model's
        layer order: depth-first from the output, each layer after the
        layers it is applied to, as Functional.cpp lists them."""
        order, seen = [], set()

        def visit(t):
            if id(t) in seen:
                return
            for p in t._parents:
                visit(p)
            seen.add(id(t))
            order.append(t)

        for t in inputs + outputs:
            visit(t)
        stages = [t._stage for t in order[len(inputs):]]
        if all(s is None for s in stages):
            return None
        names = [l.name for l in self._core.layers][len(inputs):]
        if len(names) != len(stages):
            raise RuntimeError(
                "Model: %d layers after the Input but %d layer calls seen; "
                "call set_pipeline_stage_assignment with a stage per layer"
                % (len(names), len(stages)))
        outside = [n for n, st in zip(names, stages) if st is None]
        if outside:
            raise ValueError(
                "Model: layers %s were called outside every "
                "ipu.keras.PipelineStage while others were inside one; put "
                "every layer of a pipelined model in a PipelineStage"
                % outside)
        return stages

    # ---- structure -------------------------------------------------------

    @property
    def name(self):
        return self._name

    @property
    def layers(self):
        self._require_built("layers")
        return list(self._core.layers)

    @property
    def built(self):
        return self._core is not None

    def _require_built(self, what):
        if self._core is None:
            raise ValueError(
                "%s: model %r has not been built yet: give the first layer "
                "input_shape=, start it with keras.Input(shape=...), or call "
                "fit() first" % (what, self._name))

    def _build_for(self, shape, dtype):
        """Builds the C++ model for examples of `shape` (Sequential)."""
        self._require_built("build")

    def summary(self, print_fn=None, **unused):
        """Prints Keras' table of layers, output shapes and parameters
        (and each layer's pipeline stage in a pipelined model)."""
        self._require_built("summary")
        text = self._core.summary().rstrip("\n")
        (print_fn or print)(text)

    def count_params(self):
        self._require_built("count_params")
        trainable, other = self._core.count_params()
        return trainable + other

    @property
    def input_shape(self):
        """(None, ...) of the input; a list of them with several."""
        self._require_built("input_shape")
        shapes = [(None,) + tuple(s[2]) for s in self._core.input_specs()]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_shape(self):
        """(None, ...) of the output; a list of them with several."""
        self._require_built("output_shape")
        shapes = [(None,) + tuple(s) for s in self._core.output_shapes()]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_names(self):
        self._require_built("output_names")
        return list(self._core.output_names())

    @property
    def input_names(self):
        self._require_built("input_names")
        return [s[0] for s in self._core.input_specs()]

    # ---- compile ---------------------------------------------------------

    def compile(self, optimizer=None, loss=None, metrics=None,
                steps_per_execution=None, **kwargs):
        """Sets the optimizer (default: the previous one, else Adam),
        loss, metrics and the device loop. Recompiling keeps the weights.

        steps_per_execution: training steps per device run; an epoch's
        steps must be a multiple of it.
        """
        if getattr(self, "_fitting", False):
            raise RuntimeError(
                "compile: model %r is in fit() (compile was called from a "
                "callback); compile before fit() or after it returns, and "
                "set model.optimizer.learning_rate to change the rate "
                "during fit" % self._name)
        loss_weights = kwargs.pop("loss_weights", None)
        for key in ("weighted_metrics", "run_eagerly", "jit_compile"):
            kwargs.pop(key, None)
        if kwargs:
            raise TypeError("compile: unknown arguments %s" % sorted(kwargs))
        previous = self._compile_args or {}
        if optimizer is None:
            optimizer = previous.get("optimizer", _optimizers.Adam())
        optimizer = _optimizers.get(optimizer)
        if loss is None:
            loss = previous.get("loss",
                                _losses.SparseCategoricalCrossentropy())
        if isinstance(loss, dict):
            loss = {k: _losses.get(v) for k, v in loss.items()}
        elif isinstance(loss, (list, tuple)):
            loss = [_losses.get(v) for v in loss]
        else:
            loss = _losses.get(loss)
        if isinstance(metrics, dict):  # per output: any metric is accuracy
            metrics = [m for ms in metrics.values()
                       for m in (ms if isinstance(ms, (list, tuple))
                                 else [ms])]
        names = [_metrics.name_of(m) for m in (metrics or [])]
        if self.optimizer is not None and self.optimizer is not optimizer:
            self.optimizer._model = None
        optimizer._bind(self)
        self.optimizer = optimizer
        self._compile_args = {
            "optimizer": optimizer, "loss": loss, "metric_names": names,
            "loss_weights": loss_weights,
            "steps_per_execution": int(steps_per_execution or 1)}
        self._compiled_core = False
        if self._core is not None:
            self._compile_core()
            self._compiled_core = True

    def _per_output(self, value, what):
        """`value` given per output (a list in output order or a dict by
        output layer name) as a list in output order."""
        names = self._core.output_names()
        if isinstance(value, dict):
            unknown = sorted(set(value) - set(names))
            if unknown:
                raise ValueError("compile: %s names %s, which are not "
                                 "outputs of model %r; its outputs are %s"
                                 % (what, unknown, self._name, names))
            missing = [n for n in names if n not in value]
            if missing:
                raise ValueError("compile: %s has no entry for the outputs "
                                 "%s" % (what, missing))
            return [value[n] for n in names]
        value = list(value)
        if len(value) != len(names):
            raise ValueError("compile: %s lists %d entries for the %d "
                             "outputs %s of model %r; give one per output"
                             % (what, len(value), len(names), names,
                                self._name))
        return value

    def _output_losses(self):
        """The Loss of each output."""
        loss = self._compile_args["loss"]
        if isinstance(loss, _losses.Loss):
            return [loss] * len(self._core.output_names())
        return self._per_output(loss, "loss")

    def _compile_core(self):
        a = self._compile_args
        losses = self._output_losses()
        logits = {l.from_logits for l in losses
                  if l.name != "mean_squared_error"}
        if len(logits) > 1:
            raise ValueError("compile: the outputs' cross-entropy losses "
                             "differ in from_logits; Tessera takes one "
                             "setting for all of them")
        weights = a["loss_weights"]
        weights = [] if weights is None else \
            [float(w) for w in self._per_output(weights, "loss_weights")]
        self._core.compile(a["optimizer"]._core(), losses[0].name,
                           logits.pop() if logits else False,
                           ["accuracy"] if a["metric_names"] else [],
                           a["steps_per_execution"], _system_config(),
                           _synthetic_data_initializer(),
                           [l.name for l in losses], weights,
                           getattr(a["optimizer"], "_loss_scale",
                                   lambda: None)())

    def _set_learning_rate(self, lr):
        """The optimizer's learning_rate setter: the compiled program takes
        the new rate for the steps that follow, without recompiling (a
        model not built yet compiles with it)."""
        if self._core is not None and self._compiled_core:
            self._core.learning_rate = lr

    def _require_compiled(self, what):
        if self._compile_args is None:
            raise RuntimeError("%s: model %r is not compiled; call "
                               "compile(optimizer=..., loss=...) first"
                               % (what, self._name))

    def _rename(self):
        """The C++ logs' accuracy names as the metric was named in compile
        ("sparse_categorical_accuracy", "dense_1_acc", ...)."""
        names = self._compile_args["metric_names"]
        if not names or names[0] == "accuracy":
            return {}
        outs = self._core.output_names()
        prefixes = [""] if len(outs) == 1 else [o + "_" for o in outs]
        rename = {}
        for p in prefixes:
            for v in ("", "val_"):
                rename[v + p + "accuracy"] = v + p + names[0]
        return rename

    # ---- data at the boundary -------------------------------------------

    def _inputs(self):
        """(name, dtype, shape) of each Input."""
        return [(n, np.dtype(d), tuple(s))
                for n, d, s in self._core.input_specs()]

    def _input(self):
        return self._inputs()[0]

    @staticmethod
    def _arrays(values, names, what, arg):
        """`values` (an array; a list or tuple of them; or a dict by name)
        as a list of one array per name."""
        if isinstance(values, dict):
            missing = [n for n in names if n not in values]
            if missing:
                raise ValueError("%s: %s has no arrays for %s; its keys are "
                                 "%s" % (what, arg, missing, sorted(values)))
            return [values[n] for n in names]
        if isinstance(values, (list, tuple)) and (
                len(names) > 1 or (len(values) == 1 and
                                   hasattr(values[0], "shape"))):
            if len(values) != len(names):
                raise ValueError("%s: %s holds %d arrays but the model "
                                 "takes %d (%s)" % (what, arg, len(values),
                                                    len(names), names))
            return list(values)
        if len(names) > 1:
            raise ValueError("%s: the model takes %d arrays as %s (%s); give "
                             "a list or a dict of them"
                             % (what, len(names), arg, names))
        return [values]

    def _x_tensors(self, x, what):
        ins = self._inputs()
        xs = self._arrays(x, [n for n, _, _ in ins], what, "x")
        return [_tessera.HostTensor.from_array(
            a, dtype.name, '%s: x for Input layer "%s" (expects shape %s, %s)'
            % (what, name, (None,) + shape, dtype.name))
            for a, (name, dtype, shape) in zip(xs, ins)]

    def _x_tensor(self, x, what):
        return self._x_tensors(x, what)[0]

    def _label_dtypes(self):
        return ["int32" if l.name == "sparse_categorical_crossentropy"
                else "float32" for l in self._output_losses()]

    def _label_dtype(self):
        return self._label_dtypes()[0]

    def _y_tensors(self, y, what):
        outs = self._core.output_names()
        ys = self._arrays(y, outs, what, "y")
        losses = self._output_losses()
        return [_tessera.HostTensor.from_array(
            a, dtype, "%s: y (labels for %s%s)" % (
                what, l.name, "" if len(outs) == 1 else
                ' of output "%s"' % o))
            for a, dtype, l, o in zip(ys, self._label_dtypes(), losses, outs)]

    def _y_tensor(self, y, what):
        return self._y_tensors(y, what)[0]

    def _dataset(self, ds):
        """`ds`'s C++ dataset with its components cast to what the model
        takes (float64 images to float32, float labels to int32 for
        sparse cross-entropy), as Keras casts them: the inputs, then one
        label per output."""
        core = ds._core
        spec = core.spec
        want = [d.name for _, d, _ in self._inputs()]
        if self._compile_args is not None:
            want += self._label_dtypes()
        for i, dtype in enumerate(want[:len(spec)]):
            have = np.dtype(spec[i][1])
            if have.name != dtype and have.kind in "fiub":
                core = core.cast(i, dtype)
        return core

    def _ensure_built(self, x):
        if self._core is None:
            if isinstance(x, _data.Dataset):
                spec = x.element_spec
                shape = spec[0][2][1:]
                dtype = np.dtype(spec[0][1])
            else:
                if isinstance(x, (list, tuple)) and len(x) == 1 and \
                        hasattr(x[0], "shape"):
                    x = x[0]
                arr = np.asarray(x) if not hasattr(x, "shape") else x
                shape, dtype = tuple(arr.shape[1:]), arr.dtype
            self._build_for(shape, dtype)
        if self._compile_args is not None and not self._compiled_core:
            self._compile_core()
            self._compiled_core = True

    _compiled_core = False

    def _validation(self, validation_data, batch_size):
        if validation_data is None:
            return None
        if isinstance(validation_data, _data.Dataset):
            return self._dataset(validation_data)
        xv, yv = validation_data[0], validation_data[1]
        return _tessera.Dataset.from_host_tensors(
            self._x_tensors(xv, "validation_data") +
            self._y_tensors(yv, "validation_data")).batch(batch_size, True)

    @staticmethod
    def _split(x, y, fraction):
        """Keras' validation_split: the last `fraction` of x and y (before
        any shuffling) held out, as views (no copy)."""
        if isinstance(x, _data.Dataset):
            raise ValueError("fit: validation_split needs NumPy arrays x and "
                             "y; with a dataset, pass validation_data")
        fraction = float(fraction)
        if not 0.0 < fraction < 1.0:
            raise ValueError("fit: validation_split must be between 0 and 1 "
                             "(the fraction held out), got %r" % fraction)
        x, y = _as_arrays(x), _as_arrays(y)
        n = _examples(x)
        at = int(n * (1.0 - fraction))
        if at == 0 or at == n:
            raise ValueError(
                "fit: validation_split %g of %d examples leaves %s empty; "
                "give more examples or another fraction"
                % (fraction, n, "training" if at == 0 else "validation"))
        if y is None:
            raise ValueError("fit: give labels y with arrays x")
        return _cut(x, 0, at), _cut(y, 0, at), (_cut(x, at, n),
                                                  _cut(y, at, n))

    # ---- training --------------------------------------------------------

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose=1,
            callbacks=None, validation_split=0.0, validation_data=None,
            shuffle=True, steps_per_epoch=None, initial_epoch=0, **kwargs):
        """Trains on NumPy arrays x, y (in batches of batch_size, default
        32; a last short batch is left out, as the IPU needs one batch
        shape) or on a tessera.data.Dataset of (x, y) batches. For a model
        of several inputs or outputs, x and y are lists or dicts of arrays
        (see Model).

        validation_split holds out the last fraction of the arrays (before
        shuffling) as validation data, as Keras does; validation_data wins
        when both are given. initial_epoch resumes a fit: epochs
        initial_epoch .. epochs - 1 run, numbered so.

        Returns a History whose .history maps each log to its epochs.
        """
        self._require_compiled("fit")
        epochs, initial_epoch = int(epochs), int(initial_epoch)
        if not 0 <= initial_epoch < epochs:
            raise ValueError(
                "fit: initial_epoch (%d) must be at least 0 and below epochs "
                "(%d), the epoch to stop before" % (initial_epoch, epochs))
        if validation_split:
            x, y, split = self._split(x, y, validation_split)
            bs = int(batch_size or 32)
            if validation_data is None and _examples(split[0]) < bs:
                raise ValueError(
                    "fit: validation_split %g holds out %d examples, fewer "
                    "than one batch (batch_size %d); the IPU evaluates whole "
                    "batches, so hold out more" % (validation_split,
                                                   _examples(split[0]), bs))
            if validation_data is None:
                validation_data = split
        if verbose == "auto":
            verbose = 1
        self._ensure_built(x)
        history = _callbacks.History()
        cbs = list(callbacks or []) + [history]
        hooks = _callbacks.CallbackList(
            cbs, self, self._rename(),
            self._compile_args["steps_per_execution"])
        hooks.on_train_begin()
        self._fitting = True
        try:
            self._fit_core(x, y, batch_size, epochs, initial_epoch, verbose,
                           hooks, validation_data, shuffle, steps_per_epoch)
        finally:
            self._fitting = False
        logs = {k: v[-1] for k, v in history.history.items()}
        hooks.on_train_end(logs)
        history.model, history.params = self, {"epochs": epochs}
        self.history = history
        return history

    def _fit_core(self, x, y, batch_size, epochs, initial_epoch, verbose,
                  hooks, validation_data, shuffle, steps_per_epoch):
        """The device loop of fit(), in C++ (callbacks through hooks)."""
        if isinstance(x, _data.Dataset):
            if y is not None:
                raise ValueError("fit: give y inside the dataset, not as an "
                                 "argument")
            self._core.fit_dataset(
                self._dataset(x), epochs, initial_epoch, int(verbose), hooks,
                self._validation(validation_data, 32),
                None if steps_per_epoch is None else int(steps_per_epoch))
        else:
            if y is None:
                raise ValueError("fit: give labels y with arrays x")
            bs = int(batch_size or 32)
            xt, yt = self._x_tensors(x, "fit"), self._y_tensors(y, "fit")
            self._core.fit_arrays(xt, yt, bs, bool(shuffle), epochs,
                                  initial_epoch, int(verbose), hooks,
                                  self._validation(validation_data, bs))

    def evaluate(self, x=None, y=None, batch_size=None, verbose=1,
                 return_dict=False, **kwargs):
        """The loss (and metrics) over x, y or a dataset of batches.
        Returns the loss alone without metrics, else [loss, metric...].
        With arrays, the last len(x) % batch_size examples are left out
        (one batch shape on the IPU); a warning says so."""
        self._require_compiled("evaluate")
        self._ensure_built(x)
        if isinstance(x, _data.Dataset):
            ds = self._dataset(x)
        else:
            bs = int(batch_size or 32)
            n = _examples(_as_arrays(x))
            if n % bs:
                print("evaluate: leaving out the last %d of %d examples "
                      "(batch_size %d must divide them)" % (n % bs, n, bs),
                      file=sys.stderr)
            ds = _tessera.Dataset.from_host_tensors(
                self._x_tensors(x, "evaluate") +
                self._y_tensors(y, "evaluate")).batch(bs, True)
        logs = self._core.evaluate(ds, int(verbose if verbose != "auto"
                                           else 1))
        rename = self._rename()
        logs = {rename.get(k, k): v for k, v in logs.items()}
        if return_dict:
            return logs
        values = list(logs.values())
        return values[0] if len(values) == 1 else values

    def predict(self, x, batch_size=None, verbose=0, **kwargs):
        """The model's outputs for x (an array; a list or dict of arrays
        for a model of several inputs; or a dataset whose first components
        are the inputs), as a NumPy array that owns Tessera's result, or
        a list of them (one per output) for a model of several outputs."""
        if self._compile_args is None:
            self.compile()
        if isinstance(x, _data.Dataset):
            n = len(self._core.input_specs()) if self._core else 1
            parts = list(x._core)  # flat: the inputs come first
            x = [np.concatenate([p[i] for p in parts]) for i in range(n)]
        self._ensure_built(x)
        return self._core.predict(self._x_tensors(x, "predict"),
                                  int(batch_size or 32))

    def __call__(self, x):
        return self.predict(x)

    # ---- weights ---------------------------------------------------------

    def _weights_ready(self, what):
        self._require_built(what)
        if self._compile_args is None:
            self.compile()
        if not self._compiled_core:
            self._compile_core()
            self._compiled_core = True

    def get_weights(self):
        """The weights as NumPy arrays, in layer order (kernels, biases,
        moving statistics), without optimizer state."""
        self._weights_ready("get_weights")
        return [a for _, a in self._core.get_weights()]

    def set_weights(self, weights):
        """Replaces the weights by arrays in get_weights() order."""
        self._weights_ready("set_weights")
        self._core.set_weights(list(weights))

    def save_weights(self, filepath, overwrite=True, save_format=None,
                     **unused):
        """Writes the weights and optimizer state to `filepath` in
        Tessera's checkpoint format (whatever its extension), atomically."""
        self._weights_ready("save_weights")
        self._core.save_weights(str(filepath))

    def load_weights(self, filepath, **unused):
        """Reads weights save_weights wrote (of a model of the same layers)."""
        self._weights_ready("load_weights")
        self._core.load_weights(str(filepath))

    # ---- TensorFlow-for-IPU's model options ------------------------------
    #
    # TensorFlow's keyword arguments that Tessera accepts and ignores (it
    # keeps every variable and activation in the IPUs' memory and has one
    # weight update per accumulation):

    _IGNORED_ACCUMULATION_ARGS = frozenset({
        "experimental_normalize_gradients", "gradient_accumulation_dtype",
        "offload_weight_update_variables",
        "replicated_optimizer_state_sharding", "dtype", "name"})
    _IGNORED_PIPELINING_ARGS = _IGNORED_ACCUMULATION_ARGS | frozenset({
        "accumulate_outfeed", "forward_propagation_stages_poplar_options",
        "backward_propagation_stages_poplar_options",
        "weight_update_poplar_options", "offload_activations",
        "offload_gradient_accumulation_buffers", "replicated_weight_sharding",
        "offload_weights", "continuous_weight_updates", "outfeed_loss",
        "outfeed_mask", "reduction_method"})

    @staticmethod
    def _check_kwargs(what, kwargs, ignored):
        unknown = sorted(k for k in kwargs if k not in ignored)
        if unknown:
            raise TypeError("%s: unknown keyword arguments %s; see "
                            "help(Model.%s) for the arguments it takes"
                            % (what, unknown, what))

    @staticmethod
    def _count(what, n):
        if n is None:
            raise ValueError(
                "%s: give gradient_accumulation_steps_per_replica, the "
                "micro-batches (steps) per weight update" % what)
        try:
            n = int(n)
        except (TypeError, ValueError):
            raise TypeError("%s: gradient_accumulation_steps_per_replica "
                            "must be an integer, got %r" % (what, n)) from None
        if n < 0:
            raise ValueError("%s: gradient_accumulation_steps_per_replica "
                             "must be at least 1, got %d" % (what, n))
        return n

    @staticmethod
    def _reduction(what, method):
        """"mean" or "sum" from a GradientAccumulationReductionMethod (an
        enum member or its name); None is Tessera's default, the mean."""
        if method is None:
            return "mean"
        name = str(getattr(method, "name", method)).lower()
        if name not in ("mean", "sum"):
            raise ValueError(
                "%s: gradient_accumulation_reduction_method %r is not one "
                "Tessera has; use MEAN or SUM" % (what, method))
        return name

    def _build_if_known(self):
        """Builds the C++ model when its input is known (a Sequential with
        input_shape=), so options meet their checks when they are set."""

    def _apply_options(self):
        """Gives the C++ model the options set so far (its errors, with
        their numbers, reach the caller)."""
        if self._core is None:
            return
        if self._stages is not None:
            self._core.set_pipeline_stage_assignment(list(self._stages))
        if self._pipelining is not None:
            self._core.set_pipelining_options(**self._pipelining)
        if self._accumulation is not None:
            self._core.set_gradient_accumulation_options(**self._accumulation)

    def _set_option(self, attr, value):
        """Sets one of the options and gives them to the C++ model; on its
        error the option keeps its previous value."""
        self._build_if_known()
        previous = getattr(self, attr)
        setattr(self, attr, value)
        try:
            self._apply_options()
        except Exception:
            setattr(self, attr, previous)
            raise

    def set_pipeline_stage_assignment(self, pipeline_stage_assignment):
        """The pipeline stage of each layer after the Input, in layer order
        (a list of integers, or of what get_pipeline_stage_assignment()
        returns with their pipeline_stage changed): stages start at 0 and
        rise by at most one from a layer to the next. Training then needs
        set_pipelining_options. In a Sequential, list one stage per layer
        given to it; in a functional model, one per layer of model.layers
        after the Input (or call the layers inside ipu.keras.PipelineStage
        scopes instead)."""
        stages = []
        for i, a in enumerate(pipeline_stage_assignment):
            a = getattr(a, "pipeline_stage", a)
            try:
                stages.append(int(a))
            except (TypeError, ValueError):
                raise TypeError(
                    "set_pipeline_stage_assignment: entry %d is %r, not a "
                    "stage number" % (i, a)) from None
            if stages[-1] < 0:
                raise ValueError("set_pipeline_stage_assignment: entry %d is "
                                 "stage %d; stages start at 0"
                                 % (i, stages[-1]))
        self._set_option("_stages", stages)

    def reset_pipeline_stage_assignment(self):
        """Removes the stage assignment (the model is no longer pipelined)."""
        self._stages = None
        if self._core is not None:
            self._core.set_pipeline_stage_assignment([])

    def get_pipeline_stage_assignment(self):
        """Each layer after the Input with its pipeline_stage (None when
        none is assigned); change them and pass the list to
        set_pipeline_stage_assignment."""
        self._require_built("get_pipeline_stage_assignment")
        layers = self.layers[1:]
        stages = self._stages or [None] * len(layers)
        return [PipelineStageAssignment(l, s) for l, s in zip(layers, stages)]

    def set_pipelining_options(
            self, gradient_accumulation_steps_per_replica=None,
            device_mapping=None, pipeline_schedule=None,
            recomputation_mode=None,
            gradient_accumulation_reduction_method=None, **kwargs):
        """How a model with a pipeline stage assignment trains, with
        TensorFlow for the IPU's arguments:

        gradient_accumulation_steps_per_replica: N, the micro-batches (fit
            steps) per weight update; at least the number of stages for the
            Grouped and Interleaved schedules; steps_per_execution must be
            a multiple of it.
        pipeline_schedule: ipu.ops.pipelining_ops.PipelineSchedule.Grouped
            (default), Interleaved or Sequential (or its name).
        device_mapping: the IPU of each stage (default: stage i on IPU i);
            the IPUConfig must have at least max + 1 IPUs.
        recomputation_mode: any RecomputationMode makes every stage but the
            last recompute its activations in the backward pass.
        gradient_accumulation_reduction_method: MEAN (default) or SUM.

        TensorFlow's offload, sharding, Poplar-option and outfeed arguments
        (offload_weight_update_variables, accumulate_outfeed, ...) are
        accepted and ignored; other names raise TypeError."""
        what = "set_pipelining_options"
        self._check_kwargs(what, kwargs, self._IGNORED_PIPELINING_ARGS)
        count = self._count(what, gradient_accumulation_steps_per_replica)
        schedule = "grouped" if pipeline_schedule is None else \
            str(getattr(pipeline_schedule, "name", pipeline_schedule))
        mapping = [] if device_mapping is None else \
            [int(d) for d in device_mapping]
        self._set_option("_pipelining", {
            "count": count, "schedule": schedule, "device_mapping": mapping,
            "recompute": recomputation_mode is not None,
            "reduction": self._reduction(
                what, gradient_accumulation_reduction_method)})

    def set_gradient_accumulation_options(
            self, gradient_accumulation_steps_per_replica=None,
            gradient_accumulation_reduction_method=None, **kwargs):
        """Gradient accumulation without pipelining: the optimizer runs
        once per gradient_accumulation_steps_per_replica steps, on their
        mean (gradient_accumulation_reduction_method MEAN, the default) or
        SUM gradient; steps_per_execution must be a multiple of it.
        TensorFlow's experimental_normalize_gradients, dtype and offload
        arguments are accepted and ignored; other names raise TypeError."""
        what = "set_gradient_accumulation_options"
        self._check_kwargs(what, kwargs, self._IGNORED_ACCUMULATION_ARGS)
        self._set_option("_accumulation", {
            "count": self._count(what,
                                 gradient_accumulation_steps_per_replica),
            "reduction": self._reduction(
                what, gradient_accumulation_reduction_method)})


class PipelineStageAssignment:
    """A layer of a model and its pipeline stage (settable), as
    get_pipeline_stage_assignment() lists them."""

    def __init__(self, layer, pipeline_stage):
        self.layer = layer
        self.pipeline_stage = pipeline_stage

    def __repr__(self):
        return "<PipelineStageAssignment %s: stage %s>" % (
            getattr(self.layer, "name", self.layer), self.pipeline_stage)


class Sequential(Model):
    """A stack of layers, each taking the previous one's output."""

    def __init__(self, layers=None, name=None, seed=None):
        super().__init__(name=name, seed=seed)
        self._layers = []
        for layer in layers or []:
            self.add(layer)

    def add(self, layer):
        """Appends a layer (or, first, a keras.Input() tensor)."""
        if self._core is not None:
            raise RuntimeError("Sequential.add: model %r is built; add "
                               "layers before fit, compile or summary"
                               % self._name)
        if isinstance(layer, _layers.KerasTensor):
            if layer._input_layer is None or self._layers:
                raise TypeError("Sequential.add: only keras.Input() tensors "
                                "may start a Sequential")
            layer = layer._input_layer
        if not isinstance(layer, _layers.Layer):
            raise TypeError("Sequential.add: expected a layer, got %s"
                            % type(layer).__name__)
        self._layers.append(layer)

    def _input_layer(self, shape=None, dtype=None):
        first = self._layers[0] if self._layers else None
        if isinstance(first, _layers.InputLayer):
            return first, self._layers[1:]
        if first is not None and first._input_shape is not None:
            shape = first._input_shape
            dtype = first._dtype or dtype
        if shape is None:
            return None, self._layers
        dtype = np.dtype(dtype or "float32")
        if dtype.kind == "f":
            dtype = np.dtype("float32")
        elif dtype.kind in "iu" and dtype.itemsize >= 4:
            dtype = np.dtype("int32")
        return _layers.InputLayer(shape=shape, dtype=dtype), self._layers

    def _build_for(self, shape=None, dtype=None):
        inp, rest = self._input_layer(shape, dtype)
        if inp is None:
            self._require_built("build")
        self._core = _tessera.Sequential(
            [inp._core] + [l._core for l in rest], self._name, self._seed)
        try:
            self._apply_options()
        except Exception:
            self._core = None  # built again, with fixed options, next time
            raise

    def _require_built(self, what):
        if self._core is None and self._layers:
            inp, _ = self._input_layer()
            if inp is not None:
                self._build_for()
                return
        super()._require_built(what)

    def _build_if_known(self):
        if self._core is None:
            inp, _ = self._input_layer()
            if inp is not None:
                self._build_for()

    def compile(self, *args, **kwargs):
        self._build_if_known()
        super().compile(*args, **kwargs)
