"""tf.self_adjoint_eig / eigvalsh, tf.svd, tf.cross and the tf.linalg compositions (matvec,
cholesky_solve, matrix_solve_ls / lstsq, pinv, matrix_rank) against numpy identities; TF's
static shapes, dtypes and errors."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import run_fetches as run
from zmtf.tf1.errors import InvalidArgumentError

rng = np.random.default_rng(11)
TALL = rng.normal(size=(2, 5, 3))
WIDE = rng.normal(size=(2, 3, 5))
SYM = (lambda m: m + np.swapaxes(m, -1, -2))(rng.normal(size=(2, 4, 4)))


def test_eigh_diagonalizes_and_reads_the_lower_triangle():
    e, v = tf.self_adjoint_eig(np.tril(SYM) + np.triu(np.full_like(SYM, 50.0), 1))
    assert e.shape.as_list() == [2, 4] and v.shape.as_list() == [2, 4, 4]
    e, v = run([e, v])
    np.testing.assert_allclose(v @ (e[..., None] * np.swapaxes(v, -1, -2)), SYM, atol=1e-12)
    assert np.all(np.diff(e, axis=-1) > 0)                    # ascending, as TF
    only_values = tf.self_adjoint_eigvals(SYM)
    assert only_values.op.outputs[1].shape.as_list() == [0]   # no vectors computed
    np.testing.assert_allclose(run(only_values), e, rtol=1e-12)
    assert tf.linalg.eigh is tf.self_adjoint_eig and tf.linalg.eigvalsh is tf.self_adjoint_eigvals


@pytest.mark.parametrize("x", [TALL, WIDE], ids=["tall", "wide"])
@pytest.mark.parametrize("full", [False, True])
def test_svd_reconstructs_with_tf_shapes(x, full):
    s, u, v = tf.svd(x.astype(np.float32), full_matrices=full)
    m, n = x.shape[-2:]
    k = min(m, n)
    assert s.shape.as_list() == [2, k] and s.dtype == tf.float32
    assert u.shape.as_list() == [2, m, m if full else k]
    assert v.shape.as_list() == [2, n, n if full else k]
    s, u, v = run([s, u, v])
    np.testing.assert_allclose(u[..., :k] * s[..., None, :] @ np.swapaxes(v[..., :k], -1, -2),
                               x, atol=1e-5)
    np.testing.assert_allclose(s, np.linalg.svd(x, compute_uv=False), rtol=1e-5)
    assert np.all(np.diff(s, axis=-1) <= 0)                   # descending


def test_svd_values_only_and_non_finite_input():
    s = tf.svd(TALL, compute_uv=False)
    assert isinstance(s, tf.Tensor) and s.op.outputs[1].shape.as_list() == [0]
    np.testing.assert_allclose(run(s), np.linalg.svd(TALL, compute_uv=False), rtol=1e-12)
    assert np.isnan(run(tf.svd(np.array([[1.0, np.nan], [0.0, 1.0]]), compute_uv=False))).all()


def test_decomposition_build_errors():
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2"):
        tf.self_adjoint_eig(tf.placeholder(tf.float64, [3, 2]))
    with pytest.raises(ValueError, match="at least rank 2"):
        tf.svd(np.ones(3))
    with pytest.raises(TypeError, match="not in list of allowed values"):
        tf.svd(np.ones((2, 2), np.int32))


def test_cross_products_and_errors():
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    out = tf.cross(a, b)
    assert out.shape.as_list() == [4, 3] and tf.linalg.cross is tf.cross
    np.testing.assert_allclose(run(out), np.cross(a, b), rtol=1e-12)
    ints = run(tf.cross(np.array([1, 0, 0], np.int32), np.array([0, 1, 0], np.int32)))
    assert ints.dtype == np.int32 and ints.tolist() == [0, 0, 1]
    with pytest.raises(ValueError, match="Dimension must be 3 but is 2"):
        tf.cross(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="Cross"):
        tf.cross(np.ones((2, 3)), np.ones((4, 3)))
    x, y = tf.placeholder(tf.float32, [None, 3]), tf.placeholder(tf.float32, [None, 3])
    with pytest.raises(InvalidArgumentError, match="same shape"):
        run(tf.cross(x, y), {x: np.ones((2, 3)), y: np.ones((1, 3))})


def test_matvec_and_cholesky_solve():
    out = tf.linalg.matvec(TALL, np.arange(3.0))
    assert out.shape.as_list() == [2, 5]
    np.testing.assert_allclose(run(out), TALL @ np.arange(3.0), rtol=1e-12)
    np.testing.assert_allclose(run(tf.linalg.matvec(TALL, np.ones(5), transpose_a=True)),
                               np.swapaxes(TALL, -1, -2) @ np.ones(5), rtol=1e-12)
    spd = np.swapaxes(TALL, -1, -2) @ TALL
    rhs = rng.normal(size=(2, 3, 2))
    solved = run(tf.cholesky_solve(tf.cholesky(spd), rhs))
    np.testing.assert_allclose(spd @ solved, rhs, atol=1e-10)


def test_matrix_solve_ls_paths():
    rhs = rng.normal(size=(2, 5, 2))
    fast, slow = run([tf.matrix_solve_ls(TALL, rhs), tf.linalg.lstsq(TALL, rhs, fast=False)])
    expected = np.stack([np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(TALL, rhs)])
    np.testing.assert_allclose(fast, expected, rtol=1e-10)
    np.testing.assert_allclose(slow, expected, rtol=1e-10)
    # the ridge solution (A^T A + l I)^-1 A^T B, and the minimum-norm one of a wide system
    ridge = run(tf.matrix_solve_ls(TALL, rhs, l2_regularizer=0.5))
    at = np.swapaxes(TALL, -1, -2)
    np.testing.assert_allclose(ridge, np.linalg.solve(at @ TALL + 0.5 * np.eye(3), at @ rhs),
                               rtol=1e-10)
    b = rng.normal(size=(2, 3, 1))
    wide = run(tf.matrix_solve_ls(WIDE, b))
    np.testing.assert_allclose(wide, np.linalg.pinv(WIDE) @ b, rtol=1e-10)


def test_matrix_solve_ls_rank_deficient():
    a = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    b = np.ones((3, 1))
    np.testing.assert_allclose(run(tf.matrix_solve_ls(a, b, fast=False)), np.linalg.pinv(a) @ b,
                               rtol=1e-10)
    with pytest.raises(InvalidArgumentError, match="Cholesky"):   # TF1's error (TF2 gives nan)
        run(tf.matrix_solve_ls(a, b))
    slow = tf.matrix_solve_ls(tf.constant(a), b, fast=False)
    with pytest.raises(ValueError, match="fast=False"):
        tf.gradients(slow, [slow.op.inputs[0]])


def test_pinv_and_matrix_rank():
    np.testing.assert_allclose(run(tf.linalg.pinv(TALL)), np.linalg.pinv(TALL), rtol=1e-10)
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    np.testing.assert_allclose(run(tf.linalg.pinv(singular)), np.linalg.pinv(singular), rtol=1e-10)
    ranks = tf.linalg.matrix_rank(np.stack([singular, np.eye(2), np.zeros((2, 2))]))
    assert ranks.dtype == tf.int32 and ranks.shape.as_list() == [3]
    assert run(ranks).tolist() == [1, 2, 0]
    assert run(tf.linalg.matrix_rank(np.diag([1.0, 1e-3]), tol=1e-2)) == 1


def test_namespace_aliases():
    assert tf.linalg.global_norm is tf.global_norm
    assert tf.linalg.l2_normalize is tf.nn.l2_normalize
    assert tf.linalg.tensor_diag is tf.diag and tf.linalg.tensor_diag_part is tf.diag_part
    assert tf.linalg.svd is tf.svd
