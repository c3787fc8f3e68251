"""tessera.data: tf.data-shaped pipelines over the C++ pipeline."""

import numpy as np
import pytest

import tessera
import tessera.tf
from tessera.data import Dataset


def test_slices_batch_and_iterate():
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10, dtype=np.int32)
    ds = Dataset.from_tensor_slices((x, y)).batch(4, drop_remainder=True)
    assert ds.cardinality() == 2
    batches = list(ds)
    assert len(batches) == 2
    bx, by = batches[1]
    assert bx.dtype == np.float32 and bx.shape == (4, 2)
    np.testing.assert_array_equal(bx, x[4:8])
    np.testing.assert_array_equal(by, y[4:8])


def test_short_last_batch_has_a_varying_dimension():
    ds = Dataset.from_tensor_slices(np.zeros((10, 3), np.float32)).batch(4)
    assert ds.element_spec[0][2] == (None, 3)
    assert [b.shape[0] for b in ds] == [4, 4, 2]


def test_non_contiguous_arrays_are_sliced_by_value():
    base = np.arange(60, dtype=np.float32).reshape(10, 6)
    x = base[:, ::2]  # strided view
    assert not x.flags["C_CONTIGUOUS"]
    got = np.stack(list(Dataset.from_tensor_slices(x)))
    np.testing.assert_array_equal(got, x)
    fortran = np.asfortranarray(base)
    got = np.stack(list(Dataset.from_tensor_slices(fortran)))
    np.testing.assert_array_equal(got, base)


def test_map_with_cast_changes_types_as_tf_cast():
    x = np.arange(8, dtype=np.uint8).reshape(4, 2)
    y = np.arange(4, dtype=np.int64)
    ds = Dataset.from_tensor_slices((x, y)).map(
        lambda a, b: (tessera.tf.cast(a, tessera.tf.float32) / 255.0,
                      tessera.tf.cast(b, tessera.tf.float32)))
    a, b = next(iter(ds))
    assert a.dtype == np.float32 and b.dtype == np.float32
    np.testing.assert_allclose(a, x[0] / 255.0, rtol=1e-6)


def test_shuffle_with_a_seed_is_repeatable_and_a_permutation():
    x = np.arange(50, dtype=np.int32)
    ds = Dataset.from_tensor_slices(x).shuffle(50, seed=3)
    first = [int(v) for v in ds]
    assert sorted(first) == list(range(50))
    assert first != list(range(50))
    assert [int(v) for v in Dataset.from_tensor_slices(x).shuffle(
        50, seed=3)] == first


def test_repeat_take_skip_prefetch():
    ds = Dataset.from_tensor_slices(np.arange(3, dtype=np.int32))
    assert ds.repeat().cardinality() == tessera.data.INFINITE_CARDINALITY
    got = [int(v) for v in ds.repeat(3).skip(1).take(5).prefetch()]
    assert got == [1, 2, 0, 1, 2]


def test_a_map_function_raising_reaches_the_consumer():
    def bad(v):
        raise ZeroDivisionError("bad element")
    ds = Dataset.from_tensor_slices(np.arange(3, dtype=np.int32))
    with pytest.raises(ZeroDivisionError):
        ds.map(bad)  # raised while tracing the function on zeros

    calls = []

    def fails_later(v):
        calls.append(1)
        if len(calls) > 2:
            raise ArithmeticError("element %d" % int(v))
        return v
    with pytest.raises(ArithmeticError, match="element 1"):
        list(ds.map(fails_later))


def test_non_numeric_arrays_are_type_errors():
    with pytest.raises(TypeError, match="not a number type"):
        Dataset.from_tensor_slices(np.array(["a", "b"]))


def test_dropping_an_iteration_mid_way_stops_its_python_map_worker():
    # The prefetch worker runs the map function (taking the GIL) while the
    # iterator is destroyed: destruction must not wait on the GIL it holds.
    ds = Dataset.from_tensor_slices(np.arange(1000, dtype=np.int32)).map(
        lambda v: v * 2).prefetch(8)
    for _ in range(20):
        it = iter(ds)
        assert int(next(it)) == 0
        del it
