"""tf.data-shaped input pipelines over Tessera's C++ pipeline.

    ds = (tessera.data.Dataset.from_tensor_slices((images, labels))
          .shuffle(60000).batch(32, drop_remainder=True)
          .map(lambda x, y: (x / 255.0, y)).prefetch(tessera.data.AUTOTUNE))

Iterating yields tuples of NumPy arrays (one array for one component).
Elements may nest tuples, as a model of several inputs and outputs takes
them: from_tensor_slices(((x1, x2), (y1, y2))); the C++ pipeline holds
their arrays flat, in order (x1, x2, y1, y2), and iteration and map
functions see the nesting.
Map functions take and return NumPy arrays; they are traced once on zeros
to learn their output types and shapes, as TensorFlow traces them, and run
on the pipeline's thread afterwards.
"""

import numpy as np

from . import _tessera

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2

__all__ = ["Dataset", "AUTOTUNE", "INFINITE_CARDINALITY",
           "UNKNOWN_CARDINALITY"]


_LEAF = None  # the structure of one array


def _flatten(tensors):
    """The arrays of a (possibly nested) tuple of arrays, in order, and its
    structure: _LEAF for an array, a tuple of structures for a tuple."""
    if isinstance(tensors, (tuple, list)):
        leaves, structure = [], []
        for t in tensors:
            ls, st = _flatten(t)
            leaves += ls
            structure.append(st)
        return leaves, tuple(structure)
    if isinstance(tensors, dict):
        raise TypeError("Dataset: dict elements are not supported; give a "
                        "tuple (features, labels), nested for several "
                        "inputs or outputs: ((x1, x2), (y1, y2))")
    return [tensors], _LEAF


def _pack(leaves, structure):
    """The inverse of _flatten: `leaves` (an iterator) nested as
    `structure`."""
    if structure is _LEAF:
        return next(leaves)
    return tuple(_pack(leaves, st) for st in structure)


def _components(tensors):
    """The arrays of from_tensor_slices' argument and its structure."""
    return _flatten(tensors)


class Dataset:
    """A sequence of elements (tuples of arrays), built by chaining methods.

    Each method returns a new Dataset; the pipeline runs in C++ when a model
    trains on it or when it is iterated.
    """

    def __init__(self, core, structure=()):
        """`structure`: how each element nests its components (_flatten's);
        the default, a flat tuple of however many the core has."""
        self._core = core
        if structure == ():
            structure = (_LEAF,) * len(core.spec)
        self._structure = structure

    @staticmethod
    def from_tensor_slices(tensors):
        """The slices of `tensors` (an array or a tuple of arrays, which
        may nest tuples) along their first dimension. Arrays are copied
        once, into C++."""
        arrays, structure = _components(tensors)
        return Dataset(_tessera.Dataset.from_tensors(list(arrays)), structure)

    @staticmethod
    def from_tensors(tensors):
        """One element: `tensors` (an array or a tuple of arrays) whole."""
        arrays, structure = _components(tensors)
        return Dataset(_tessera.Dataset.from_tensors(
            [np.asarray(a)[None] for a in arrays]), structure)

    def _wrap(self, core):
        return Dataset(core, self._structure)

    def batch(self, batch_size, drop_remainder=False, **unused):
        """Stacks `batch_size` consecutive elements; `drop_remainder` drops
        a short last batch, which gives the IPU one static shape."""
        return self._wrap(self._core.batch(int(batch_size),
                                           bool(drop_remainder)))

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True):
        """Shuffles with a buffer of `buffer_size` elements. Without a seed
        one is drawn from NumPy's global generator (np.random.seed fixes
        it)."""
        if seed is None:
            seed = int(np.random.randint(0, 2**31 - 1))
        return self._wrap(self._core.shuffle(int(buffer_size), int(seed),
                                             bool(reshuffle_each_iteration)))

    def map(self, map_func, num_parallel_calls=None, deterministic=None):
        """Applies `map_func(*components)` to each element (to the one
        array of an element that is one array)."""
        parallel = 1
        if num_parallel_calls is not None and num_parallel_calls != AUTOTUNE:
            parallel = int(num_parallel_calls)
        structure, out = self._structure, []

        def flat(*leaves):
            args = _pack(iter(leaves), structure)
            r = map_func(args) if structure is _LEAF else map_func(*args)
            leaves, st = _flatten(r)
            if not out:
                out.append(st)
            return tuple(leaves)

        core = self._core.map(flat, parallel)  # calls flat once, on zeros
        return Dataset(core, out[0])

    def repeat(self, count=None):
        """The dataset `count` times over (for ever when None or -1)."""
        return self._wrap(self._core.repeat(count))

    def take(self, count):
        return self._wrap(self._core.take(int(count)))

    def skip(self, count):
        return self._wrap(self._core.skip(int(count)))

    def prefetch(self, buffer_size=AUTOTUNE):
        """Produces elements ahead on a worker thread."""
        depth = None if buffer_size in (None, AUTOTUNE) else int(buffer_size)
        return self._wrap(self._core.prefetch(depth))

    def cache(self, filename=""):
        """Accepted for tf.data compatibility: the pipeline is in memory."""
        return self

    @property
    def element_spec(self):
        """[(name, dtype, shape)] per component; None marks a dimension
        that varies between elements."""
        return self._core.spec

    def cardinality(self):
        """The number of elements: -1 infinite, -2 unknown."""
        return self._core.cardinality

    def __len__(self):
        n = self._core.cardinality
        if n < 0:
            raise TypeError("the dataset's length is %s" %
                            ("infinite" if n == -1 else "unknown"))
        return n

    def __iter__(self):
        for element in self._core:
            yield _pack(iter(element), self._structure)

    def as_numpy_iterator(self):
        return iter(self)


class experimental:
    """tf.data.experimental's AUTOTUNE."""
    AUTOTUNE = AUTOTUNE
