"""``tf.test``: device queries TF1 test code uses."""

from __future__ import annotations


def is_gpu_available(cuda_only: bool = False, min_cuda_compute_capability: tuple[int, int] | None = None) -> bool:
    """True if this process has a GPU device zmtf can use (none yet: GPU support is not built)."""
    return False


def gpu_device_name() -> str:
    """Name of the first GPU device, or "" when there is none."""
    return ""


def is_built_with_cuda() -> bool:
    return False
