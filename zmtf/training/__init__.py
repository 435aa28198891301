"""Training machinery built on the graph core: optimizers, gradients, checkpoints, input queues, hooks.

The public `tf.train` namespace is `zmtf/tf1/train.py`; this package is named as TF names
python/training (`zmtf.train` would shadow `tf.train` once a submodule is imported).
"""
