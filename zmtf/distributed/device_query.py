"""The devices of every task of a cluster, asked of each task itself (``python -m zmtf.devices
--cluster``).

Each task answers ListDevices with its own devices first; asking each one (not one master)
tells an operator which tasks are up: a task that does not answer within the bound is
reported down, with the reason, instead of failing the whole listing. Under CURVE the
client's own credential (ZMTF_CURVE_KEY) signs the calls, as a Session's would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zmtf.distributed import inproc, security
from zmtf.distributed.blocking import BlockingChannel
from zmtf.distributed.cluster_spec import ClusterSpec, endpoint
from zmtf.framework.errors import OpError
from zmtf.wire import messages as m


@dataclass(frozen=True)
class TaskDevices:
    """One task's answer: its devices (name, device_type, memory_limit), or why it is down."""

    task: str                  # "/job:ps/replica:0/task:0"
    address: str
    devices: list[dict[str, Any]] = field(default_factory=list)
    down: str = ""             # why it gave no answer ("" when it answered)


def cluster_devices(cluster: ClusterSpec, timeout: float) -> list[TaskDevices]:
    """Every task's devices, in the cluster spec's order; each task waited for ``timeout`` s."""
    keys = security.client_credential()
    context = inproc.new_context()
    try:
        return [_ask(context, keys, cluster.device_name(job, index), address, timeout)
                for job, index, address in cluster.all_tasks()]
    finally:
        context.destroy(linger=0)


def _ask(context: Any, keys: security.Credential | None, task: str, address: str,
         timeout: float) -> TaskDevices:
    channel = BlockingChannel(context, endpoint(address), peer=task, keys=keys)
    try:
        reply = channel.call(m.ListDevices(id=0), timeout)
    except OpError as error:
        return TaskDevices(task, address, down=error.message)
    finally:
        channel.close()
    own = [d for d in reply.devices if str(d.get("name", "")).startswith(task + "/")]
    return TaskDevices(task, address, own)
