"""tensorflow.python.ipu.dataset_benchmark: how fast an input pipeline
produces elements, to tell whether it or the model limits training."""

import json

import numpy as np

__all__ = ["dataset_benchmark"]


class BenchmarkResult:
    """The statistics as TensorFlow-for-IPU returns them: numpy()[0] is
    the JSON text; stats is it parsed."""

    def __init__(self, text):
        self.text = text
        self.stats = json.loads(text)

    def numpy(self):
        return np.array([self.text.encode()])

    def __str__(self):
        return self.text


def dataset_benchmark(dataset, number_of_epochs, elements_per_epochs,
                      print_stats=True, apply_options=True, do_memcpy=True):
    """Iterates `dataset` (a tessera.data.Dataset; repeat() a short one)
    for `number_of_epochs` epochs of `elements_per_epochs` elements; per
    epoch: elements_processed, total_bytes_processed, time_elapsed,
    elements_per_second and bandwidth (bytes/s)."""
    from .. import _tessera
    result = BenchmarkResult(_tessera.dataset_benchmark(
        dataset._core, int(number_of_epochs), int(elements_per_epochs)))
    if print_stats:
        print(json.dumps(result.stats, indent=1))
    return result
