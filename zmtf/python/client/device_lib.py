"""``from tensorflow.python.client import device_lib``: ``device_lib.list_local_devices()``."""

from __future__ import annotations

import os
from dataclasses import dataclass

from zmtf.runtime.gpus import discover


@dataclass
class DeviceAttributes:
    """TF1's DeviceAttributes proto, as list_local_devices() returns it."""

    name: str
    device_type: str
    memory_limit: int
    incarnation: int
    physical_device_desc: str


def list_local_devices(session_config: object = None) -> list[DeviceAttributes]:
    """This process's devices, GPUs first (as ``python -m zmtf.devices`` lists them)."""
    out = []
    for gpu in discover():
        desc = (f"device: {gpu.index}, name: {gpu.name}, compute capability: "
                f"{'.'.join(map(str, gpu.compute_capability))}")
        out.append(DeviceAttributes(f"/device:GPU:{gpu.index}", "GPU", int(gpu.total_memory or 0),
                                    gpu.index + 1, desc))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    out.append(DeviceAttributes("/device:CPU:0", "CPU", 256 << 20, 0, f"{cores} cores"))
    return out
