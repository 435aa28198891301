"""MatMul: numpy's BLAS (OpenBLAS) with a preallocated output.

Not numba: ``np.dot`` inside njit needs SciPy, and a hand-written loop runs at ~14 GFLOP/s
against BLAS's ~250. Transposes are passed as views, so BLAS reads them with its transpose
flag and nothing is copied. OpenBLAS runs its own thread pool; ``intra_op_threads`` does
not reach it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import empty, quietly, shape_str
from zmtf.kernels.cpu import parts
from zmtf.kernels.cpu.blas import SINGLE_THREAD_FLOPS, use_threads_for
from zmtf.kernels.cpu._jit import PARALLEL_MIN_ELEMENTS, jit
from zmtf.kernels.cpu.elementwise import BINARY_OPS, add_n, binary
from zmtf.kernels.registry import register

_MATMUL_DTYPES = ("float16", "float32", "float64", "int32", "int64")
_STACKED_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})
#: operands a stacked product copies at most: beyond, the copies would cost memory that
#: small per-step products (what stacking is for) never need; bigger ones gain little
STACK_MAX_BYTES = 64 << 20
#: A float product of at least this many flops (2*m*n*k; below SINGLE_THREAD_FLOPS, past
#: which BLAS's own threads take it) runs as two halves of its rows, or of its columns if
#: it has more, on the calling thread and the intra-op helper when that is timed faster
#: (parts.run_keyed). Each element is the same dot product, in the same order, either way.
#: Why: the LSTM's stacked weight gradient (256x640 @ 640x512, 2^27.3 flops) ran on one
#: core at the end of the step, ~1.85 ms, while the other idled. Smaller products lose to
#: the hand-off (2^23-2^25 flops: a 64x800x128 product 139 us whole, 133-142 us split).
SPLIT_MIN_FLOPS = 1 << 26
_SPLIT_DTYPES = _STACKED_DTYPES
#: the halves meet at a multiple of this: OpenBLAS's kernels then take the same blocks as
#: for the whole, and each element the same bits (a float64 130x300x1000 product split at
#: column 500 differed from the whole in the last bit)
_SPLIT_ALIGN = 64


@register("MatMul", dtypes=_MATMUL_DTYPES)
def mat_mul(ctx: Any, inputs: list, attrs: dict) -> list:
    """MatMul(a, b) with attrs ``transpose_a``, ``transpose_b``: a 2-D matrix product."""
    return [_product(ctx, inputs[0], inputs[1], attrs)]


def _product(ctx: Any, a: np.ndarray, b: np.ndarray, attrs: dict, products: int = 1) -> np.ndarray:
    """MatMul's product. ``products``: it stands for that many products of equal size (a
    stacked product, below), and gets the BLAS threads one of them would get; whether it
    is split in halves (SPLIT_MIN_FLOPS) goes by its own flops."""
    if a.ndim != 2 or b.ndim != 2:
        raise InvalidArgumentError(
            f"MatMul (node '{attrs['_node_name']}') needs 2-D inputs, got shapes "
            f"{shape_str(a.shape)} and {shape_str(b.shape)}"
        )
    if b.dtype != a.dtype:
        b = b.astype(a.dtype)
    left = a.T if attrs.get("transpose_a", False) else a
    right = b.T if attrs.get("transpose_b", False) else b
    if left.shape[1] != right.shape[0]:
        raise InvalidArgumentError(
            f"Matrix size-incompatible: In[0]: {shape_str(a.shape)}, In[1]: {shape_str(b.shape)} "
            f"(node '{attrs['_node_name']}', transpose_a={bool(attrs.get('transpose_a'))}, "
            f"transpose_b={bool(attrs.get('transpose_b'))})"
        )
    out = empty(ctx, (left.shape[0], right.shape[1]), a.dtype)
    flops = 2 * left.shape[0] * left.shape[1] * right.shape[1]
    if (SPLIT_MIN_FLOPS <= flops and flops // products < SINGLE_THREAD_FLOPS and a.dtype in _SPLIT_DTYPES
            and max(out.shape) >= 2 * _SPLIT_ALIGN):
        _multiply_in_halves(left, right, out, flops // products // 2)
    else:
        use_threads_for(flops // products)
        quietly(np.matmul, left, right, out=out)  # overflow gives inf, silently, as in TF
    return out


def _multiply_in_halves(left: np.ndarray, right: np.ndarray, out: np.ndarray, flops: int) -> None:
    """left @ right into ``out`` as two halves of its rows (or columns), shared out by
    ``parts`` (see SPLIT_MIN_FLOPS)."""
    rows, columns = out.shape
    by_rows = rows >= columns
    middle = (rows if by_rows else columns) // 2 // _SPLIT_ALIGN * _SPLIT_ALIGN

    def half(k: int, worker: int) -> None:
        part = slice(0, middle) if k == 0 else slice(middle, None)
        if by_rows:
            quietly(np.matmul, left[part], right, out=out[part])
        else:
            quietly(np.matmul, left, right[:, part], out=out[:, part])

    use_threads_for(flops)
    key = ("matmul halves", left.dtype.str, left.shape, right.shape)
    parts.run_keyed(key, 2, lambda workers: parts.run_parts(2, half, workers))


@register("BatchMatMulV2", dtypes=_MATMUL_DTYPES)
def batch_mat_mul(ctx: Any, inputs: list, attrs: dict) -> list:
    """BatchMatMulV2(a, b) with attrs ``adj_x``, ``adj_y``: matrix products over the last two
    axes, the batch axes broadcast as numpy's."""
    a, b = inputs
    node = attrs["_node_name"]
    if a.ndim < 2 or b.ndim < 2:
        raise InvalidArgumentError(f"BatchMatMulV2 (node '{node}') needs inputs of rank >= 2, got "
                                   f"shapes {shape_str(a.shape)} and {shape_str(b.shape)}")
    left = np.swapaxes(a, -1, -2) if attrs["adj_x"] else a
    right = np.swapaxes(b, -1, -2) if attrs["adj_y"] else b
    if left.shape[-1] != right.shape[-2]:
        raise InvalidArgumentError(f"Matrix size-incompatible: In[0]: {shape_str(a.shape)}, In[1]: "
                                   f"{shape_str(b.shape)} (node '{node}', adj_x={attrs['adj_x']}, "
                                   f"adj_y={attrs['adj_y']})")
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise InvalidArgumentError(f"In[0] and In[1] must have compatible batch dimensions: "
                                   f"{shape_str(a.shape)} vs. {shape_str(b.shape)} "
                                   f"(node '{node}')") from None
    use_threads_for(2 * math.prod(batch) * left.shape[-2] * left.shape[-1] * right.shape[-1])
    return [quietly(np.matmul, left, right.astype(a.dtype, copy=False))]


