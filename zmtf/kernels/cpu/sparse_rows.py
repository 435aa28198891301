"""Row kernels of embeddings and their sparse updates: one numba loop over the looked-up rows.

An embedding step gathers k rows of a big table, and its gradient comes back as k rows and
their ids: UnsortedSegmentSum and ScatterAdd fold the rows into their ids, the sparse
optimizers update only the rows named. numpy does each with several passes (``np.unique``,
fancy-index reads and writes, ``ufunc.at``, which runs a Python-level loop of C calls per
element group); these do one pass over the rows, no Python per row or per unique id.

Every function works on 2-D views ``[rows, width]`` (callers reshape; a 1-D variable is
width 1) of the numba dtypes (``fits``); others stay on the numpy path of the caller.
Ids are checked by the caller before: the loops index without bounds checks.
Duplicates add up in the order of the ids, as ``np.add.at`` does, so results do not change.
"""

from __future__ import annotations

import math

import numpy as np

from zmtf.kernels.cpu._jit import NUMBA_NP_DTYPES, jit


def fits(*arrays: np.ndarray) -> bool:
    """Whether these arrays (values, then ids) can take the numba loops: one numba dtype for
    the values, integer ids."""
    *values, ids = arrays
    dtype = values[0].dtype
    return (dtype in NUMBA_NP_DTYPES and all(v.dtype == dtype for v in values)
            and ids.dtype.kind in "iu")


def as_rows(a: np.ndarray, lead: int = 1) -> np.ndarray:
    """``a`` as [rows, width], its first ``lead`` axes the rows (a view when ``a`` is
    contiguous; a 1-D array is width 1)."""
    return a.reshape(math.prod(a.shape[:lead]), math.prod(a.shape[lead:]))


@jit()
def gather_rows(params, ids, out):  # type: ignore[no-untyped-def]
    """out[k] = params[ids[k]]; the first id outside [0, rows) is returned (else -1) and
    nothing past it is copied."""
    limit = params.shape[0]
    for k in range(ids.size):
        r = ids[k]
        if r < 0 or r >= limit:
            return k
        out[k, :] = params[r, :]
    return -1


@jit()
def add_rows(out, ids, rows, sign):  # type: ignore[no-untyped-def]
    """out[ids[k]] += sign * rows[k] for every k with ids[k] >= 0 (negative ids are dropped,
    as UnsortedSegmentSum drops them)."""
    width = out.shape[1]
    for k in range(ids.size):
        r = ids[k]
        if r < 0:
            continue
        for c in range(width):
            out[r, c] += sign * rows[k, c]


@jit()
def _grouped(ids):  # type: ignore[no-untyped-def]
    """The positions of ids sorted by id, equal ids in their original order."""
    return np.argsort(ids, kind="mergesort")


@jit()
def _summed_rows(order, k, ids, grad, g):  # type: ignore[no-untyped-def]
    """Sum into ``g`` the gradient rows of the id at ``order[k]`` and of its duplicates
    (``order`` groups equal ids): that id, and where the next one starts."""
    r = ids[order[k]]
    g[:] = grad[order[k], :]
    k += 1
    while k < order.size and ids[order[k]] == r:
        g += grad[order[k], :]
        k += 1
    return r, k


@jit()
def adagrad_rows(var, accum, lr, grad, ids):  # type: ignore[no-untyped-def]
    """SparseApplyAdagrad on the rows of ``ids``: each id's rows summed first, then
    accum += g^2; var -= lr * g / sqrt(accum), once per id."""
    order = _grouped(ids)
    width = var.shape[1]
    g = np.empty(width, var.dtype)
    k = 0
    while k < order.size:
        r, k = _summed_rows(order, k, ids, grad, g)
        for c in range(width):
            a = accum[r, c] + g[c] * g[c]
            accum[r, c] = a
            var[r, c] -= lr * g[c] / np.sqrt(a)


@jit()
def momentum_rows(var, accum, lr, grad, ids, momentum, nesterov):  # type: ignore[no-untyped-def]
    """SparseApplyMomentum on the rows of ``ids``, duplicates summed first:
    accum = accum * momentum + g; var -= lr * accum (Nesterov: g * lr + accum * momentum * lr)."""
    order = _grouped(ids)
    width = var.shape[1]
    g = np.empty(width, var.dtype)
    k = 0
    while k < order.size:
        r, k = _summed_rows(order, k, ids, grad, g)
        for c in range(width):
            a = accum[r, c] * momentum + g[c]
            accum[r, c] = a
            if nesterov:
                var[r, c] -= g[c] * lr + a * (momentum * lr)
            else:
                var[r, c] -= a * lr
