"""Kernel registry: (op_type, device_type, dtype) -> kernel function.

A kernel is ``fn(ctx, inputs, attrs) -> list of outputs``; an async one (marked
``fn.is_async = True``: a Recv, a loop) is ``fn(ctx, inputs, attrs, done) -> None`` and
hands its outputs to ``done`` when they are ready. ``dtype`` is a dtype *name*
("float32"): the dtype of the op's first input, or of its first output when it has no
inputs. A kernel registered with ``dtypes=None`` serves every dtype of its op and device.

The table is filled while ``zmtf.kernels`` is imported and only read afterwards, so
lookups need no lock. This module imports no numba: the placer asks ``supports()``
without paying for a compiler.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from zmtf.framework.dtypes import as_dtype
from zmtf.framework.errors import AlreadyExistsError, NotFoundError

KernelFn = Callable[[Any, list, dict], list]
#: an ``is_async`` kernel: ``fn(ctx, inputs, attrs, done)``; the executor tells the two apart
AsyncKernelFn = Callable[[Any, list, dict, Any], None]
AnyKernelFn = KernelFn | AsyncKernelFn
_Kernel = TypeVar("_Kernel", bound=AnyKernelFn)
_KernelKey = tuple[str, str, "str | None"]

#: (op_type, device_type, dtype name or None for "any dtype") -> kernel.
_KERNELS: dict[_KernelKey, AnyKernelFn] = {}


def register(
    op_type: str, device_type: str = "CPU", dtypes: Iterable[Any] | None = None
) -> Callable[[_Kernel], _Kernel]:
    """Decorator: register ``fn`` as the ``op_type`` kernel on ``device_type`` for ``dtypes``.

    ``dtypes`` holds names or DTypes; None registers one kernel for every dtype.
    Registering the same key twice is a bug and raises AlreadyExistsError.
    """
    names: list[str | None] = [None] if dtypes is None else [as_dtype(d).name for d in dtypes]

    def decorate(fn: _Kernel) -> _Kernel:
        for name in names:
            key = (op_type, device_type, name)
            if key in _KERNELS:
                raise AlreadyExistsError(
                    f"a kernel for {op_type} on {device_type} with dtype {name or 'any'} is "
                    f"already registered ({_KERNELS[key].__qualname__}); register each key once"
                )
            _KERNELS[key] = fn
        return fn

    return decorate


def _find(op_type: str, device_type: str, dtype: str | None) -> AnyKernelFn | None:
    fn = _KERNELS.get((op_type, device_type, dtype))
    if fn is None:
        fn = _KERNELS.get((op_type, device_type, None))
    return fn


def lookup(op_type: str, device_type: str, dtype: str | None) -> AnyKernelFn:
    """The kernel for ``op_type`` on ``device_type`` and ``dtype``; NotFoundError if none."""
    fn = _find(op_type, device_type, dtype)
    if fn is None:
        raise NotFoundError(_not_found_message(op_type, device_type, dtype))
    return fn


def supports(op_type: str, device_type: str, dtype: str | None) -> bool:
    """True when ``lookup`` would find a kernel (the placer's question)."""
    return _find(op_type, device_type, dtype) is not None


def registered_device_types(op_type: str) -> set[str]:
    """Device types ("CPU", "GPU") with at least one kernel for ``op_type``."""
    return {device for op, device, _ in _KERNELS if op == op_type}


def registered_dtypes(op_type: str, device_type: str) -> list[str]:
    """Sorted dtype names registered for ``op_type`` on ``device_type`` ("any" for None)."""
    return sorted(
        dtype or "any" for op, device, dtype in _KERNELS if op == op_type and device == device_type
    )


def _not_found_message(op_type: str, device_type: str, dtype: str | None) -> str:
    wanted = (
        f"No kernel registered for op {op_type!r} on device type {device_type!r} "
        f"with dtype {dtype}"
    )
    dtypes = registered_dtypes(op_type, device_type)
    if dtypes:
        return f"{wanted}. Registered dtypes for {op_type} on {device_type}: {', '.join(dtypes)}"
    devices = sorted(registered_device_types(op_type))
    if devices:
        return (
            f"{wanted}. {op_type} has no {device_type} kernels at all; it is registered on: "
            f"{', '.join(devices)}. Place it there, or allow soft placement"
        )
    return f"{wanted}. No device has a kernel for {op_type}; is the op type spelled right?"
