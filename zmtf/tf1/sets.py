"""``tf.sets``: set operations over the last axis of dense tensors and SparseTensors, under
their TF1 names and the short TF 1.13+ aliases (``tf.sets.intersection`` ...)."""

from zmtf.ops.set_ops import set_difference, set_intersection, set_size, set_union

difference, intersection, size, union = set_difference, set_intersection, set_size, set_union

__all__ = ["difference", "intersection", "set_difference", "set_intersection", "set_size",
           "set_union", "size", "union"]
