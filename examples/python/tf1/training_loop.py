"""The training-loop program of "Training a model" (perf_training_example's
shape): a dataset fed through an IPUInfeedQueue to a loops.repeat loop
compiled with ipu_compiler.compile, results sent back through an
IPUOutfeedQueue. Prints a dict of two arrays: d1 = x1 + x2 and
d2 = x1 - x2 for each of the 10 iterations."""

import tessera.tf.compat.v1 as tf
from tessera import ipu

tf.disable_v2_behavior()

# Configure the IPU system
cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 1
cfg.configure_ipu_system()

# Create a dataset for the model
dataset = tf.data.Dataset.from_tensors(tf.constant(1.0, shape=[800]))
dataset = dataset.map(lambda x: (x, x))
dataset = dataset.repeat()

# The host side queues
infeed_queue = ipu.ipu_infeed_queue.IPUInfeedQueue(dataset)
outfeed_queue = ipu.ipu_outfeed_queue.IPUOutfeedQueue()


# The device side main
def body(x1, x2):
    d1 = x1 + x2
    d2 = x1 - x2
    outfeed = outfeed_queue.enqueue({'d1': d1, 'd2': d2})
    return outfeed


def my_net():
    r = ipu.loops.repeat(10, body, [], infeed_queue)
    return r


with ipu.scopes.ipu_scope('/device:IPU:0'):
    run_loop = ipu.ipu_compiler.compile(my_net, inputs=[])

# The outfeed dequeue has to happen after the outfeed enqueue
dequeue_outfeed = outfeed_queue.dequeue()

with tf.Session() as sess:
    sess.run(infeed_queue.initializer)
    sess.run(run_loop)
    result = sess.run(dequeue_outfeed)
    print(result)
