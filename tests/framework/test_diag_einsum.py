"""tf.einsum and the diagonal family (diag, diag_part, matrix_diag, matrix_diag_part,
matrix_set_diag, matrix_band_part, trace): values against numpy, shapes, errors."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import run_fetches as run
from zmtf.tf1.errors import InvalidArgumentError

rng = np.random.default_rng(7)


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("ij->ji", [(2, 3)]),
    ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("ijk->j", [(2, 3, 4)]),
    ("i,j", [(3,), (2,)]),
    ("i,i->", [(4,), (4,)]),
    ("ba,bc", [(2, 3), (2, 4)]),
    ("ij,jk,kl->li", [(2, 3), (3, 4), (4, 2)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("iij->ji", [(3, 3, 2)]),
]


@pytest.mark.parametrize("equation,shapes", EINSUMS, ids=[e for e, _ in EINSUMS])
def test_einsum_matches_numpy(equation, shapes):
    arrays = [rng.normal(size=s) for s in shapes]
    out = tf.einsum(equation, *arrays)
    expected = np.einsum(equation, *arrays)
    assert out.shape.as_list() == list(expected.shape)
    np.testing.assert_allclose(run(out), expected, rtol=1e-12, atol=1e-12)


def test_einsum_with_unknown_sizes_and_int_operands():
    a = tf.placeholder(tf.float32, [None, 3])
    out = tf.einsum("ij,jk->ik", a, np.ones((3, 2), np.float32))
    assert out.shape.as_list() == [None, 2]
    assert run(out, {a: np.ones((4, 3))}).tolist() == [[3.0, 3.0]] * 4
    ints = run(tf.einsum("ij,jk->ik", np.arange(6).reshape(2, 3), np.arange(6).reshape(3, 2)))
    assert ints.dtype == np.int64
    assert ints.tolist() == (np.arange(6).reshape(2, 3) @ np.arange(6).reshape(3, 2)).tolist()


@pytest.mark.parametrize("equation,message", [
    ("ij,jk", "names 2 operands but 1"),
    ("ij->k", "output label 'k'"),
    ("ij->ii", "output label 'i'"),
    ("i1->i", "not a label"),
    ("...ij->ij", "ellipsis"),
    ("ijk->i", "rank 2"),
    ("ij->i->j", "more than one '->'"),
])
def test_malformed_einsum_equations_fail_when_built(equation, message):
    with pytest.raises(InvalidArgumentError, match=message):
        tf.einsum(equation, np.ones((2, 3)))


def test_einsum_label_sizes_must_agree():
    with pytest.raises(InvalidArgumentError, match="label 'j'.* size 3 .* 4"):
        tf.einsum("ij,jk->ik", np.ones((2, 3)), np.ones((4, 2)))


def test_matrix_diag_family_matches_numpy():
    x = rng.normal(size=(2, 4, 3))
    d = rng.normal(size=(2, 3))
    diag, part, with_diag, lower, band, tr = run([
        tf.matrix_diag(d), tf.matrix_diag_part(x), tf.matrix_set_diag(x, d),
        tf.matrix_band_part(x, -1, 0), tf.matrix_band_part(x, 1, 1), tf.trace(x)])
    np.testing.assert_array_equal(diag, np.stack([np.diag(r) for r in d]))
    np.testing.assert_array_equal(part, np.diagonal(x, axis1=1, axis2=2))
    expected = x.copy()
    expected[:, np.arange(3), np.arange(3)] = d
    np.testing.assert_array_equal(with_diag, expected)
    np.testing.assert_array_equal(lower, np.tril(x))
    np.testing.assert_array_equal(band, np.triu(np.tril(x, 1), -1))
    np.testing.assert_allclose(tr, np.trace(x, axis1=1, axis2=2))


def test_diag_and_diag_part_of_rank_2():
    d = np.arange(1, 7, dtype=np.int32).reshape(2, 3)
    full = tf.diag(d)
    assert full.shape.as_list() == [2, 3, 2, 3]
    full_value, back = run([full, tf.diag_part(full)])
    np.testing.assert_array_equal(full_value.reshape(6, 6), np.diag(d.reshape(-1)))
    assert back.dtype == np.int32 and back.tolist() == d.tolist()


def test_diag_shapes_with_unknown_dims_and_empty():
    x = tf.placeholder(tf.float32, [None, 5, 3])
    assert tf.matrix_diag_part(x).shape.as_list() == [None, 3]
    assert tf.trace(x).shape.as_list() == [None]
    assert run(tf.matrix_diag(np.zeros((0, 2)))).shape == (0, 2, 2)
    assert run(tf.matrix_diag_part(np.zeros((3, 0, 4)))).shape == (3, 0)


@pytest.mark.parametrize("build,message", [
    (lambda: tf.matrix_diag_part(np.ones(3)), "rank >= 2"),
    (lambda: tf.matrix_diag(5.0), "rank >= 1"),
    (lambda: tf.matrix_set_diag(np.ones((2, 3)), np.ones(3)), r"diagonal must have shape \(2,\)"),
    (lambda: tf.diag_part(np.ones((2, 3))), "even rank"),
    (lambda: tf.matrix_band_part(np.ones((2, 2)), [1], 0), "num_lower must be an integer scalar"),
])
def test_static_shape_errors_name_the_fix(build, message):
    with pytest.raises(InvalidArgumentError, match=message):
        build()


def test_run_time_shape_errors():
    x = tf.placeholder(tf.float32)
    with pytest.raises(InvalidArgumentError, match="at least 2-D"):
        run(tf.matrix_diag_part(x), {x: np.ones(3)})
    with pytest.raises(InvalidArgumentError, match="num_lower .3. must be <= 2 rows"):
        run(tf.matrix_band_part(np.ones((2, 2)), 3, 0))
