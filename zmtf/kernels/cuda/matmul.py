"""MatMul on the GPU: a register-blocked tiled kernel.

A block of THREADS x THREADS threads computes a BLOCK x BLOCK output tile (BLOCK = THREADS *
PER_THREAD), grid-striding over tiles. Per step along k it stages a DEPTH-deep slice of
each operand in shared memory, and each thread then accumulates its PER_THREAD x
PER_THREAD outputs in registers from PER_THREAD values of each slice: a value read from
shared memory feeds PER_THREAD products instead of one (the 16 x 16 one-output-per-thread
kernel this replaced ran at 5 TFLOP/s on an H100). A thread's rows and columns are
THREADS apart, so neighbouring threads read neighbouring shared-memory words and write
neighbouring outputs. Transposes are index swaps in the tile loads, nothing is copied;
ragged edges load zeros. Accumulation is in the input dtype, as cuBLAS does by default.

Under the simulator the same kernel runs with small constants (each GPU thread there is a
Python thread). A kernel per dtype: ``cuda.shared.array`` needs its dtype at compile time.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import cuda

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import shape_str
from zmtf.kernels.cuda import _device
from zmtf.kernels.registry import register

THREADS = 4 if _device.SIMULATOR else 16      # a block is THREADS x THREADS threads
PER_THREAD = 2 if _device.SIMULATOR else 8    # each computes PER_THREAD x PER_THREAD outputs
DEPTH = 4 if _device.SIMULATOR else 8         # k values staged per step
BLOCK = THREADS * PER_THREAD                  # the output tile of a block is BLOCK x BLOCK
_LOADS = DEPTH * BLOCK // (THREADS * THREADS)  # elements of each slice a thread stages


def _tiled_matmul_kernel(dtype: Any) -> Any:
    zero = dtype(0)

    @cuda.jit
    def kernel(a, b, out, transpose_a, transpose_b):  # type: ignore[no-untyped-def]
        # NOTE: one cuda.shared.array per line, outside loops (the simulator keys them by line)
        a_slice = cuda.shared.array((DEPTH, BLOCK), dtype)   # a_slice[k, row]
        b_slice = cuda.shared.array((DEPTH, BLOCK), dtype)   # b_slice[k, col]
        acc = cuda.local.array((PER_THREAD, PER_THREAD), dtype)
        a_regs = cuda.local.array(PER_THREAD, dtype)
        b_regs = cuda.local.array(PER_THREAD, dtype)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        tid = ty * THREADS + tx
        m = out.shape[0]
        n = out.shape[1]
        depth = a.shape[0] if transpose_a else a.shape[1]
        tiles_n = (n + BLOCK - 1) // BLOCK
        tiles = ((m + BLOCK - 1) // BLOCK) * tiles_n
        for tile in range(cuda.blockIdx.x, tiles, cuda.gridDim.x):  # uniform per block
            row0 = (tile // tiles_n) * BLOCK
            col0 = (tile % tiles_n) * BLOCK
            for i in range(PER_THREAD):
                for j in range(PER_THREAD):
                    acc[i, j] = zero
            for k0 in range(0, depth, DEPTH):
                for load in range(_LOADS):
                    e = tid + load * THREADS * THREADS
                    # a: walk along whichever axis is contiguous in memory
                    if transpose_a:                       # a is [depth, m]
                        kk = e // BLOCK
                        r = e - kk * BLOCK
                    else:                                 # a is [m, depth]
                        r = e // DEPTH
                        kk = e - r * DEPTH
                    if row0 + r < m and k0 + kk < depth:
                        a_slice[kk, r] = a[k0 + kk, row0 + r] if transpose_a else a[row0 + r, k0 + kk]
                    else:
                        a_slice[kk, r] = zero
                    if transpose_b:                       # b is [n, depth]
                        c = e // DEPTH
                        kk = e - c * DEPTH
                    else:                                 # b is [depth, n]
                        kk = e // BLOCK
                        c = e - kk * BLOCK
                    if col0 + c < n and k0 + kk < depth:
                        b_slice[kk, c] = b[col0 + c, k0 + kk] if transpose_b else b[k0 + kk, col0 + c]
                    else:
                        b_slice[kk, c] = zero
                cuda.syncthreads()
                for k in range(DEPTH):
                    for i in range(PER_THREAD):
                        a_regs[i] = a_slice[k, ty + i * THREADS]
                    for j in range(PER_THREAD):
                        b_regs[j] = b_slice[k, tx + j * THREADS]
                    for i in range(PER_THREAD):
                        for j in range(PER_THREAD):
                            acc[i, j] += a_regs[i] * b_regs[j]
                cuda.syncthreads()
            for i in range(PER_THREAD):
                row = row0 + ty + i * THREADS
                if row < m:
                    for j in range(PER_THREAD):
                        col = col0 + tx + j * THREADS
                        if col < n:
                            out[row, col] = acc[i, j]

    return kernel


_KERNELS: dict[str, Any] = {
    "float32": _tiled_matmul_kernel(np.float32),
    "float64": _tiled_matmul_kernel(np.float64),
}


@register("MatMul", "GPU", tuple(_KERNELS))
def mat_mul(ctx: Any, inputs: list, attrs: dict) -> list:
    """MatMul(a, b) with attrs ``transpose_a``, ``transpose_b``: a 2-D matrix product."""
    a, b = inputs
    node_name = attrs["_node_name"]
    transpose_a = bool(attrs.get("transpose_a", False))
    transpose_b = bool(attrs.get("transpose_b", False))
    if a.ndim != 2 or b.ndim != 2:
        raise InvalidArgumentError(
            f"MatMul (node '{node_name}') needs 2-D inputs, got shapes "
            f"{shape_str(a.shape)} and {shape_str(b.shape)}"
        )
    if a.dtype != b.dtype:
        raise InvalidArgumentError(
            f"MatMul (node '{node_name}'): a is {a.dtype.name} but b is {b.dtype.name}; "
            f"cast one of them"
        )
    m, depth = (a.shape[1], a.shape[0]) if transpose_a else (a.shape[0], a.shape[1])
    depth_b, n = (b.shape[1], b.shape[0]) if transpose_b else (b.shape[0], b.shape[1])
    if depth != depth_b:
        raise InvalidArgumentError(
            f"Matrix size-incompatible: In[0]: {shape_str(a.shape)}, In[1]: {shape_str(b.shape)} "
            f"(node '{node_name}', transpose_a={transpose_a}, transpose_b={transpose_b})"
        )
    out = _device.empty(ctx, (m, n), a.dtype)
    tiles = math.ceil(m / BLOCK) * math.ceil(n / BLOCK)
    if tiles:
        kernel = _KERNELS[a.dtype.name]
        blocks = _device.blocks_for(tiles, threads=1)
        with _device.launching(ctx):
            kernel[blocks, (THREADS, THREADS), _device.stream(ctx)](a, b, out, transpose_a, transpose_b)
    return [out]
