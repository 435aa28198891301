"""Batched linear algebra: tf.matrix_inverse, matrix_determinant, log_matrix_determinant,
cholesky, matrix_solve, matrix_triangular_solve and batched tf.matmul against numpy; TF's
errors for singular or non-square input; the tf.linalg namespace."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import run_fetches as run
from zmtf.tf1.errors import InvalidArgumentError

rng = np.random.default_rng(9)
A = rng.normal(size=(2, 3, 4, 4)) + 3 * np.eye(4)
B = rng.normal(size=(2, 3, 4, 2))


def test_inverse_determinants_and_solve_match_numpy():
    inverse, inverse_t, det, (sign, log_abs), solved, solved_t = run([
        tf.matrix_inverse(A), tf.matrix_inverse(A, adjoint=True), tf.matrix_determinant(A),
        tf.log_matrix_determinant(A), tf.matrix_solve(A, B), tf.matrix_solve(A, B, adjoint=True)])
    np.testing.assert_allclose(inverse @ A, np.broadcast_to(np.eye(4), A.shape), atol=1e-12)
    np.testing.assert_allclose(inverse_t, np.swapaxes(np.linalg.inv(A), -1, -2), rtol=1e-12)
    np.testing.assert_allclose(det, np.linalg.det(A), rtol=1e-12)
    np.testing.assert_allclose(sign * np.exp(log_abs), np.linalg.det(A), rtol=1e-12)
    np.testing.assert_allclose(A @ solved, B, atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(A, -1, -2) @ solved_t, B, atol=1e-12)


def test_cholesky_reads_the_lower_triangle():
    spd = A @ np.swapaxes(A, -1, -2)
    lower = run(tf.cholesky(np.tril(spd) + np.triu(np.full_like(spd, 100.0), 1)))
    np.testing.assert_array_equal(lower, np.tril(lower))
    np.testing.assert_allclose(lower @ np.swapaxes(lower, -1, -2), spd, rtol=1e-12)
    assert tf.linalg.logdet(spd).shape.as_list() == [2, 3]
    np.testing.assert_allclose(run(tf.linalg.logdet(spd)), np.linalg.slogdet(spd)[1], rtol=1e-12)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_triangular_solve_uses_one_triangle(lower, adjoint):
    out = run(tf.matrix_triangular_solve(A, B, lower=lower, adjoint=adjoint))
    triangle = np.tril(A) if lower else np.triu(A)
    if adjoint:
        triangle = np.swapaxes(triangle, -1, -2)
    np.testing.assert_allclose(triangle @ out, B, atol=1e-12)


def test_triangular_solve_broadcasts_and_gives_inf_on_a_zero_pivot():
    out = tf.matrix_triangular_solve(A[0, 0], B)
    assert out.shape.as_list() == [2, 3, 4, 2]
    np.testing.assert_allclose(np.tril(A[0, 0]) @ run(out), B, atol=1e-12)
    singular = run(tf.matrix_triangular_solve(np.array([[0.0, 0.0], [2.0, 1.0]]), np.ones((2, 1))))
    np.testing.assert_array_equal(singular, [[np.inf], [-np.inf]])


def test_batched_matmul_broadcasts_like_numpy():
    out = tf.matmul(A[:, :1], B[0], adjoint_a=True)
    assert out.shape.as_list() == [2, 3, 4, 2]
    np.testing.assert_allclose(run(out), np.swapaxes(A[:, :1], -1, -2) @ B[0], rtol=1e-12)
    assert tf.matmul(np.ones((2, 3)), np.ones((3, 2))).op.type == "MatMul"


def test_singular_and_invalid_inputs_raise_tf_errors():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(InvalidArgumentError, match="Input is not invertible"):
        run(tf.matrix_inverse(np.stack([np.eye(2), singular])))
    with pytest.raises(InvalidArgumentError, match="Input matrix is not invertible"):
        run(tf.matrix_solve(singular, np.ones((2, 1))))
    with pytest.raises(InvalidArgumentError, match="Cholesky decomposition was not successful"):
        run(tf.cholesky(np.array([[1.0, 2.0], [2.0, 1.0]])))
    sign, log_abs = run(tf.log_matrix_determinant(singular))
    assert sign == 0 and log_abs == -np.inf
    assert run(tf.matrix_determinant(singular)) == 0
    with pytest.raises(ValueError, match="square"):
        tf.matrix_inverse(np.ones((2, 3)))
    with pytest.raises(ValueError, match="at least rank 2"):
        tf.matrix_solve(np.eye(2), np.ones(2))
    with pytest.raises(TypeError, match="int32"):
        tf.matrix_determinant([[1, 2], [3, 4]])


def test_float16_inverse_and_float32_dtypes():
    out = tf.matrix_inverse(np.array([[1.0, 2.0], [3.0, 4.0]], np.float16))
    assert out.dtype == tf.float16
    np.testing.assert_array_equal(run(out), np.array([[-2.0, 1.0], [1.5, -0.5]], np.float16))
    det = tf.matrix_determinant(A.astype(np.float32))
    assert det.dtype == tf.float32
    np.testing.assert_allclose(run(det), np.linalg.det(A), rtol=1e-5)


def test_linalg_namespace_aliases():
    assert tf.linalg.inv is tf.matrix_inverse and tf.linalg.det is tf.matrix_determinant
    assert tf.linalg.slogdet is tf.log_matrix_determinant and tf.linalg.solve is tf.matrix_solve
    assert tf.linalg.triangular_solve is tf.matrix_triangular_solve
    assert tf.linalg.band_part is tf.matrix_band_part and tf.linalg.diag is tf.matrix_diag
    assert tf.linalg.set_diag is tf.matrix_set_diag and tf.linalg.diag_part is tf.matrix_diag_part
    assert tf.linalg.transpose is tf.matrix_transpose and tf.linalg.matmul is tf.matmul
    for name in ("cholesky", "einsum", "eye", "norm", "tensordot", "trace"):
        assert getattr(tf.linalg, name) is getattr(tf, name)
