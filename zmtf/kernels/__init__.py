"""Kernels: the code that computes each op, keyed by (op_type, device_type, dtype).

Importing this package fills the registry with the CPU kernels (no compilation happens
until a numba kernel is first called)::

    from zmtf import kernels
    fn = kernels.lookup("MatMul", "CPU", "float32")
    [product] = fn(ctx, [a, b], {"_node_name": "mm", "transpose_a": False, "transpose_b": False})
"""

from zmtf.kernels import cpu
from zmtf.kernels.cpu.state import VariableRef
from zmtf.kernels.registry import (
    AnyKernelFn, AsyncKernelFn, KernelFn, lookup, register, registered_device_types, supports)

__all__ = [
    "AnyKernelFn",
    "AsyncKernelFn",
    "KernelFn",
    "VariableRef",
    "cpu",
    "lookup",
    "register",
    "registered_device_types",
    "supports",
]
