"""The TF1 tutorial's sharding program (tutorial_sharding.py's shape): a
sum split over four IPUs with ipu_shard, compiled with
ipu_compiler.compile. Prints [array([ 4., 14.], dtype=float32)] after the
line naming the 4-IPU device it attached."""

import numpy as np

import tessera.tf.compat.v1 as tf
from tessera import ipu
from tessera.ipu.scopes import ipu_scope

tf.disable_v2_behavior()

NUM_IPUS = 4

# Configure the IPU system
cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = NUM_IPUS
cfg.configure_ipu_system()

# Create the CPU section of the graph
with tf.device("cpu"):
    pa = tf.placeholder(np.float32, [2], name="a")
    pb = tf.placeholder(np.float32, [2], name="b")
    pc = tf.placeholder(np.float32, [2], name="c")
    pd = tf.placeholder(np.float32, [2], name="d")


# Define a trace event
def sharded_graph(pa, pb, pc, pd):
    with ipu.scopes.ipu_shard(0):
        o1 = pa + pb
    with ipu.scopes.ipu_shard(1):
        o2 = pa + pc
    with ipu.scopes.ipu_shard(2):
        o3 = pa + pd
    with ipu.scopes.ipu_shard(3):
        out = o1 + o2 + o3
        return out


# Create the IPU section of the graph
with ipu_scope("/device:IPU:0"):
    result = ipu.ipu_compiler.compile(sharded_graph, [pa, pb, pc, pd])

with tf.Session() as sess:
    result = sess.run(result, feed_dict={pa: [1., 1.], pb: [0., 1.],
                                         pc: [1., 5.], pd: [0., 5.]})
    print(result)
