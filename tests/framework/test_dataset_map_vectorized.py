"""map(f).batch(n) runs f once per batch when f acts element by element (issue 29): the same
batches as f run on each element, and f stays per element wherever a batch would change what
it computes (a scalar component against a vector one, a reduction, a captured tensor, a
constant result)."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf

X = np.arange(30, dtype=np.float32).reshape(10, 3)
Y = np.arange(10, dtype=np.int64)


def batches(dataset) -> list:
    element = dataset.make_one_shot_iterator().get_next()
    out = []
    with tf.Session() as sess:
        while True:
            try:
                out.append(sess.run(element))
            except tf.errors.OutOfRangeError:
                return out


def per_element(make_dataset, fn, size, drop_remainder=False):
    """The reference: fn on each element in numpy order, then batched by hand."""
    rows = [fn(*row) for row in make_dataset()]
    count = len(rows) // size * size if drop_remainder else len(rows)
    cut = [rows[k:k + size] for k in range(0, count, size)]
    return [tuple(np.stack(column) for column in zip(*group)) for group in cut]


@pytest.mark.parametrize("drop_remainder", [False, True])
def test_an_elementwise_map_runs_per_batch_with_the_per_element_values(drop_remainder):
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).map(
        lambda v, y: (tf.maximum(v * 2.0 - 7.0, 0.0) / 3.0, tf.cast(y, tf.float32) + 0.5))
    batched = dataset.map(lambda v, y: (tf.square(v), -y)).batch(4, drop_remainder)
    assert batched._maps, "the maps stay pending after the batch"
    got = batches(batched)
    expected = per_element(lambda: zip(X, Y), lambda v, y: (
        np.square(np.maximum(v * np.float32(2) - np.float32(7), 0) / np.float32(3)),
        -(np.float32(y) + np.float32(0.5))), 4, drop_remainder)
    assert len(got) == len(expected) == (2 if drop_remainder else 3)
    for (a, b), (ea, eb) in zip(got, expected):
        np.testing.assert_array_equal(a, ea)
        np.testing.assert_array_equal(b, eb)
    assert batched.output_shapes[0].as_list() == [4 if drop_remainder else None, 3]



@pytest.mark.parametrize("case", ["scalar_times_vector", "reduction", "captured", "constant"])
def test_maps_that_a_batch_would_change_stay_per_element(case):
    captured = tf.constant(3.0)
    fn = {"scalar_times_vector": lambda v, y: v * tf.cast(y, tf.float32),
          "reduction": lambda v, y: tf.reduce_sum(v),
          "captured": lambda v, y: v * captured,
          "constant": lambda v, y: (v, tf.constant(1.0))}[case]
    reference = {"scalar_times_vector": lambda v, y: (v * np.float32(y),),
                 "reduction": lambda v, y: (v.sum(),),
                 "captured": lambda v, y: (v * np.float32(3),),
                 "constant": lambda v, y: (v, np.float32(1))}[case]
    batched = tf.data.Dataset.from_tensor_slices((X, Y)).map(fn).batch(4)
    assert not batched._maps, "the map became a per-element stage"
    got = [b if isinstance(b, tuple) else (b,) for b in batches(batched)]
    expected = per_element(lambda: zip(X, Y), reference, 4)
    for row, expected_row in zip(got, expected, strict=True):
        for a, b in zip(row, expected_row, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6)
