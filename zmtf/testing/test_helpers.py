"""The helpers of ``tf.test`` that are not TestCase or the gradient checker: an in-process
local cluster (create_local_cluster) and device queries."""

from __future__ import annotations

from typing import Any


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


def is_built_with_gpu_support() -> bool:
    """True: zmtf's GPU kernels (numba.cuda) ship with it; is_gpu_available() says if one is here."""
    return is_built_with_cuda()


def create_local_cluster(num_workers: int, num_ps: int, protocol: str = "grpc",
                         worker_config: Any = None, ps_config: Any = None) -> tuple[list, list]:
    """``(workers, ps_servers)``: started ``tf.train.Server`` s of a cluster on free
    127.0.0.1 ports in this process, as TF's test helper. ``protocol`` "grpc" (TF's only
    one) and "zmtf" both mean zmtf's tcp transport. A test process is no server process:
    these servers leave it untuned (``tune_process=False``)."""
    from zmtf.distributed.cluster_spec import ClusterSpec
    from zmtf.distributed.server import Server
    from zmtf.testing import free_tcp_ports

    if protocol not in ("grpc", "zmtf"):
        raise ValueError(f"protocol must be 'grpc' or 'zmtf', got {protocol!r}")
    ports = free_tcp_ports(num_workers + num_ps)
    cluster = ClusterSpec({"worker": [f"127.0.0.1:{p}" for p in ports[:num_workers]],
                           "ps": [f"127.0.0.1:{p}" for p in ports[num_workers:]]})
    workers = [Server(cluster, job_name="worker", task_index=i, config=worker_config,
                      tune_process=False)
               for i in range(num_workers)]
    ps_servers = [Server(cluster, job_name="ps", task_index=i, config=ps_config,
                         tune_process=False)
                  for i in range(num_ps)]
    return workers, ps_servers
