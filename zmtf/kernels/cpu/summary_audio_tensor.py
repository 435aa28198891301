"""AudioSummaryV2 and TensorSummaryV2 kernels, as TF's summary_audio_op.cc and
summary_tensor_op.cc: each returns a serialized Summary as a 1-D uint8 array."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.formats.summary_proto import audio_summary, tensor_content_proto, tensor_summary
from zmtf.formats.wav import encode_wav
from zmtf.kernels.registry import register

_UINT32_MAX = 0xFFFFFFFF


def _as_output(encoded: bytes) -> list:
    return [np.frombuffer(encoded, np.uint8).copy()]


def _sample_rate(value: Any, where: str) -> tuple[float, int]:
    """The float rate (written as is) and TF's ``lrintf`` of it for the WAV header (0 -> 1)."""
    rate = np.asarray(value, np.float32)
    if rate.size != 1:
        raise InvalidArgumentError(f"{where}: sample_rate must be rank-0 or contain a single "
                                   f"value, got shape {list(rate.shape)}")
    rate = rate.reshape(())
    if not rate > 0:
        raise InvalidArgumentError(f"{where}: sample_rate must be > 0, got {float(rate)}")
    rounded = max(int(np.rint(rate)), 1)
    return float(rate), rounded


@register("AudioSummaryV2")
def audio(ctx: Any, inputs: list, attrs: dict) -> list:
    tensor, tag, max_outputs = np.asarray(inputs[0], np.float32), attrs["tag"], attrs["max_outputs"]
    where = f"tf.summary.audio '{tag}' (node '{attrs['_node_name']}')"
    rate, rate_in_header = _sample_rate(inputs[1], where)
    if tensor.ndim not in (2, 3):
        raise InvalidArgumentError(f"{where}: Tensor must be 3-D or 2-D, got: "
                                   f"{list(tensor.shape)}")
    clips = tensor if tensor.ndim == 3 else tensor[:, :, None]
    batch, frames, channels = clips.shape
    if batch and not channels:
        raise InvalidArgumentError(f"{where}: num_channels must be > 0; the clips have shape "
                                   f"{list(tensor.shape)}")
    if rate_in_header * channels * 2 > _UINT32_MAX:
        raise InvalidArgumentError(f"{where}: sample_rate {rate} with {channels} channels "
                                   f"overflows the WAV header's 32-bit byte rate")
    encoded = []
    for i in range(min(max_outputs, batch)):
        # the tag depends on the number of clips asked for, not on the number written
        value_tag = f"{tag}/audio/{i}" if max_outputs > 1 else f"{tag}/audio"
        wav = encode_wav(clips[i], rate_in_header)
        encoded.append(audio_summary(value_tag, rate, channels, frames, wav))
    return _as_output(b"".join(encoded))


@register("TensorSummaryV2")
def tensor(ctx: Any, inputs: list, attrs: dict) -> list:
    proto = tensor_content_proto(np.asarray(inputs[0]))
    return _as_output(tensor_summary(attrs["tag"], proto, bytes(attrs["summary_metadata"])))
