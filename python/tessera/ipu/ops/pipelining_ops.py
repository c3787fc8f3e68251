"""tensorflow.python.ipu.ops.pipelining_ops for Tessera: the same module
as tessera.ipu.pipelining_ops (the pipeline op, PipelineSchedule,
RecomputationMode, OptimizerFunctionOutput), under the path TensorFlow
programs import it from."""

from ..pipelining_ops import *  # noqa: F401,F403
from ..pipelining_ops import __all__  # noqa: F401
