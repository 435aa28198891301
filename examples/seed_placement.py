"""Seed chapter, "Simple placement" + "Logging placements": a and b pinned to /cpu:0, c unpinned.

Only the import differs from the book's TF1 code. Placement lines go to stderr.
"""

import zmtf as tf

with tf.device("/cpu:0"):
    a = tf.Variable(3.0, name="a")
    b = tf.constant(4.0, name="b")

c = a * b

config = tf.ConfigProto()
config.log_device_placement = True
sess = tf.Session(config=config)
a.initializer.run(session=sess)   # the book writes x.initializer; x is a here
print(sess.run(c))                 # 12.0
sess.close()
