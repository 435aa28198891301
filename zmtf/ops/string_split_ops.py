"""``tf.string_split`` and ``tf.strings.split``: each string of a vector split into tokens,
as a SparseTensor of tf.string ([rows, longest row], indices [row, position]), as TF1.

StringSplit (``tf.string_split``) splits at ANY byte of ``delimiter`` (every byte when it
is empty) and drops empty tokens unless ``skip_empty=False``; StringSplitV2
(``tf.strings.split``) follows Python's ``bytes.split``: ``sep=None`` splits at runs of
ASCII whitespace, a ``sep`` splits at that exact string, ``maxsplit`` caps the splits.
An empty string gives no tokens from StringSplit and one empty token from a StringSplitV2
with a ``sep``, exactly as TF.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.sparse_tensor import SparseTensor
from zmtf.framework.tensor_shape import TensorShape


# SparseToDense densifies the split with default_value="" (TF's idiom for padded tokens)
STRING_INPUT_OPS.update({"StringSplit", "StringSplitV2", "SparseToDense"})


def _split_outputs_of(op_type: str) -> Any:
    def outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
        source, separator = inputs
        for tensor, rank, what in ((source, 1, "input"), (separator, 0, "delimiter")):
            if tensor.dtype != dtypes.string:
                raise TypeError(f"{op_type}: the {what} must be tf.string, got {tensor.dtype.name}")
            if tensor.shape.ndims is not None and tensor.shape.ndims != rank:
                raise ValueError(f"Shape must be rank {rank} but is rank {tensor.shape.ndims} for "
                                 f"'{op_type}' with input shapes: {source.shape}, {separator.shape}.")
        return [(dtypes.int64, TensorShape([None, 2])), (dtypes.string, TensorShape([None])),
                (dtypes.int64, TensorShape([2]))]
    return outputs


op_def("StringSplit")(_split_outputs_of("StringSplit"))
op_def("StringSplitV2")(_split_outputs_of("StringSplitV2"))


def _sparse(op_type: str, source: Any, separator: Any, attrs: dict[str, Any],
            name: str | None) -> SparseTensor:
    with get_default_graph().name_scope(name or "StringSplit"):
        source = convert_to_tensor(source, dtype=dtypes.string)
        separator = convert_to_tensor(separator, dtype=dtypes.string)
        op = apply_op(op_type, [source, separator], attrs, name=op_type)
    result = SparseTensor(*op.outputs)
    result._shape = TensorShape([source.shape[0] if source.shape.ndims == 1 else None, None])
    return result


def string_split(source: Any, sep: Any = None, skip_empty: bool = True, delimiter: Any = None,
                 result_type: str = "SparseTensor", name: str | None = None) -> SparseTensor:
    """``tf.string_split``: split at any byte of ``delimiter`` (TF1's name; ``sep`` is TF 1.13's)."""
    if result_type != "SparseTensor":
        raise ValueError("zmtf has no RaggedTensor: string_split returns a SparseTensor "
                         "(result_type='SparseTensor')")
    if sep is not None and delimiter is not None:
        raise ValueError("sep and delimiter cannot both be set")
    separator = delimiter if delimiter is not None else (sep if sep is not None else " ")
    return _sparse("StringSplit", source, separator, {"skip_empty": bool(skip_empty)}, name)


def strings_split(input: Any = None, sep: Any = None, maxsplit: int = -1,  # noqa: A002 (TF's name)
                  result_type: str = "SparseTensor", source: Any = None,
                  name: str | None = None) -> SparseTensor:
    """``tf.strings.split``: Python's ``bytes.split(sep, maxsplit)`` for each string."""
    if result_type != "SparseTensor":
        raise ValueError("zmtf has no RaggedTensor: tf.strings.split returns a SparseTensor "
                         "(result_type='SparseTensor')")
    if (input is None) == (source is None):
        raise ValueError("tf.strings.split needs exactly one of input and source")
    return _sparse("StringSplitV2", input if input is not None else source,
                   "" if sep is None else sep, {"maxsplit": int(maxsplit)}, name)


__all__ = ["string_split", "strings_split"]
