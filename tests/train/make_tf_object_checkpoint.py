"""Writes the TF object-based checkpoint that test_checkpoint_objects.py restores: run ONCE by
hand with TensorFlow (``/work/venv-tf/bin/python tests/train/make_tf_object_checkpoint.py``;
made with TF 2.21, ``tf.compat.v1`` graph mode); the suite never runs it.

The graph: v, x (float32[2]), w (int32), u (float32[1,1]); one AdamOptimizer(0.1) step on
sum(v*v) + sum(x); then ``Checkpoint(v=v, d={"w": w, "a": u}, l=[w, x], inner=Checkpoint(u=u),
optimizer=opt).save(FOLDER + "/ckpt")``, so the checkpoint is ``ckpt-1``.
"""

import os
import shutil

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tf_object_checkpoint")

if __name__ == "__main__":
    import tensorflow.compat.v1 as tf1

    tf1.disable_eager_execution()
    shutil.rmtree(FOLDER, ignore_errors=True)
    os.makedirs(FOLDER)
    with tf1.Graph().as_default():
        v = tf1.get_variable("v", initializer=[1.0, 2.0])
        w = tf1.Variable(3, name="w")
        u = tf1.Variable([[5.0]], name="u")
        x = tf1.get_variable("x", initializer=[0.5, 0.25])
        opt = tf1.train.AdamOptimizer(0.1)
        train = opt.minimize(tf1.reduce_sum(v * v) + tf1.reduce_sum(x))
        ckpt = tf1.train.Checkpoint(v=v, d={"w": w, "a": u}, l=[w, x],
                                    inner=tf1.train.Checkpoint(u=u), optimizer=opt)
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            sess.run(train)
            print(ckpt.save(os.path.join(FOLDER, "ckpt"), session=sess))
