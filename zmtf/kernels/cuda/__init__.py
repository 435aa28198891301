"""GPU kernels in numba.cuda. Importing this package registers them, if CUDA is usable.

The import never fails: when numba.cuda cannot be imported, or no GPU (and no simulator,
``NUMBA_ENABLE_CUDASIM=1``) is usable, nothing is registered and ``AVAILABLE`` is False with
the reason in ``REASON``. ``@cuda.jit`` compiles lazily, so importing compiles nothing.

One module per family, as on the CPU: elementwise, matmul, reduce, nn, array, random,
state. ``_device`` holds the host side of every kernel (allocation within the runtime's
GPU budget, streams, launch configuration); ``_plan`` the pure index arithmetic.

Conventions (see ``_device``): inputs and outputs are C-contiguous device arrays; outputs
have exactly the op's dtype and shape (0-d tensors are device arrays of shape ()).
"""

from __future__ import annotations

import os
import sys


def _follow_simulator_setting() -> None:
    """Apply a NUMBA_ENABLE_CUDASIM set after numba was imported but before numba.cuda.

    numba reads its environment once, at ``import numba``; the simulator can still be
    switched until ``numba.cuda`` is imported (TOOLCHAIN.md section 2). This matters when
    something imported numba before the setting was made (pytest plugins before conftest).
    """
    wanted = os.environ.get("NUMBA_ENABLE_CUDASIM")
    if wanted is None or "numba.cuda" in sys.modules:
        return
    from numba.core import config

    try:
        differs = int(wanted or 0) != int(config.ENABLE_CUDASIM)
    except ValueError:
        return  # numba itself will report the malformed value
    if differs:
        config.reload_config()


def _probe() -> str:
    """Empty when numba.cuda can run kernels here (a GPU or the simulator), else why not."""
    try:
        _follow_simulator_setting()
        from numba import cuda
    except Exception as exc:  # ImportError, or a broken CUDA install raising anything
        return f"numba.cuda cannot be imported: {type(exc).__name__}: {exc}"
    try:
        usable = cuda.is_available()
    except Exception as exc:  # NOTE: is_available() should not raise; be defensive anyway
        return f"numba.cuda.is_available() failed: {type(exc).__name__}: {exc}"
    if not usable:
        return (
            "no CUDA GPU is usable (numba.cuda.is_available() is False: no driver or no "
            "device); set NUMBA_ENABLE_CUDASIM=1 before importing numba to use the simulator"
        )
    from numba import config

    if not config.ENABLE_CUDASIM:
        conflict = numpy_conflict(_version("numpy"), _version("numba-cuda"))
        if conflict:
            return conflict
    if not config.ENABLE_CUDASIM and not _nvvm_available():
        return (
            "a CUDA GPU is present but kernels cannot be compiled: libNVVM (the CUDA "
            "toolkit's compiler) was not found; install the toolkit or numba-cuda[cu12]"
        )
    return ""


def _version(package: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return ""


def numpy_conflict(numpy_version: str, numba_cuda_version: str) -> str:
    """Why this numpy and numba-cuda cannot compile kernels together, or "".

    numba-cuda 0.30.4 (the newest in 2026-11) refers to ``np.row_stack``, which numpy 2.5
    removed: every kernel compile fails with an AttributeError deep in numba. Seen on an
    H100 with numpy 2.5.2.
    """
    def parts(text: str) -> tuple[int, ...]:
        numbers = []
        for piece in text.split(".")[:3]:
            digits = "".join(ch for ch in piece if ch.isdigit())
            numbers.append(int(digits or 0))
        return tuple(numbers)

    if not numpy_version or not numba_cuda_version:
        return ""
    if parts(numpy_version) >= (2, 5) and parts(numba_cuda_version) <= (0, 30, 4):
        return (f"numba-cuda {numba_cuda_version} cannot compile kernels with numpy "
                f"{numpy_version} (it uses np.row_stack, gone in numpy 2.5); install "
                f"numpy<2.5, as pip install 'zmtf[gpu]' does")
    return ""


def _nvvm_available() -> bool:
    """Whether numba finds libNVVM, which compiles kernels on a real GPU (~0.5 s to load)."""
    try:
        from numba.cuda.cudadrv import nvvm

        return bool(nvvm.is_available())
    except (ImportError, AttributeError):  # another numba.cuda layout: let launches tell
        return True


#: Why the GPU kernels are not registered; "" when they are.
REASON: str = _probe()
#: True when the GPU kernels below are registered.
AVAILABLE: bool = not REASON


def _quiet_small_grid_warnings() -> None:
    """Small tensors launch small grids by nature; numba warns on each such launch
    (NumbaPerformanceWarning, "grid size ... under-utilization"), which a TF user reads as
    a fault. Off unless the user set NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS themselves."""
    if "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS" in os.environ:
        return
    from numba import config

    config.CUDA_LOW_OCCUPANCY_WARNINGS = 0


if AVAILABLE:
    _quiet_small_grid_warnings()
    from zmtf.kernels.cuda import array, elementwise, matmul, nn, random, reduce, state
    from zmtf.kernels.cuda._device import SIMULATOR

    __all__ = [
        "AVAILABLE",
        "REASON",
        "SIMULATOR",
        "array",
        "elementwise",
        "matmul",
        "nn",
        "random",
        "reduce",
        "state",
    ]
else:
    SIMULATOR = False
    __all__ = ["AVAILABLE", "REASON", "SIMULATOR"]
