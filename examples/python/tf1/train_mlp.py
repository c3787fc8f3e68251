"""A TF1 training loop on the IPU: a two-layer classifier whose
minimize() runs 50 times per sess.run inside loops.repeat, batches coming
through an IPUInfeedQueue and each step's loss going back through an
IPUOutfeedQueue. Prints the mean loss of each run (it falls) and the
accuracy the trained weights give on the host."""

import numpy as np

import tessera.tf.compat.v1 as tf
from tessera import ipu

tf.disable_v2_behavior()

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 1
cfg.configure_ipu_system()

# Two separable clusters of 8 features.
rng = np.random.default_rng(0)
labels = (np.arange(512) % 2).astype(np.int32)
features = (np.where(labels[:, None] == 1, 1.0, -1.0) * 0.6 +
            0.5 * rng.standard_normal((512, 8))).astype(np.float32)

dataset = tf.data.Dataset.from_tensor_slices((features, labels))
dataset = dataset.batch(32, drop_remainder=True).repeat()
infeed_queue = ipu.ipu_infeed_queue.IPUInfeedQueue(dataset)
outfeed_queue = ipu.ipu_outfeed_queue.IPUOutfeedQueue()

with tf.device("cpu"):
    global_step = tf.train.get_or_create_global_step()


def model(x):
    with tf.variable_scope("mlp", use_resource=True):
        h = tf.layers.dense(x, 16, activation=tf.nn.relu, name="hidden")
        return tf.layers.dense(h, 2, name="logits")


def body(x, y):
    logits = model(x)
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                       logits=logits))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=global_step)
    return outfeed_queue.enqueue({"loss": loss}), train


def my_net():
    return ipu.loops.repeat(50, body, [], infeed_queue)


with ipu.scopes.ipu_scope("/device:IPU:0"):
    run_loop = ipu.ipu_compiler.compile(my_net, inputs=[])
dequeue_outfeed = outfeed_queue.dequeue()

# The same model on the host, to check the trained weights.
with tf.device("cpu"):
    px = tf.placeholder(np.float32, [512, 8], name="x")
    predictions = tf.argmax(model(px), axis=-1)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(infeed_queue.initializer)
    for run in range(3):
        sess.run(run_loop)
        losses = sess.run(dequeue_outfeed)["loss"]
        print("run %d: mean loss %.4f over %d steps" % (run, losses.mean(),
                                                         len(losses)))
    print("global step:", sess.run(global_step))
    predicted = sess.run(predictions, feed_dict={px: features})
    print("host accuracy: %.3f" % (predicted == labels).mean())