@jit()
def _transpose_into(x, out):  # type: ignore[no-untyped-def]
    """out = x.T in 16x16 tiles (3x faster than numpy's strided copy of a 256x512 float32)."""
    rows, cols = x.shape
    for r0 in range(0, rows, 16):
        r1 = min(r0 + 16, rows)
        for c0 in range(0, cols, 16):
            c1 = min(c0 + 16, cols)
            for r in range(r0, r1):
                for c in range(c0, c1):
                    out[c, r] = x[r, c]


@register("_TransposeForMatMul", dtypes=("float32", "float64"))
def transpose_for_mat_mul(ctx: Any, inputs: list, attrs: dict) -> list:
    """A contiguous transposed copy of a weight that several MatMuls read transposed
    (runtime.shared_transpose adds it at bind time; they then read it untransposed)."""
    (x,) = inputs
    if x.ndim != 2:   # the MatMuls reading it raise their own error for this
        return [x]
    out = empty(ctx, (x.shape[1], x.shape[0]), x.dtype)
    _transpose_into(x, out)
    return [out]


@register("_StackedMatMul", dtypes=("float32", "float64"))
def stacked_mat_mul(ctx: Any, inputs: list, attrs: dict) -> list:
    """The sum of the products a_k @ b_k (inputs a_1, b_1, a_2, b_2, ..., each transposed as
    ``transpose_a``/``transpose_b`` say) as one product of the operands stacked along the
    inner dimension. runtime.gradient_sums puts it where an AddN summed MatMuls (an
    RNN's weight gradient); operands that do not stack (shapes, dtypes) run as those
    MatMuls and that AddN, with their errors, and so do operands of more than
    STACK_MAX_BYTES."""
    lefts, rights = inputs[0::2], inputs[1::2]
    a_axis = 0 if attrs.get("transpose_a") else 1   # each operand's inner dimension
    b_axis = 1 if attrs.get("transpose_b") else 0
    if (_stackable(lefts, a_axis) and _stackable(rights, b_axis) and lefts[0].dtype == rights[0].dtype
            and all(a.shape[a_axis] == b.shape[b_axis] for a, b in zip(lefts, rights))
            and sum(x.nbytes for x in inputs) <= STACK_MAX_BYTES):
        # as many BLAS threads as one of the products gets: those ran on one thread each
        # (an LSTM's), and on a loaded machine two threads for the stack cost ~1.5x the CPU
        return [_product(ctx, _stacked(ctx, lefts, a_axis), _stacked(ctx, rights, b_axis), attrs,
                         products=len(lefts))]
    return add_n(ctx, [_product(ctx, a, b, attrs) for a, b in zip(lefts, rights)], attrs)


