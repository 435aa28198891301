"""CRC-32C: the check values, TF's mask, and every buffer kind zmtf hands it (bytes,
bytearray, memoryview, ndarray of any dtype) giving the same CRC."""

import numpy as np

from zmtf.formats import crc32c as crc_module
from zmtf.formats.crc32c import crc32c, mask, masked_crc32c, unmask


def test_check_values_and_mask():
    assert crc32c(b"123456789") == 0xE3069283          # the standard CRC-32C check value
    assert crc32c(bytes(32)) == 0x8A9136AA               # RFC 3720 B.4
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    assert crc32c(b"") == 0
    assert mask(0) == 0xA282EAD8 and masked_crc32c(b"") == 0xA282EAD8
    assert unmask(mask(0xDEADBEEF)) == 0xDEADBEEF


def test_every_buffer_kind_gives_the_same_crc():
    data = np.random.default_rng(3).integers(0, 256, 100_003, dtype=np.uint8)
    raw = data.tobytes()
    want = crc32c(raw)
    assert crc32c(bytearray(raw)) == want and crc32c(memoryview(raw)) == want
    assert crc32c(data) == want and crc32c(memoryview(bytearray(raw))) == want
    floats = np.arange(1000, dtype=np.float32)
    assert crc32c(floats) == crc32c(floats.tobytes())


def test_the_library_computes_it():
    """One implementation: the module carries no tables or loops of its own."""
    assert not hasattr(crc_module, "_TABLE") and not hasattr(crc_module, "_raw_small")
    data = bytes(range(256)) * 4096
    import google_crc32c
    assert crc32c(data) == google_crc32c.value(data)
