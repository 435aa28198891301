"""Ask every task of a cluster for its ``TaskStatus``, all at once, each within a timeout.

One thread and one socket per task (``BlockingChannel``), so a task that is down or
paused costs the report at most ``timeout`` seconds, not one timeout per task. The
outcome of each probe is "up" (with the task's reply), "refused" (its CURVE handshake
turned this key away) or "down" (no answer within the timeout, or the connection failed).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from zmtf.distributed import inproc, security
from zmtf.distributed.blocking import BlockingChannel
from zmtf.distributed.cluster_spec import ClusterSpec, endpoint
from zmtf.framework.errors import OpError, PermissionDeniedError, UnauthenticatedError
from zmtf.wire import messages as m

UP, DOWN, REFUSED = "up", "down", "refused"


@dataclass(frozen=True, slots=True)
class Probe:
    """One task's answer (or why there was none) at ``at`` (this machine's wall clock)."""

    task: str                      # "/job:worker/replica:0/task:1"
    address: str                   # its address in the cluster spec
    state: str                     # UP, DOWN or REFUSED
    at: float
    status: m.TaskStatus | None = None
    error: str | None = None       # why it is not up


def probe_cluster(cluster: ClusterSpec, timeout: float,
                  keys: security.Credential | None) -> list[Probe]:
    """Every task's Probe, in the cluster's order; takes about ``timeout`` at most."""
    tasks = [(cluster.device_name(job, index), address)
             for job, index, address in cluster.all_tasks()]
    context = inproc.new_context()
    try:
        with ThreadPoolExecutor(max_workers=max(1, len(tasks)),
                                thread_name_prefix="zmtf-status") as pool:
            return list(pool.map(lambda t: probe_task(context, t[0], t[1], timeout, keys), tasks))
    finally:
        context.destroy(linger=0)


def probe_task(context: Any, task: str, address: str, timeout: float,
               keys: security.Credential | None) -> Probe:
    """One StatusRequest to one task (its own socket, closed after)."""
    channel = BlockingChannel(context, endpoint(address), peer=task, keys=keys)
    try:
        reply = channel.call(m.StatusRequest(), timeout)
    except (UnauthenticatedError, PermissionDeniedError) as error:   # this key, turned away
        return Probe(task, address, REFUSED, time.time(), error=error.message)
    except OpError as error:
        return Probe(task, address, DOWN, time.time(), error=f"{type(error).__name__}: {error.message}")
    finally:
        channel.close()
    if not isinstance(reply, m.TaskStatus):
        return Probe(task, address, DOWN, time.time(),
                     error=f"answered {type(reply).__name__}, not TaskStatus (an older zmtf?)")
    return Probe(task, address, UP, time.time(), status=reply)
