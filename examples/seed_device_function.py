"""Seed chapter, "Dynamic placement": a device function pins variables to CPU, the rest to GPU.

On a machine without a GPU, TensorFlow (and zmtf) refuse the "/gpu:0" pins; the book's
code then needs allow_soft_placement, which this script turns on only in that case.
"""

import zmtf as tf


def variables_on_cpu(op):
    if op.type == "Variable":
        return "/cpu:0"
    else:
        return "/gpu:0"


with tf.device(variables_on_cpu):
    a = tf.Variable(3.0)
    b = tf.constant(4.0)
    c = a * b

config = tf.ConfigProto()
config.log_device_placement = True
config.allow_soft_placement = not tf.test.is_gpu_available()
with tf.Session(config=config) as sess:
    sess.run(a.initializer)
    print(sess.run(c))  # 12.0
