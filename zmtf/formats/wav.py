"""WAV encoding, written by hand (pure: samples in, bytes out) as TF's EncodeAudioAsS16LEWav
writes it: a 44-byte RIFF header and 16-bit little-endian PCM, byte for byte the same, so
audio summaries match TF's."""

from __future__ import annotations

import struct

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
    header = (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE"
              + b"fmt " + struct.pack("<IHHIIHH", 16, 1, channels, sample_rate,
                                      sample_rate * channels * 2, channels * 2, 16)
              + b"data" + struct.pack("<I", len(data)))
    return header + data
