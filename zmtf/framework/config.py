"""ConfigProto, GPUOptions, RunOptions and RunMetadata: TF1's option objects, validated."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class GPUOptions:
    """GPU memory options (used by GPU devices; recorded but inert on a CPU-only process)."""

    per_process_gpu_memory_fraction: float = 0.0
    allow_growth: bool = False
    visible_device_list: str = ""

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.per_process_gpu_memory_fraction) <= 1.0:
            raise ValueError(
                f"gpu_options.per_process_gpu_memory_fraction must be in [0, 1], got "
                f"{self.per_process_gpu_memory_fraction}"
            )


@dataclass
class ConfigProto:
    """Session options: ``config = tf.ConfigProto(); config.log_device_placement = True``."""

    log_device_placement: bool = False
    allow_soft_placement: bool = False
    inter_op_parallelism_threads: int = 0
    intra_op_parallelism_threads: int = 0
    use_per_session_threads: bool = False
    gpu_options: GPUOptions = field(default_factory=GPUOptions)
    device_count: dict[str, int] = field(default_factory=dict)
    operation_timeout_in_ms: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.gpu_options, dict):
            self.gpu_options = GPUOptions(**self.gpu_options)
        for name in ("inter_op_parallelism_threads", "intra_op_parallelism_threads"):
            if int(getattr(self, name)) < 0:
                raise ValueError(f"{name} must be >= 0 (0 means one per core), got {getattr(self, name)}")


@dataclass
class RunOptions:
    """Per-run options: ``timeout_in_ms`` (DeadlineExceededError) and ``trace_level``."""

    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3

    trace_level: int = 0
    timeout_in_ms: int = 0


@dataclass
class RunMetadata:
    """Filled by run() when tracing: ``step_stats`` lists when and where each node ran."""

    step_stats: list[Any] = field(default_factory=list)
    partition_graphs: list[Any] = field(default_factory=list)
