"""Public op constructors, a few lines each; importing this package fills the op table."""

from zmtf.framework import upper_layers
from zmtf.ops import (  # noqa: F401  (import order fills OP_DEFS)
    array_ops,
    cond_ops,
    constant_op,
    control_flow_ops,
    conv_ops,
    math_ops,
    nn_ops,
    parsing_ops,
    partition_ops,
    random_ops,
    scatter_ops,
    selection_ops,
    state_ops,
    string_ops,
    summary_ops,
    topk_ops,
    while_ops,
)


def _load_all_op_defs() -> None:
    import zmtf.ops.all_ops  # noqa: F401  (imports every op module)


# graph_io.graph_from_dict (framework/) loads the whole op table with this: a graph that came
# over the wire may use ops this process never built
upper_layers.register("load_all_op_defs", _load_all_op_defs)
