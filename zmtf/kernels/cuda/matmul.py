"""MatMul on the GPU: the classic shared-memory tiled kernel, 16 x 16 tiles.

Each block computes one 16 x 16 output tile at a time (grid-striding over tiles): per step
along k it stages a tile of each operand in shared memory, syncs, and accumulates 16
products per thread. Transposes are index swaps in the tile loads, so nothing is copied.
Ragged edges (sizes not a multiple of 16) load zeros. Accumulation is in the input dtype,
as cuBLAS does by default.

A kernel per dtype: ``cuda.shared.array`` needs its dtype at compile time.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import cuda

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu._common import shape_str
from zmtf.kernels.cuda import _device
from zmtf.kernels.registry import register

TILE = 16


def _tiled_matmul_kernel(dtype: Any) -> Any:
    zero = dtype(0)

    @cuda.jit
    def kernel(a, b, out, transpose_a, transpose_b):  # type: ignore[no-untyped-def]
        # NOTE: one cuda.shared.array per line, outside loops (the simulator keys them by line)
        a_tile = cuda.shared.array((TILE, TILE), dtype)
        b_tile = cuda.shared.array((TILE, TILE), dtype)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        m = out.shape[0]
        n = out.shape[1]
        depth = a.shape[0] if transpose_a else a.shape[1]
        tiles_n = (n + TILE - 1) // TILE
        tiles = ((m + TILE - 1) // TILE) * tiles_n
        for tile in range(cuda.blockIdx.x, tiles, cuda.gridDim.x):  # uniform per block
            row = (tile // tiles_n) * TILE + ty
            col = (tile % tiles_n) * TILE + tx
            acc = zero
            for k0 in range(0, depth, TILE):
                ka = k0 + tx
                if row < m and ka < depth:
                    a_tile[ty, tx] = a[ka, row] if transpose_a else a[row, ka]
                else:
                    a_tile[ty, tx] = zero
                kb = k0 + ty
                if kb < depth and col < n:
                    b_tile[ty, tx] = b[col, kb] if transpose_b else b[kb, col]
                else:
                    b_tile[ty, tx] = zero
                cuda.syncthreads()
                for k in range(TILE):
                    acc += a_tile[ty, k] * b_tile[k, tx]
                cuda.syncthreads()
            if row < m and col < n:
                out[row, col] = acc

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
    tiles = math.ceil(m / TILE) * math.ceil(n / TILE)
    if tiles:
        kernel = _KERNELS[a.dtype.name]
        blocks = _device.blocks_for(tiles, threads=1)
        with _device.launching(ctx):
            kernel[blocks, (TILE, TILE), _device.stream(ctx)](a, b, out, transpose_a, transpose_b)
    return [out]
