"""Seed chapter, "Operations and kernels" + "Soft placement": an int32 variable pinned to a GPU."""

import zmtf as tf

with tf.device("/gpu:0"):
    i = tf.Variable(3)

try:
    with tf.Session() as sess:
        sess.run(i.initializer)
except tf.errors.InvalidArgumentError as error:
    print("InvalidArgumentError:", str(error).split(" because")[0])

config = tf.ConfigProto()
config.allow_soft_placement = True
sess = tf.Session(config=config)
sess.run(i.initializer)  # the placer runs and falls back to /cpu:0
print(sess.run(i))       # 3
sess.close()