def _stackable(operands: list, axis: int) -> bool:
    """2-D float arrays of one dtype whose shapes differ along ``axis`` at most."""
    first = operands[0]
    if first.ndim != 2 or first.dtype not in _STACKED_DTYPES:
        return False
    other = 1 - axis
    return all(x.ndim == 2 and x.dtype == first.dtype and x.shape[other] == first.shape[other]
               for x in operands)


def _stacked(ctx: Any, operands: list, axis: int) -> np.ndarray:
    """The operands concatenated along ``axis``, into a pooled buffer."""
    shape = list(operands[0].shape)
    shape[axis] = sum(x.shape[axis] for x in operands)
    out = empty(ctx, tuple(shape), operands[0].dtype)
    np.concatenate(operands, axis=axis, out=out)
    return out


@register("_SlicedMatMul", dtypes=("float32", "float64"))
def sliced_mat_mul(ctx: Any, inputs: list, attrs: dict) -> list:
    """MatMul(a, b)[:, start:stop:step] (``columns``), multiplying by those columns of the
    right operand only: runtime.matmul_readers puts it where a StridedSlice kept part of
    a product's columns (an RNN's h gradient out of its concat's). Each kept element is the
    same dot product."""
    a, b = inputs
    if a.ndim != 2 or b.ndim != 2 or (a.shape[0] if attrs.get("transpose_a") else a.shape[1]) != (
            b.shape[1] if attrs.get("transpose_b") else b.shape[0]):
        return mat_mul(ctx, inputs, attrs)   # raises MatMul's error, with the whole operands
    columns = slice(*attrs["columns"])
    return [_product(ctx, a, b[columns] if attrs.get("transpose_b") else b[:, columns], attrs)]


@register("_MatMulAdd", dtypes=("float32", "float64"))
def mat_mul_add(ctx: Any, inputs: list, attrs: dict) -> list:
    """Add (``add``: Add or AddV2) of MatMul(a, b) and a tensor (inputs a, b, the tensor; the
    product is the Add's first operand if ``product_first``): runtime.matmul_readers puts it
    where an Add was a product's one reader. A bias that keeps the product's shape and dtype
    is added into the product's buffer; anything else runs as the Add's kernel would."""
    a, b, other = inputs
    product = _product(ctx, a, b, attrs)
    if (type(other) is np.ndarray and other.dtype == product.dtype and product.size < PARALLEL_MIN_ELEMENTS
            and _keeps_shape(other.shape, product.shape)):
        quietly(np.add, product, other, out=product)   # x + y == y + x, bit for bit
        return [product]
    spec = BINARY_OPS[attrs["add"]]
    return [binary(spec, ctx, product, other) if attrs["product_first"] else binary(spec, ctx, other, product)]


def _keeps_shape(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether broadcasting an array of ``shape`` against one of ``target`` gives ``target``."""
    if len(shape) > len(target):
        return False
    return all(d in (1, t) for d, t in zip(shape[::-1], target[::-1]))
