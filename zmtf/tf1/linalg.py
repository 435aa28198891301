"""``tf.linalg``: TF 1.x's linear-algebra namespace, over the functions zmtf has at the top
level (``tf.linalg.inv`` is ``tf.matrix_inverse``, ``tf.linalg.band_part`` is
``tf.matrix_band_part``, ...)."""

from zmtf.ops.diag_ops import (
    matrix_band_part as band_part, matrix_diag as diag, matrix_diag_part as diag_part,
    matrix_set_diag as set_diag, trace,
)
from zmtf.ops.einsum_ops import einsum
from zmtf.ops.linalg_ops import matrix_transpose, norm, tensordot
from zmtf.ops.linalg_solve_ops import (
    cholesky, log_matrix_determinant as slogdet, matrix_determinant as det, matrix_inverse as inv,
    matrix_solve as solve, matrix_triangular_solve as triangular_solve, qr,
)
from zmtf.ops.math_ops import matmul
from zmtf.ops.sequence_ops import eye

transpose = matrix_transpose

__all__ = [
    "band_part", "cholesky", "det", "diag", "diag_part", "einsum", "eye", "inv", "matmul", "qr",
    "matrix_transpose", "norm", "set_diag", "slogdet", "solve", "tensordot", "trace", "transpose",
    "triangular_solve",
]


__all__ += ["adjoint", "logdet"]

from zmtf.ops.composite_ops import global_norm, l2_normalize  # noqa: E402
from zmtf.ops.diag_ops import diag as tensor_diag, diag_part as tensor_diag_part  # noqa: E402
from zmtf.ops.linalg_compositions import (  # noqa: E402
    adjoint, logdet, cholesky_solve, lstsq, matrix_rank, matvec, pinv,
)
from zmtf.ops.linalg_decomp_ops import (  # noqa: E402
    cross, self_adjoint_eig as eigh, self_adjoint_eigvals as eigvalsh, svd,
)

__all__ += ["cholesky_solve", "cross", "eigh", "eigvalsh", "global_norm", "l2_normalize", "lstsq",
            "matrix_rank", "matvec", "pinv", "svd", "tensor_diag", "tensor_diag_part"]
