"""Whole-file ops and web-safe base64: ``tf.read_file``, ``tf.write_file``,
``tf.matching_files``, ``tf.train.match_filenames_once``, ``tf.encode_base64`` and
``tf.decode_base64``. The files are read and written by the kernels, on the device the op
is placed on (a worker's own disk in a cluster), when the op runs."""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import not_differentiable
from zmtf.framework.graph import GraphKeys, Operation, Tensor, get_default_graph
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.ops.string_ops import _string_input
from zmtf.framework.tensor_shape import TensorShape
from zmtf.ops.variables import Variable

STRING_INPUT_OPS.update({"ReadFile", "WriteFile", "MatchingFiles", "EncodeBase64", "DecodeBase64",
                         "Assign"})   # Assign: match_filenames_once's variable holds strings


def _scalar_string(value: Any, what: str, op_type: str) -> Tensor:
    tensor = _string_input(value, op_type)
    if tensor.shape.ndims not in (None, 0):
        raise ValueError(f"{op_type}: {what} must be a scalar, got shape {tensor.shape} "
                         f"({tensor.name})")
    return tensor


@op_def("ReadFile", stateful=True)   # stateful: the file may change between steps
def _read_file_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.string, TensorShape([]))]


@op_def("WriteFile", stateful=True)
def _write_file_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return []


@op_def("MatchingFiles", stateful=True)
def _matching_files_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.string, TensorShape([None]))]


@op_def("EncodeBase64", "DecodeBase64")
def _base64_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.string, inputs[0].shape)]


not_differentiable("ReadFile", "WriteFile", "MatchingFiles", "EncodeBase64", "DecodeBase64")


def read_file(filename: Any, name: str | None = None) -> Tensor:
    """The bytes of the file ``filename`` (a scalar string), read when the op runs."""
    path = _scalar_string(filename, "filename", "ReadFile")
    return apply_op("ReadFile", [path], name=name or "ReadFile").outputs[0]


def write_file(filename: Any, contents: Any, name: str | None = None) -> Operation:
    """An op writing ``contents`` (a scalar string) to ``filename``, making its directory."""
    path = _scalar_string(filename, "filename", "WriteFile")
    data = _scalar_string(contents, "contents", "WriteFile")
    return apply_op("WriteFile", [path, data], name=name or "WriteFile")


def matching_files(pattern: Any, name: str | None = None) -> Tensor:
    """The sorted paths matching the glob ``pattern`` (a string or a vector of them; a path
    matching two patterns is listed twice, as in TF)."""
    patterns = _string_input(pattern, "MatchingFiles")
    if patterns.shape.ndims is not None and patterns.shape.ndims > 1:
        raise ValueError(f"MatchingFiles: pattern must be a scalar or a vector, got shape "
                         f"{patterns.shape}")
    return apply_op("MatchingFiles", [patterns], name=name or "MatchingFiles").outputs[0]


def match_filenames_once(pattern: Any, name: str | None = None) -> Variable:
    """A local variable ("matching_filenames") holding matching_files(pattern) as of
    ``tf.local_variables_initializer()``: the file list is taken once."""
    with get_default_graph().name_scope(name or "matching_filenames") as scope:
        return Variable(lambda: matching_files(pattern), trainable=False, name=scope,
                        validate_shape=False, collections=[GraphKeys.LOCAL_VARIABLES])


def encode_base64(input: Any, pad: bool = False, name: str | None = None) -> Tensor:  # noqa: A002
    """Web-safe base64 ('-' and '_' for '+' and '/') of each string; '=' padding if ``pad``."""
    strings = _string_input(input, "EncodeBase64")
    return apply_op("EncodeBase64", [strings], {"pad": bool(pad)},
                    name=name or "EncodeBase64").outputs[0]


def decode_base64(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The bytes each web-safe base64 string encodes (padding optional)."""
    strings = _string_input(input, "DecodeBase64")
    return apply_op("DecodeBase64", [strings], name=name or "DecodeBase64").outputs[0]
