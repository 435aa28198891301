"""TF's ``RewriterConfig`` (rewriter_config.proto): Grappler's switches, which TF1 scripts set
as ``config.graph_options.rewrite_options.arithmetic_optimization = RewriterConfig.OFF``.

zmtf runs no Grappler, so none of these change anything; the message exists so such scripts
run, and so the bytes of a ConfigProto that sets them read and write as TF's do. Fields not
declared here (auto_parallel, scoped_allocator_opts, the verifier configs) are kept as
unknown fields, as protobuf keeps any."""

from __future__ import annotations

from zmtf.formats.graph_def_proto import AttrValue
from zmtf.formats.proto_message import Field, Message

_TOGGLE = {0: "DEFAULT", 1: "ON", 2: "OFF", 3: "AGGRESSIVE", 4: "EXPERIMENTAL_MLIR",
           5: "EXPERIMENTAL_BOTH"}


def _toggle(number: int, name: str) -> Field:
    return Field(number, name, "enum", names=_TOGGLE, enum="Toggle")


class RewriterConfig(Message):
    """Grappler's settings: accepted and recorded; zmtf rewrites no graph by them."""

    DEFAULT, ON, OFF, AGGRESSIVE = 0, 1, 2, 3   # Toggle (the values protobuf's enum also gives)

    class CustomGraphOptimizer(Message):
        FIELDS = (Field(1, "name", "string"),
                  Field(2, "parameter_map", "map", message=AttrValue))

    FIELDS = (
        _toggle(1, "layout_optimizer"), Field(2, "disable_model_pruning", "bool"),
        _toggle(3, "constant_folding"),
        Field(4, "memory_optimization", "enum", enum="MemOptType", names={
            0: "DEFAULT_MEM_OPT", 1: "NO_MEM_OPT", 2: "MANUAL", 3: "HEURISTICS",
            4: "SWAPPING_HEURISTICS", 5: "RECOMPUTATION_HEURISTICS", 6: "SCHEDULING_HEURISTICS"}),
        Field(6, "memory_optimizer_target_node_name_scope", "string"),
        _toggle(7, "arithmetic_optimization"), _toggle(8, "dependency_optimization"),
        _toggle(9, "loop_optimization"), _toggle(10, "function_optimization"),
        _toggle(11, "debug_stripper"),
        Field(12, "meta_optimizer_iterations", "enum", enum="NumIterationsType",
              names={0: "DEFAULT_NUM_ITERS", 1: "ONE", 2: "TWO"}),
        _toggle(13, "shape_optimization"), _toggle(14, "remapping"),
        _toggle(15, "scoped_allocator_optimization"), Field(17, "min_graph_nodes", "int32"),
        _toggle(18, "pin_to_host_optimization"), Field(19, "disable_meta_optimizer", "bool"),
        Field(20, "meta_optimizer_timeout_ms", "int64"),
        Field(21, "fail_on_optimizer_errors", "bool"), _toggle(22, "implementation_selector"),
        _toggle(23, "auto_mixed_precision"), _toggle(24, "common_subgraph_elimination"),
        _toggle(25, "auto_mixed_precision_mkl"),
        Field(26, "experimental_disable_compressed_tensor_optimization", "bool"),
        Field(27, "experimental_disable_folding_quantization_emulation", "bool"),
        _toggle(28, "use_plugin_optimizers"), _toggle(29, "auto_mixed_precision_cpu"),
        _toggle(30, "experimental_conditional_code_motion"),
        _toggle(31, "auto_mixed_precision_onednn_bfloat16"),
        Field(32, "disable_tfg_optimizer", "bool"),
        Field(50, "cpu_layout_conversion", "enum", enum="CpuLayout",
              names={0: "NO_CONVERSION_ON_CPU", 1: "NCHW_TO_NHWC", 2: "NHWC_TO_NCHW"}),
        Field(100, "optimizers", "string", repeated=True),
        Field(200, "custom_optimizers", "message", repeated=True, message=CustomGraphOptimizer),
    )


__all__ = ["RewriterConfig"]
