"""Summary ops: ``tf.summary.scalar``, ``histogram``, ``image``, ``text`` and merging. Their
values are serialized Summary protobufs as uint8 arrays (see formats/summary_proto.py);
they run on the CPU. Names and tags follow TF1's summary scopes: each summary opens a name
scope (``loss``, then ``loss_1``, ...), and the tag is that scope, behind ``family/``."""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.graph import GraphKeys, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape


@op_def("ScalarSummary", "HistogramSummary", "ImageSummary", "TextSummary", "MergeSummary")
def _summary_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.uint8, TensorShape([None]))]


_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")


def _clean_tag(name: str | None) -> str | None:
    """As TF: characters other than letters, digits, ``-/_.`` become ``_``; no leading ``/``."""
    return None if name is None else _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")


@contextmanager
def _summary_scope(name: str, family: str | None) -> Iterator[tuple[str, str]]:
    """Open TF1's summary name scope on the CPU; yields (tag, scope), scope ending with '/'."""
    graph = get_default_graph()
    name, family = _clean_tag(name) or "summary", _clean_tag(family)
    with graph.name_scope(name if family is None else f"{family}/{name}") as scope:
        tag = scope.rstrip("/") if family is None else f"{family}/{scope.rstrip('/')}"
        with graph.device("/cpu:0"):
            yield tag, scope


def _collect(summary: Tensor, collections: Any) -> Tensor:
    for key in [GraphKeys.SUMMARIES] if collections is None else collections:
        get_default_graph().add_to_collection(key, summary)
    return summary


def scalar(name: str, tensor: Any, collections: Any = None, family: Any = None) -> Tensor:
    """A Summary with ``tensor`` (a scalar) as ``simple_value``, added to ``collections``
    (default ``tf.GraphKeys.SUMMARIES``, which ``merge_all`` merges)."""
    with _summary_scope(name, family) as (tag, scope):
        value = convert_to_tensor(tensor)
        if value.shape.ndims not in (None, 0):
            raise ValueError(f"tf.summary.scalar '{name}' needs a scalar, got shape {value.shape}")
        out = apply_op("ScalarSummary", [value], {"tag": tag}, name=scope).outputs[0]
    return _collect(out, collections)


def histogram(name: str, values: Any, collections: Any = None, family: Any = None) -> Tensor:
    """A Summary with a histogram of ``values`` (any shape) in TF's default buckets; a NaN or
    infinity among them fails the run with InvalidArgumentError, as in TF."""
    with _summary_scope(name, family) as (tag, scope):
        value = convert_to_tensor(values)
        if value.dtype == dtypes.bool_:
            raise TypeError(f"tf.summary.histogram '{name}' takes numbers, not bool; "
                            f"cast it first (tf.cast(values, tf.float32))")
        out = apply_op("HistogramSummary", [value], {"tag": tag}, name=scope).outputs[0]
    return _collect(out, collections)


_IMAGE_DTYPES = (dtypes.uint8, dtypes.float16, dtypes.float32, dtypes.float64)


def image(name: str, tensor: Any, max_outputs: int = 3, collections: Any = None,
          family: Any = None) -> Tensor:
    """A Summary with PNGs of the first ``max_outputs`` images of ``tensor``, a 4-D
    ``[batch, height, width, channels]`` uint8 or float tensor with 1 (grey), 3 (RGB) or 4
    (RGBA) channels. Floats are scaled per image as TF does: with no negative value the
    largest becomes 255; otherwise 0.0 maps to 128 and the largest magnitude to 1 or 255.
    Tags are ``name/image/0``, ``name/image/1``, ... (``name/image`` when max_outputs is 1)."""
    with _summary_scope(name, family) as (tag, scope):
        value = convert_to_tensor(tensor)
        if value.dtype not in _IMAGE_DTYPES:
            raise TypeError(f"tf.summary.image '{name}' takes uint8, float16, float32 or float64 "
                            f"images, not {value.dtype.name}; tf.cast the tensor first")
        shape = value.shape
        if shape.ndims is not None and (shape.ndims != 4 or shape[3] not in (None, 1, 3, 4)):
            raise ValueError(f"tf.summary.image '{name}' needs a 4-D [batch, height, width, "
                             f"channels] tensor with 1, 3 or 4 channels, got shape {shape}")
        if int(max_outputs) < 1:
            raise ValueError(f"tf.summary.image '{name}': max_outputs must be at least 1, "
                             f"got {max_outputs}")
        attrs = {"tag": tag, "max_images": int(max_outputs)}
        out = apply_op("ImageSummary", [value], attrs, name=scope).outputs[0]
    return _collect(out, collections)


def text(name: str, tensor: Any, collections: Any = None) -> Tensor:
    """A Summary for TensorBoard's text plugin. zmtf has no string tensors, so ``tensor`` is
    the text itself: a Python str (or bytes), or a (nested) list or numpy array of them."""
    if isinstance(tensor, Tensor):
        raise TypeError(f"tf.summary.text '{name}': zmtf has no string tensors; pass the text "
                        f"as a Python str or a list of str")
    array = np.array(tensor, dtype=object)
    strings = [s.decode() if isinstance(s, bytes) else s for s in array.reshape(-1).tolist()]
    if not all(isinstance(s, str) for s in strings):
        raise TypeError(f"tf.summary.text '{name}' takes str or bytes, got {tensor!r:.80}")
    with _summary_scope(name, None) as (tag, scope):
        attrs = {"tag": tag, "strings": strings, "shape": list(array.shape)}
        out = apply_op("TextSummary", [], attrs, name=scope).outputs[0]
    return _collect(out, collections)


def merge(inputs: list[Any], collections: Any = None, name: str | None = None) -> Tensor:
    """One Summary holding every value of ``inputs`` (summary op outputs)."""
    graph = get_default_graph()
    with graph.device("/cpu:0"):
        out = apply_op("MergeSummary", [convert_to_tensor(t) for t in inputs], name=name or "Merge").outputs[0]
    for key in collections or []:
        graph.add_to_collection(key, out)
    return out


def merge_all(key: str = GraphKeys.SUMMARIES, scope: Any = None, name: str | None = None) -> Tensor | None:
    """``merge`` of every summary in collection ``key`` (None when there is none)."""
    summaries = get_default_graph().get_collection(key, scope)
    return merge(summaries, name=name) if summaries else None
