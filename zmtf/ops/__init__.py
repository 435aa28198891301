"""Public op constructors, a few lines each; importing this package fills the op table."""

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
