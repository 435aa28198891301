"""``tf.train``: training utilities built on the pure graph layer.

The cluster classes (ClusterSpec, Server) are added to this namespace by ``zmtf/__init__``.
"""

from zmtf.train.device_setter import replica_device_setter

__all__ = ["replica_device_setter"]
