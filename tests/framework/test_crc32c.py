"""CRC-32C: the check value, TF's mask, and the vectorized path for large inputs."""

import numpy as np
import pytest

from zmtf.formats.crc32c import _SMALL, _raw_small, crc32c, mask, masked_crc32c, unmask


def test_check_value_and_mask():
    assert crc32c(b"123456789") == 0xE3069283          # the standard CRC-32C check value
    assert crc32c(b"") == 0
    assert mask(0) == 0xA282EAD8 and masked_crc32c(b"") == 0xA282EAD8
    assert unmask(mask(0xDEADBEEF)) == 0xDEADBEEF


@pytest.mark.parametrize("size", [_SMALL, _SMALL + 1, 3 * _SMALL + 7, 40_000])
def test_large_inputs_match_the_byte_loop(size):
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
    assert crc32c(data) == _raw_small(0xFFFFFFFF, data.tobytes()) ^ 0xFFFFFFFF
    assert crc32c(data.tobytes()) == crc32c(memoryview(data.tobytes()))
