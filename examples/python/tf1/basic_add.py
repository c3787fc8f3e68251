"""The TF1 tutorial's first program (tutorial_basic.py's shape): three
placeholders on the CPU, a sum built under ipu_scope, sess.run with a
feed_dict. Prints [3. 8.]. Only the imports differ from TensorFlow's."""

import numpy as np

import tessera.tf.compat.v1 as tf   # was: import tensorflow.compat.v1 as tf
from tessera import ipu             # was: from tensorflow.python import ipu

tf.disable_v2_behavior()

# Configure arguments for targeting the IPU
cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 1
cfg.configure_ipu_system()

with tf.device("cpu"):
    pa = tf.placeholder(np.float32, [2], name="a")
    pb = tf.placeholder(np.float32, [2], name="b")
    pc = tf.placeholder(np.float32, [2], name="c")


def basic_graph(pa, pb, pc):
    # Do basic addition with tensors
    o1 = pa + pb
    o2 = pa + pc
    simple_graph_output = o1 + o2
    return simple_graph_output


with ipu.scopes.ipu_scope("/device:IPU:0"):
    result = basic_graph(pa, pb, pc)

with tf.Session() as sess:
    # Run the graph through the session feeding it an arbitrary dictionary
    result = sess.run(result,
                      feed_dict={pa: [1., 1.], pb: [0., 1.], pc: [1., 5.]})
    print(result)
