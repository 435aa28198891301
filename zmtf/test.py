"""``tf.test``: device queries TF1 test code uses."""

from __future__ import annotations


def is_gpu_available(cuda_only: bool = False, min_cuda_compute_capability: tuple[int, int] | None = None) -> bool:
    """True if this process has a GPU zmtf can use (numba's simulator counts when enabled for zmtf)."""
    from zmtf.runtime.gpus import discover

    gpus = discover()
    if min_cuda_compute_capability is not None:
        gpus = [g for g in gpus if g.compute_capability >= tuple(min_cuda_compute_capability)]
    return bool(gpus)


def gpu_device_name() -> str:
    """Name of the first GPU device, or "" when there is none."""
    return "/device:GPU:0" if is_gpu_available() else ""


def is_built_with_cuda() -> bool:
    """zmtf's GPU support comes from numba.cuda, which is always installed with zmtf."""
    return True
