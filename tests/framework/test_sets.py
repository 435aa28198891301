"""tf.sets over dense tensors and SparseTensors: results against Python sets row by row,
TF's output layout (ascending rows, dense_shape's last dim the largest set), the operand
flip for sparse-dense, set_size, validate_indices, and TF's errors."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import run_fetches as run
from zmtf.tf1.errors import InvalidArgumentError

rng = np.random.default_rng(4)
A = rng.integers(0, 6, size=(2, 3, 4)).astype(np.int64)
B = rng.integers(0, 6, size=(2, 3, 5)).astype(np.int64)
SPARSE = tf.SparseTensorValue([[0, 0, 0], [0, 0, 2], [0, 1, 1], [1, 1, 0]],
                              np.array([5, 1, 4, 1], np.int64), [2, 2, 4])


def rows_of(value):
    """{group position: the list of its elements} of a SparseTensorValue, checking the layout."""
    rows = {}
    for index, element in zip(value.indices.tolist(), value.values.tolist()):
        members = rows.setdefault(tuple(index[:-1]), [])
        assert index[-1] == len(members)          # positions 0, 1, ... in each row
        members.append(element)
    assert all(m == sorted(m) for m in rows.values())
    widest = max((len(m) for m in rows.values()), default=0)
    assert value.dense_shape[-1] == widest
    return rows


@pytest.mark.parametrize("name,combine", [
    ("set_intersection", lambda x, y: x & y), ("set_union", lambda x, y: x | y),
    ("set_difference", lambda x, y: x - y), ("union", lambda x, y: x | y),
])
def test_dense_set_operations_match_python_sets(name, combine):
    result = getattr(tf.sets, name)(A, B)
    assert result.indices.shape.as_list() == [None, 3] and result.values.dtype == tf.int64
    rows = rows_of(run(result))
    for position in np.ndindex(A.shape[:-1]):
        expected = sorted(combine(set(A[position].tolist()), set(B[position].tolist())))
        assert rows.get(position, []) == expected


def test_b_minus_a_and_empty_results():
    rows = rows_of(run(tf.sets.set_difference(A, B, aminusb=False)))
    for position in np.ndindex(A.shape[:-1]):
        assert rows.get(position, []) == sorted(set(B[position].tolist()) - set(A[position].tolist()))
    empty = run(tf.sets.set_intersection(np.array([[1, 2]]), np.array([[3, 4]])))
    assert empty.indices.shape == (0, 2) and empty.dense_shape.tolist() == [1, 0]


def test_sparse_operands_and_the_flip():
    # values recorded from TF 2.21 for these inputs
    dense = np.array([[[1, 2, 2], [3, 4, 5]], [[7, 8, 9], [1, 1, 1]]], np.int64)
    both = run(tf.sets.set_intersection(dense, SPARSE))
    assert both.indices.tolist() == [[0, 0, 0], [0, 1, 0], [1, 1, 0]]
    assert both.values.tolist() == [1, 4, 1] and both.dense_shape.tolist() == [2, 2, 1]
    flipped = run(tf.sets.set_difference(SPARSE, dense))     # sparse - dense, built as b-a
    assert flipped.indices.tolist() == [[0, 0, 0]] and flipped.values.tolist() == [5]
    union = run(tf.sets.union(SPARSE, SPARSE))
    assert union.values.tolist() == [1, 5, 4, 1] and union.dense_shape.tolist() == [2, 2, 2]


def test_strings():
    out = run(tf.sets.set_union(np.array([["a", "b"], ["c", "a"]]), np.array([["b", "z"], ["q", "q"]])))
    assert out.values.tolist() == [b"a", b"b", b"z", b"a", b"c", b"q"]


def test_set_size_and_validate_indices():
    size = tf.sets.set_size(SPARSE)
    assert size.dtype == tf.int32
    assert run(size).tolist() == [[2, 1], [0, 1]]
    unordered = tf.SparseTensorValue([[0, 1, 0], [0, 0, 0]], np.array([5, 1], np.int64), [2, 2, 4])
    with pytest.raises(InvalidArgumentError, match=r"indices\[1\] = \[0, 0, 0\] is out of order"):
        run(tf.sets.set_size(unordered))
    assert run(tf.sets.size(unordered, validate_indices=False)).tolist() == [[1, 1], [0, 0]]


def test_build_errors_as_tf():
    with pytest.raises(TypeError, match="Expected `SparseTensor`"):
        tf.sets.set_size(A)
    with pytest.raises(TypeError, match="Types don't match"):
        tf.sets.set_union(A, B.astype(np.int32))
    with pytest.raises(TypeError, match="invalid dtype"):
        tf.sets.set_union(A.astype(np.float32), B.astype(np.float32))
    with pytest.raises(ValueError, match="must agree"):
        tf.sets.set_union(A, B[:1])
    with pytest.raises(ValueError, match="at least rank 2"):
        tf.sets.set_union(np.array([1, 2]), np.array([2]))


def test_run_time_shape_mismatch():
    x = tf.placeholder(tf.int64, [None, 3])
    with pytest.raises(InvalidArgumentError, match="must agree"):
        run(tf.sets.set_union(x, np.ones((2, 3), np.int64)), {x: np.ones((3, 3), np.int64)})
