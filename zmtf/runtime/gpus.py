"""GPU discovery through numba.cuda: which cards this process may use, and what they are.

No GPU, no driver or a broken CUDA install means "CPU only" with one log line, never an
import error. ``CUDA_VISIBLE_DEVICES`` is applied by the CUDA driver itself; TF's
``gpu_options.visible_device_list`` then picks and orders among the visible cards ("3,2":
visible card 3 becomes GPU:0). Numba's CUDA *simulator* (NUMBA_ENABLE_CUDASIM=1) offers a
fake card; zmtf uses it only when asked (``ZMTF_CUDASIM_GPUS=1`` or a session config with
``device_count={"GPU": n}``), so a test process that has the simulator on for GPU kernel
tests does not move every CPU test onto the (slow) simulator.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass

log = logging.getLogger("zmtf.devices")


@dataclass(frozen=True, slots=True)
class GpuInfo:
    """One usable card: its zmtf index, the driver's index, name, capability, memory."""

    index: int                 # GPU:<index> in zmtf device names
    driver_index: int          # numba.cuda.gpus[driver_index]
    name: str
    compute_capability: tuple[int, int]
    total_memory: int          # bytes; 0 when unknown (simulator: unbounded)
    simulated: bool
    card: str = ""             # a stable id of the physical card (its UUID; "sim<n>" simulated)


# (driver index, name, compute capability, total bytes, card id): one card as the probe sees it
_Card = tuple[int, str, tuple[int, int], int, str]

_lock = threading.Lock()
_cache: dict[str, tuple[list[_Card], str]] = {}   # "cards": the probe's one answer


def simulator_enabled() -> bool:
    """Whether numba's CUDA simulator is on (read without importing numba.cuda)."""
    try:
        from numba.core import config
    except ImportError:
        return False
    return bool(getattr(config, "ENABLE_CUDASIM", 0))


def _probe() -> tuple[list[_Card], str]:
    """(driver index, name, capability, total bytes, card id) per card, or ([], why not)."""
    try:
        from numba import cuda
        from numba.cuda.cudadrv.error import CudaSupportError
    except Exception as error:  # noqa: BLE001 - any import failure means CPU only
        return [], f"numba.cuda cannot be imported ({type(error).__name__}: {error})"
    try:
        if not cuda.is_available():
            return [], _driver_said()
        cards = []
        for device in cuda.list_devices():
            name = getattr(device, "name", b"CUDA simulator")
            name = name.decode() if isinstance(name, bytes) else str(name)
            card = str(getattr(device, "uuid", "") or f"sim{int(device.id)}")
            cards.append((int(device.id), name, tuple(device.compute_capability),
                          _total_memory(cuda, device), card))
        return cards, "" if cards else "the CUDA driver lists no device"
    except CudaSupportError as error:
        return [], f"CUDA is not usable: {error}"
    except Exception as error:  # noqa: BLE001 - a broken install must not break CPU users
        return [], f"CUDA probe failed ({type(error).__name__}: {error})"


def _driver_said() -> str:
    """numba's reason for no CUDA ("CUDA driver library cannot be found", CUDA_ERROR_NO_DEVICE)."""
    try:
        from numba.cuda.cudadrv import driver
        said = getattr(driver.driver, "initialization_error", None)
    except Exception:  # noqa: BLE001 - the reason is a courtesy
        said = None
    return f"numba.cuda: {' '.join(str(said).split())}" if said else "no CUDA driver or GPU found"


def _total_memory(cuda: object, device: object) -> int:
    try:
        with device:  # type: ignore[attr-defined]
            total = cuda.current_context().get_memory_info().total  # type: ignore[attr-defined]
        return int(total) if total != float("inf") else 0
    except Exception:  # noqa: BLE001
        return 0


def parse_visible_device_list(text: str, count: int) -> list[int]:
    """TF's visible_device_list: "1,0" -> [1, 0]; "" -> all; bad entries -> ValueError."""
    if not text.strip():
        return list(range(count))
    indices = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) >= count:
            raise ValueError(f"gpu_options.visible_device_list '{text}': '{part}' is not a visible "
                             f"GPU index (this process sees {count} GPU(s): 0..{count - 1})")
        if int(part) in indices:
            raise ValueError(f"gpu_options.visible_device_list '{text}' lists GPU {part} twice")
        indices.append(int(part))
    return indices


def discover(visible_device_list: str = "", requested: int | None = None) -> list[GpuInfo]:
    """The GPUs a session or server may use (``requested``: device_count["GPU"], if set)."""
    simulated = simulator_enabled()
    if requested == 0:
        return []
    if simulated and requested is None and os.environ.get("ZMTF_CUDASIM_GPUS") != "1":
        return []
    cards, _ = _probed()
    order = parse_visible_device_list(visible_device_list, len(cards))
    if requested is not None:
        order = order[:requested]
    return [GpuInfo(i, cards[k][0], cards[k][1], cards[k][2], cards[k][3], simulated, cards[k][4])
            for i, k in enumerate(order)]


def _probed() -> tuple[list[_Card], str]:
    """The probe's one answer (cards, why none), logged the first time when there is no card."""
    with _lock:
        if "cards" not in _cache:
            _cache["cards"] = _probe()
            cards, why = _cache["cards"]
            if not cards:
                log.info("no GPU available (%s): running on CPU only", why)
        return _cache["cards"]


def no_gpu_reason(visible_device_list: str = "") -> str:
    """Why ``discover`` finds no GPU, for a person ("" when it finds one)."""
    if simulator_enabled() and os.environ.get("ZMTF_CUDASIM_GPUS") != "1":
        return ("numba's CUDA simulator is on (NUMBA_ENABLE_CUDASIM=1); zmtf uses its simulated "
                "GPU only with ZMTF_CUDASIM_GPUS=1")
    why = _probed()[1]
    return "" if discover(visible_device_list) else why or "gpu_options.visible_device_list is empty"


def list_local_devices(visible_device_list: str = "", requested: int | None = None) -> list[str]:
    """Device names with a short description, GPU first: what ``python -m zmtf.devices`` prints."""
    lines = []
    for gpu in discover(visible_device_list, requested):
        cc = ".".join(map(str, gpu.compute_capability))
        memory = f"{gpu.total_memory / 2**30:.1f} GiB" if gpu.total_memory else "memory unknown"
        kind = ", simulated" if gpu.simulated else ""
        lines.append(f"/job:localhost/replica:0/task:0/device:GPU:{gpu.index}  ({gpu.name}, "
                     f"compute capability {cc}, {memory}, driver index {gpu.driver_index}{kind})")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    lines.append(f"/job:localhost/replica:0/task:0/device:CPU:0  ({cores} cores)")
    return lines
