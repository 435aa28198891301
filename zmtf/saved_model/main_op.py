"""``tf.saved_model.main_op``: the op a SavedModel runs after its variables are restored."""

from __future__ import annotations

from zmtf.framework.graph import Operation, get_default_graph
from zmtf.ops.control_flow_ops import group
from zmtf.ops.variables import global_variables_initializer, \
    local_variables_initializer, tables_initializer


def main_op() -> Operation:
    """Initialize the global and local variables and the lookup tables, as TF's does.

    NOTE: run after the restore, it re-initializes the restored variables; to keep them,
    export with ``legacy_init_op=tf.group(tf.local_variables_initializer(),
    tf.tables_initializer())`` or use ``main_op_with_restore``."""
    return group(global_variables_initializer(), local_variables_initializer(),
                 tables_initializer())


def main_op_with_restore(restore_op_name: str) -> Operation:
    """``main_op()`` after the restore op named ``restore_op_name`` ("save/restore_all")."""
    graph = get_default_graph()
    with graph.control_dependencies([main_op()]):
        return group(graph.as_graph_element(restore_op_name))


__all__ = ["main_op", "main_op_with_restore"]
