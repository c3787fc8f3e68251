"""Pipelined training of "Training a model" (its pipelining section's
shape): a four-stage classifier on four IPUs, built with
pipelining_ops.pipeline inside ipu_compiler.compile, micro-batches coming
through an IPUInfeedQueue and each micro-batch's loss going back through
an IPUOutfeedQueue. A run is repeat_count = 2 pipeline steps of
gradient_accumulation_count = 8 micro-batches, the weights updated after
each step. Prints the mean loss of each run (it falls) and the host's
accuracy with the trained weights."""

import numpy as np

import tessera.tf.compat.v1 as tf
from tessera import ipu
from tessera.ipu import pipelining_ops

tf.disable_v2_behavior()

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 4
cfg.configure_ipu_system()

# Two separable clusters of 8 features.
rng = np.random.default_rng(0)
labels = (np.arange(512) % 2).astype(np.int32)
features = (np.where(labels[:, None] == 1, 1.0, -1.0) * 0.6 +
            0.5 * rng.standard_normal((512, 8))).astype(np.float32)

dataset = tf.data.Dataset.from_tensor_slices((features, labels))
dataset = dataset.batch(16, drop_remainder=True).repeat()
infeed_queue = ipu.ipu_infeed_queue.IPUInfeedQueue(dataset)
outfeed_queue = ipu.ipu_outfeed_queue.IPUOutfeedQueue()


def dense(name, x, units, activation=None):
    with tf.variable_scope(name, use_resource=True):
        return tf.layers.dense(x, units, activation=activation, name="dense")


# The stages: each returns the next stage's arguments. The learning rate,
# an argument of the pipeline, is threaded through them to the optimizer.
def stage1(lr, images, labels):
    return lr, dense("stage1", images, 32, tf.nn.relu), labels


def stage2(lr, partial, labels):
    return lr, dense("stage2", partial, 32, tf.nn.relu), labels


def stage3(lr, partial, labels):
    return lr, dense("stage3", partial, 16, tf.nn.relu), labels


def stage4(lr, partial, labels):
    logits = dense("stage4", partial, 2)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))
    return {"lr": lr, "loss": loss}


def optimizer_function(lr, loss):
    optimizer = tf.train.MomentumOptimizer(lr, 0.9)
    return pipelining_ops.OptimizerFunctionOutput(optimizer, loss)


def my_net(lr):
    return pipelining_ops.pipeline(
        computational_stages=[stage1, stage2, stage3, stage4],
        gradient_accumulation_count=8,
        repeat_count=2,
        inputs=[lr],
        infeed_queue=infeed_queue,
        outfeed_queue=outfeed_queue,
        optimizer_function=optimizer_function,
        pipeline_schedule=pipelining_ops.PipelineSchedule.Grouped,
        name="Pipeline")


with ipu.scopes.ipu_scope("/device:IPU:0"):
    run_pipeline = ipu.ipu_compiler.compile(my_net, inputs=[0.05])
dequeue_outfeed = outfeed_queue.dequeue()

# The trained stages on the host, to check the weights.
with tf.device("cpu"):
    px = tf.placeholder(np.float32, [512, 8], name="x")
    h = px
    for name, units in (("stage1", 32), ("stage2", 32), ("stage3", 16)):
        with tf.variable_scope(name, use_resource=True, reuse=True):
            h = tf.layers.dense(h, units, activation=tf.nn.relu, name="dense")
    with tf.variable_scope("stage4", use_resource=True, reuse=True):
        predictions = tf.argmax(tf.layers.dense(h, 2, name="dense"), axis=-1)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(infeed_queue.initializer)
    for run in range(3):
        sess.run(run_pipeline)
        losses = sess.run(dequeue_outfeed)["loss"]
        print("run %d: %d micro-batches, mean loss %.4f"
              % (run, len(losses), losses.mean()))
    predicted = sess.run(predictions, feed_dict={px: features})
    print("host accuracy: %.3f" % (predicted == labels).mean())
