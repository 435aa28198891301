"""``tf.manip``: the TF 1.13 namespace of ``tf.manip.roll`` (the same function as ``tf.roll``)."""

from zmtf.ops.manip_ops import roll

__all__ = ["roll"]
