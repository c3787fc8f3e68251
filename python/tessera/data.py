"""tf.data-shaped input pipelines over Tessera's C++ pipeline.

    ds = (tessera.data.Dataset.from_tensor_slices((images, labels))
          .shuffle(60000).batch(32, drop_remainder=True)
          .map(lambda x, y: (x / 255.0, y)).prefetch(tessera.data.AUTOTUNE))

Iterating yields tuples of NumPy arrays (one array for one component).
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


def _components(tensors):
    """The arrays of from_tensor_slices' argument, and whether it was a tuple."""
    if isinstance(tensors, (tuple, list)):
        return list(tensors), True
    if isinstance(tensors, dict):
        raise TypeError("from_tensor_slices: dict elements are not supported; "
                        "give a tuple (features, labels)")
    return [tensors], False


class Dataset:
    """A sequence of elements (tuples of arrays), built by chaining methods.

    Each method returns a new Dataset; the pipeline runs in C++ when a model
    trains on it or when it is iterated.
    """

    def __init__(self, core, is_tuple=True):
        self._core = core
        self._is_tuple = is_tuple

    @staticmethod
    def from_tensor_slices(tensors):
        """The slices of `tensors` (an array or a tuple of arrays) along
        their first dimension. Arrays are copied once, into C++."""
        arrays, is_tuple = _components(tensors)
        return Dataset(_tessera.Dataset.from_tensors(list(arrays)), is_tuple)

    @staticmethod
    def from_tensors(tensors):
        """One element: `tensors` (an array or a tuple of arrays) whole."""
        arrays, is_tuple = _components(tensors)
        return Dataset(_tessera.Dataset.from_tensors(
            [np.asarray(a)[None] for a in arrays]), is_tuple)

    def _wrap(self, core):
        return Dataset(core, self._is_tuple)

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
        """Applies `map_func(*components)` to each element."""
        parallel = 1
        if num_parallel_calls is not None and num_parallel_calls != AUTOTUNE:
            parallel = int(num_parallel_calls)
        return self._wrap(self._core.map(map_func, parallel))

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
            yield element if self._is_tuple else element[0]

    def as_numpy_iterator(self):
        return iter(self)


class experimental:
    """tf.data.experimental's AUTOTUNE."""
    AUTOTUNE = AUTOTUNE
