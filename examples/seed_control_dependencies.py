"""Seed chapter, "Control dependencies": x and y wait for a and b."""

import zmtf as tf

a = tf.constant(1.0)
b = a + 2.0

with tf.control_dependencies([a, b]):
    x = tf.constant(3.0)
    y = tf.constant(4.0)

z = x + y

with tf.Session() as sess:
    print(sess.run(z))  # 7.0
