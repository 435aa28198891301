"""WAV encoding through the standard library's ``wave``, as TF's EncodeAudioAsS16LEWav
writes it: a 44-byte RIFF header and 16-bit little-endian PCM, byte for byte the same, so
audio summaries match TF's. What is TF's own is the float to int16 conversion."""

from __future__ import annotations

import io
import wave

import numpy as np

_MAX_DATA_BYTES = 0xFFFFFFFF - 36   # RIFF sizes are 32-bit


def float_to_int16_samples(samples: np.ndarray) -> np.ndarray:
    """TF's FloatToInt16Sample: round(x * 32768) clamped to int16; NaN becomes 0 (TF's cast of
    NaN, seen on x86)."""
    scaled = np.round(np.asarray(samples, np.float32) * np.float32(32768.0))
    scaled = np.where(np.isnan(scaled), np.float32(0), scaled)
    return np.clip(scaled, -32768, 32767).astype("<i2")


def encode_wav(samples: np.ndarray, sample_rate: int) -> bytes:
    """A mono or multi-channel WAV file of float ``samples`` shaped ``[frames, channels]`` (in
    [-1, 1]; outside is clipped) at ``sample_rate`` Hz (a positive int)."""
    frames, channels = samples.shape
    data = float_to_int16_samples(samples).tobytes()
    if len(data) > _MAX_DATA_BYTES:
        raise ValueError(f"{frames} frames of {channels} channels do not fit in a WAV file "
                         f"(over 4 GiB); write shorter clips")
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(channels)
        writer.setsampwidth(2)
        writer.setframerate(sample_rate)
        writer.setnframes(frames)   # the header is written once, with the right sizes
        writer.writeframesraw(data)
    return out.getvalue()
