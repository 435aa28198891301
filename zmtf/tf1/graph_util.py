"""``tf.graph_util``: freezing and pruning GraphDefs (see interop/graph_util.py)."""

from zmtf.interop.graph_util import (
    convert_variables_to_constants, extract_sub_graph, remove_training_nodes,
)

__all__ = ["convert_variables_to_constants", "extract_sub_graph", "remove_training_nodes"]
