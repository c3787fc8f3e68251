"""TensorFlow-for-IPU's names (tensorflow.python.ipu) for Tessera:

    from tessera import ipu
    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    with ipu.ipu_strategy.IPUStrategy().scope():
        model = keras.Sequential([...])   # compiled for the IPU Model

Every model runs on the IPU Model; configure_ipu_system() sets the system
(IPUs, tiles, version, floating-point checks, executable cache) that models
compiled afterwards use. TF_POPLAR_FLAGS' --executable_cache_path,
--use_synthetic_data and --synthetic_data_initializer are honoured too.
ipu_outfeed_queue.IPUOutfeedQueue receives what ipu.keras.layers.Outfeed
layers see during fit().

TF1 graphs (tessera.tf.compat.v1) use scopes.ipu_scope / ipu_shard,
ipu_compiler.compile, loops.repeat, ipu_infeed_queue.IPUInfeedQueue,
IPUOutfeedQueue.enqueue/dequeue in a compiled function,
pipelining_ops.pipeline, and optimizers.CrossReplicaOptimizer /
GradientAccumulationOptimizerV2. pipelining_ops (also ops.pipelining_ops)
has PipelineSchedule and RecomputationMode for the pipeline op and for the
Keras models' set_pipelining_options.
"""

from . import (config, dataset_benchmark, ipu_compiler, ipu_infeed_queue,
               ipu_outfeed_queue, ipu_strategy, keras, loops, ops, optimizers,
               pipelining_ops, scopes, utils)
from .ipu_strategy import IPUStrategy

__all__ = ["config", "dataset_benchmark", "ipu_compiler", "ipu_infeed_queue",
           "ipu_outfeed_queue", "ipu_strategy", "keras", "loops", "ops",
           "optimizers", "pipelining_ops", "scopes", "utils",
           "IPUStrategy"]
