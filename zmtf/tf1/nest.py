"""``tf.nest``: flatten, pack_sequence_as, map_structure, assert_same_structure, is_nested
(zmtf.framework.nest, which tf.nn's RNNs use for their states)."""

from zmtf.framework.nest import (
    assert_same_structure, flatten, is_nested, is_sequence, map_structure, pack_sequence_as,
)

__all__ = ["assert_same_structure", "flatten", "is_nested", "is_sequence", "map_structure",
           "pack_sequence_as"]
