"""``tf.summary.audio`` and ``tf.summary.tensor_summary``: TF1's AudioSummaryV2 and
TensorSummaryV2, with the same name scopes, tags and collections as the other summaries
(summary_ops.py). Their values are serialized Summary protobufs as uint8 arrays."""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.summary_ops import _collect, _summary_scope
from zmtf.formats.summary_proto import summary_metadata as _summary_metadata
from zmtf.framework.tensor_shape import TensorShape


@op_def("AudioSummaryV2", "TensorSummaryV2")
def _summary_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.uint8, TensorShape([None]))]


def _float32_input(value: Any, op: str, arg: str) -> Tensor:
    """A float32 tensor: Python and numpy values are converted, tensors must already be float32
    (TF's message for a mismatched tensor)."""
    if not isinstance(value, Tensor):
        return convert_to_tensor(value, dtype=dtypes.float32)
    if value.dtype != dtypes.float32:
        raise TypeError(f"Input '{arg}' of '{op}' Op has type {value.dtype.name} that does not "
                        f"match expected type of float32.")
    return value


def audio(name: str, tensor: Any, sample_rate: Any, max_outputs: int = 3, collections: Any = None,
          family: Any = None) -> Tensor:
    """A Summary with a WAV clip (16-bit PCM, as TF's EncodeWav) of each of the first
    ``max_outputs`` items of ``tensor``, a float32 ``[batch, frames]`` or ``[batch, frames,
    channels]`` tensor of samples in [-1, 1], at ``sample_rate`` Hz (a float32 scalar). Tags
    are ``name/audio/0``, ``name/audio/1``, ... (``name/audio`` when max_outputs is 1)."""
    if int(max_outputs) < 1:
        raise ValueError(f"Attr 'max_outputs' of 'AudioSummaryV2' Op passed {max_outputs} less "
                         f"than minimum 1.")
    with _summary_scope(name, family) as (tag, scope):
        value = _float32_input(tensor, "AudioSummaryV2", "tensor")
        rate = _float32_input(sample_rate, "AudioSummaryV2", "sample_rate")
        attrs = {"tag": tag, "max_outputs": int(max_outputs)}
        out = apply_op("AudioSummaryV2", [value, rate], attrs, name=scope).outputs[0]
    return _collect(out, collections)


def _metadata_bytes(summary_metadata: Any, summary_description: str | None,
                    display_name: str | None) -> bytes:
    """The serialized SummaryMetadata: ``summary_metadata`` (anything with SerializeToString,
    e.g. a protobuf SummaryMetadata) with the description and display name merged in."""
    base = b""
    if summary_metadata is not None:
        if not hasattr(summary_metadata, "SerializeToString"):
            raise TypeError(f"summary_metadata must be a SummaryMetadata proto (with "
                            f"SerializeToString), got {type(summary_metadata).__name__}")
        base = bytes(summary_metadata.SerializeToString())
    return base + _summary_metadata(display_name, summary_description)


def tensor_summary(name: str, tensor: Any, summary_description: str | None = None,
                   collections: Any = None, summary_metadata: Any = None, family: Any = None,
                   display_name: str | None = None) -> Tensor:
    """A Summary whose value holds ``tensor`` itself as a TensorProto (``tensor_content``, as
    TF's TensorSummaryV2), with a SummaryMetadata carrying ``summary_description`` and
    ``display_name``. zmtf has no string tensors, so the tensor is numeric or bool."""
    metadata = _metadata_bytes(summary_metadata, summary_description, display_name)
    with _summary_scope(name, family) as (tag, scope):
        value = convert_to_tensor(tensor)
        attrs = {"tag": tag, "summary_metadata": metadata}
        out = apply_op("TensorSummaryV2", [value], attrs, name=scope).outputs[0]
    return _collect(out, collections)
