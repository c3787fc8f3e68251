"""poptorch.DataLoader: batches as large as one call of a model takes."""

import torch.utils.data

from ._options import Options


class DataLoader(torch.utils.data.DataLoader):
    """A torch DataLoader whose batches are combined batches: batch_size x
    deviceIterations x replicationFactor x gradientAccumulation samples,
    which is what one call of a poptorch model consumes. Incomplete
    combined batches are dropped (drop_last defaults to True)."""

    def __init__(self, options, dataset, batch_size=1, shuffle=False,
                 num_workers=0, drop_last=True, **kwargs):
        if not isinstance(options, Options):
            raise TypeError("poptorch.DataLoader: the first argument must be "
                            f"a poptorch.Options, got {type(options)}")
        batch_size = int(batch_size)
        if batch_size < 1:
            raise ValueError(f"poptorch.DataLoader: batch_size {batch_size} "
                             "must be at least 1")
        self.options = options
        self.micro_batch_size = batch_size
        self.combinedBatchSize = batch_size * options.combined_batch_factor
        try:
            size = len(dataset)
        except TypeError:
            size = None
        if size is not None and drop_last and size < self.combinedBatchSize:
            raise ValueError(
                f"poptorch.DataLoader: the dataset has {size} samples, fewer "
                f"than one combined batch of {self.combinedBatchSize} "
                f"(batch_size {batch_size} x deviceIterations "
                f"{options.device_iterations} x replicationFactor "
                f"{options.replication_factor} x gradientAccumulation "
                f"{options.Training.gradient_accumulation}); use a smaller "
                "batch_size or fewer device iterations")
        super().__init__(dataset, batch_size=self.combinedBatchSize,
                         shuffle=shuffle, num_workers=num_workers,
                         drop_last=drop_last, **kwargs)
