"""V2 checkpoint tensors larger than the 1 MiB piece the writer and reader CRC at a time:
they round trip, and a flipped byte deep inside one is a DataLossError naming it."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf
from zmtf.formats.crc32c import crc32c, unmask
from zmtf.training.tensor_bundle import BundleReader, write_bundle

VALUES = {"big": np.random.default_rng(7).standard_normal(700_001),          # 5.6 MB, odd
          "small": np.arange(5, dtype=np.int32)}


def test_large_tensors_round_trip_and_carry_the_whole_crc(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    write_bundle(prefix, VALUES)
    reader = BundleReader(prefix)
    for key, value in VALUES.items():
        np.testing.assert_array_equal(reader.tensor(key), value)
    data = (tmp_path / "model.ckpt.data-00000-of-00001").read_bytes()
    entry = reader.entries["big"]
    assert entry.size == VALUES["big"].nbytes
    assert unmask(entry.crc32c) == crc32c(data[entry.offset:entry.offset + entry.size])


def test_a_flipped_byte_in_a_late_piece_is_data_loss(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    write_bundle(prefix, VALUES)
    path = tmp_path / "model.ckpt.data-00000-of-00001"
    offset = BundleReader(prefix).entries["big"].offset + 3 * (1 << 20) + 17
    raw = bytearray(path.read_bytes())
    raw[offset] ^= 0x40
    path.write_bytes(bytes(raw))
    with pytest.raises(tf.errors.DataLossError, match="tensor big: checksum does not match"):
        BundleReader(prefix).tensor("big")
    np.testing.assert_array_equal(BundleReader(prefix).tensor("small"), VALUES["small"])
