"""ClusterSpec: the jobs of a cluster, their tasks, and the address each task listens on.

This is TF1's ``tf.train.ClusterSpec``, plus what zmtf needs to turn a cluster into zmq
endpoints. Pure: it parses and validates, and never opens a socket. An address is either
TF's "host:port" (which means tcp) or a full zmq endpoint ("tcp://10.0.0.5:2222",
"ipc:///tmp/ps0", "inproc://ps0"). As in TF, a ClusterSpec takes any string as an address
(a cluster dict may be built before its hosts are known); a server checks every address of
its cluster when it starts (``check_addresses``), and the error names the task at fault.
Port 0 asks the server for a free port (TF's "localhost:0").
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import socket
from collections.abc import Iterable, Mapping
from typing import Any

from zmtf.formats.cluster_def_proto import ClusterDef
from zmtf.framework.device_spec import DeviceSpec
from zmtf.framework.errors import InvalidArgumentError

_JOB_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")  # TF's device-name grammar for jobs
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_][A-Za-z0-9_.-]*)\Z")
_TCP = "tcp://"
_PATH_SCHEMES = ("ipc://", "inproc://")
_LOCAL_HOSTNAMES = frozenset({"localhost"})
_TF_CONFIG_ENV = "TF_CONFIG"
_ENV_SOURCE = f"the {_TF_CONFIG_ENV} environment variable"
_TF_CONFIG_KEYS = frozenset({"cluster", "task", "environment", "rpc_layer", "session_master"})
# Estimator's rule: an evaluator task runs beside the cluster, not in it.
_TASKS_OUTSIDE_CLUSTER = frozenset({"evaluator"})
_TF_CONFIG_EXAMPLE = (
    '{"cluster": {"ps": ["127.0.0.1:2221"], "worker": ["127.0.0.1:2222"]}, '
    '"task": {"type": "worker", "index": 0}}'
)
_ADDRESS_FORMS = (
    "'host:port' (e.g. '127.0.0.1:2222') or a zmq endpoint "
    "('tcp://host:port', 'ipc:///path', 'inproc://name')"
)

JobTasks = list[str] | dict[int, str]


class ClusterSpecTypeError(ValueError, TypeError):
    """A value of the wrong type: a ValueError as zmtf documents, and a TypeError as TF raises."""


class AddressError(InvalidArgumentError, ValueError):
    """An address that is no endpoint: InvalidArgumentError as TF's server raises it when it
    starts, and a ValueError as zmtf raised it before."""

    def __init__(self, message: str) -> None:
        super().__init__(None, None, message)


# ---- addresses ---------------------------------------------------------------------------


def _at(where: str) -> str:
    """Prefix an error with the job and task it is about, when known."""
    return f"{where}: " if where else ""


def _check_host_port(host_port: str, address: str, where: str) -> tuple[str, int]:
    """Split "host:port", checking the host's characters and the port's range."""
    host, sep, port_text = host_port.rpartition(":")
    if not sep or not host:
        missing = "port" if not sep else "host"
        raise AddressError(f"{_at(where)}address {address!r} has no {missing}: write it as "
                           f"{_ADDRESS_FORMS}")
    if not _HOST.match(host):
        raise AddressError(
            f"{_at(where)}host {host!r} in address {address!r} is not a hostname or IP address; "
            "write IPv6 hosts in brackets, as in '[::1]:2222'"
        )
    if host.startswith("["):
        _check_ipv6(host, address, where)
    if not (port_text.isascii() and port_text.isdigit() and 0 <= int(port_text) <= 65535):
        raise AddressError(
            f"{_at(where)}port {port_text!r} in address {address!r} must be an integer "
            "in 1..65535 (or 0: a server picks a free port)"
        )
    return host, int(port_text)


def _check_ipv6(host: str, address: str, where: str) -> None:
    """Reject a bracketed host that is not an IPv6 address."""
    try:
        ipaddress.IPv6Address(host[1:-1])
    except ValueError:
        raise AddressError(
            f"{_at(where)}host {host!r} in address {address!r} is not a valid IPv6 address"
        ) from None


def _check_address_type(address: object, where: str) -> str:
    """An address must be a string (bytes are decoded, as TF's as_bytes takes them)."""
    if isinstance(address, bytes):
        return address.decode("utf-8", "replace")
    if not isinstance(address, str):
        hint = "; for a sparse job use a dict {task_index: address}" if address is None else ""
        raise ClusterSpecTypeError(
            f"{_at(where)}address {address!r} must be a string, {_ADDRESS_FORMS}{hint}"
        )
    return address


def _parse_address(address: object, where: str = "") -> str:
    """Check one task address and return the zmq endpoint it stands for."""
    address = _check_address_type(address, where)
    if address.startswith(_TCP):
        _check_host_port(address[len(_TCP):], address, where)
        return address
    for scheme in _PATH_SCHEMES:
        if address.startswith(scheme):
            if len(address) == len(scheme):
                raise AddressError(f"{_at(where)}address {address!r} names no {scheme[:-3]} path")
            return address
    if "://" in address:
        scheme = address.split("://", 1)[0]
        raise AddressError(
            f"{_at(where)}address {address!r} uses the unsupported scheme {scheme!r}; "
            f"write it as {_ADDRESS_FORMS}"
        )
    _check_host_port(address, address, where)
    return _TCP + address


def endpoint(address: str) -> str:
    """Return the zmq endpoint to connect to: "127.0.0.1:2222" -> "tcp://127.0.0.1:2222"."""
    return _parse_address(address)


def bound_address(address: str, bound: str) -> str:
    """``address`` with the port the server really bound when it asked for port 0, written
    as the user wrote it ("localhost:0" -> "localhost:40123"); otherwise ``address``."""
    url = _parse_address(address)
    if not url.startswith(_TCP) or not url.endswith(":0") or not bound.startswith(_TCP):
        return address
    return f"{address[:-2]}:{bound.rpartition(':')[2]}"


def _is_bindable_host(host: str) -> bool:
    """Tell whether zmq can bind host as written: an IP address or localhost."""
    if host.startswith("[") or host in _LOCAL_HOSTNAMES:
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def tasks_on_this_machine(cluster: ClusterSpec) -> int:
    """How many of the cluster's tasks name this machine in their address (a loopback host,
    this machine's host name, or an ipc/inproc path): they share its cores. Addresses of
    other names count as elsewhere, so a guess can only err towards TF's own default."""
    name = socket.gethostname().lower()   # no DNS look-up: a server's start must not wait on one
    count = 0
    for _, _, address in cluster.all_tasks():
        url = _parse_address(address)
        if not url.startswith(_TCP):
            count += 1
            continue
        host = url[len(_TCP):].rpartition(":")[0].strip("[]").lower()
        try:
            count += ipaddress.ip_address(host).is_loopback
        except ValueError:
            count += host in _LOCAL_HOSTNAMES or host == name
    return count


def bind_endpoint(address: str) -> str:
    """Return the endpoint a server binds: a DNS name binds every interface, "tcp://*:port"."""
    # NOTE: zmq binds interfaces, not names; "machine-a.example.com:2222" resolves to this
    # machine only from outside, so the server listens on all interfaces instead.
    url = _parse_address(address)
    if not url.startswith(_TCP):
        return url
    host, port = _check_host_port(url[len(_TCP):], address, "")
    return url if _is_bindable_host(host) else f"{_TCP}*:{port}"


# ---- validating a cluster dict -----------------------------------------------------------


def _check_job_name(job: object) -> str:
    """Check a job name against TF's grammar: a letter, then letters, digits or '_'."""
    if not isinstance(job, str):
        raise ClusterSpecTypeError(f"Job name {job!r} must be a string, e.g. 'ps' or 'worker'")
    if not _JOB_NAME.match(job):
        raise ValueError(
            f"Job name {job!r} is not valid; it must start with a letter and contain only "
            "letters, digits and '_' (e.g. 'ps', 'worker', 'chief')"
        )
    return job


def _check_task_index(index: object, where: str) -> int:
    """Check a task index; strings of digits (JSON keys) count as integers, as TF's int() does."""
    if isinstance(index, int) and not isinstance(index, bool) and index >= 0:
        return index
    if isinstance(index, str) and index.isascii() and index.isdigit():
        return int(index)
    raise ClusterSpecTypeError(f"{where}: task index {index!r} must be a non-negative integer")


def _indexed_tasks(job: str, tasks: object) -> Iterable[tuple[int, object]]:
    """Pair each task with its index, for both the dense (list) and sparse (dict) forms."""
    if isinstance(tasks, (list, tuple)):
        return enumerate(tasks)
    if isinstance(tasks, Mapping):
        where = f"job {job!r}"
        return ((_check_task_index(index, where), address) for index, address in tasks.items())
    hint = "; wrap a single address in a list" if isinstance(tasks, str) else ""
    raise ClusterSpecTypeError(
        f"The tasks for job {job!r} must be a list of addresses or a dict from task index "
        f"to address, got {type(tasks).__name__} {tasks!r}{hint}"
    )


def _job_tasks(job: str, tasks: object) -> dict[int, str]:
    """Validate one job's tasks into {task_index: address}, sorted by index."""
    result: dict[int, str] = {}
    for index, address in _indexed_tasks(job, tasks):
        if index in result:
            raise ValueError(f"job {job!r}: task index {index} is given twice")
        result[index] = _check_address_type(address, f"/job:{job}/task:{index}")
    return dict(sorted(result.items()))


def _same_endpoint_key(address: str) -> str | None:
    """What two addresses of one endpoint share; None for port 0 (each server picks its own
    port) and for a malformed address (its server reports it when it starts)."""
    try:
        url = endpoint(address)
    except AddressError:
        return None
    return None if url.startswith(_TCP) and url.endswith(":0") else url


def check_addresses(cluster: ClusterSpec) -> None:
    """Check every address of the cluster (a server does, when it starts: TF's rule), so the
    InvalidArgumentError names the first task whose address is no endpoint."""
    for job, index, address in cluster.all_tasks():
        _parse_address(address, f"/job:{job}/task:{index}")


def _check_unique_addresses(cluster: Mapping[str, Mapping[int, str]]) -> None:
    """Reject two tasks on one endpoint: the second server could never bind it."""
    owners: dict[str, str] = {}
    for job, tasks in cluster.items():
        for index, address in tasks.items():
            task = f"/job:{job}/task:{index}"
            key = _same_endpoint_key(address)
            if key is None:
                continue
            first = owners.setdefault(key, task)
            if first != task:
                raise ValueError(
                    f"Address {address!r} is used by both {first} and {task}; "
                    "give each task its own host:port"
                )


def _normalize(cluster: object) -> dict[str, dict[int, str]]:
    """Turn any accepted cluster form into {job: {task_index: address}}, sorted, validated."""
    if isinstance(cluster, ClusterSpec):
        return {job: dict(tasks) for job, tasks in cluster._tasks.items()}
    if isinstance(cluster, ClusterDef):
        cluster = _cluster_def_jobs(cluster)
    if not isinstance(cluster, Mapping):
        raise ClusterSpecTypeError(
            "`cluster` must be a dict mapping job names to lists of addresses (or to "
            "{task_index: address} dicts), a tf.train.ClusterDef or a ClusterSpec; got "
            f"{type(cluster).__name__}"
        )
    tasks_by_job = {_check_job_name(job): _job_tasks(job, tasks) for job, tasks in cluster.items()}
    _check_unique_addresses(tasks_by_job)
    return dict(sorted(tasks_by_job.items()))


def _cluster_def_jobs(cluster_def: ClusterDef) -> dict[str, dict[int, str]]:
    """A ClusterDef's jobs as {job: {task_index: address}}; a job named twice is an error."""
    jobs: dict[str, dict[int, str]] = {}
    for job in cluster_def.job:
        if job.name in jobs:
            raise ValueError(f"ClusterDef names job {job.name!r} twice; list each job once")
        jobs[job.name] = dict(job.tasks)
    return jobs


# ---- JSON and TF_CONFIG --------------------------------------------------------------------


def _read_json(text_or_path: str | os.PathLike[str], source: str) -> Any:
    """Parse JSON text, or the JSON file that the argument names."""
    if isinstance(text_or_path, os.PathLike) or not text_or_path.lstrip().startswith(("{", "[")):
        path = os.fspath(text_or_path)
        if not os.path.isfile(path):
            raise ValueError(
                f"{source}: {path!r} is neither JSON text nor the path of an existing file"
            )
        with open(path, encoding="utf-8") as handle:
            text, source = handle.read(), f"{source} ({path})"
    else:
        text = text_or_path
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{source} is not valid JSON: {error}") from None


def tf_config_from_env() -> Mapping[str, Any]:
    """The TF_CONFIG environment variable as an object, read now; {} when it is unset or blank.

    Cluster resolvers call this on every query, as TF's do, so a changed TF_CONFIG is seen.
    """
    value = os.environ.get(_TF_CONFIG_ENV, "")
    return _load_tf_config(value, _ENV_SOURCE) if value.strip() else {}


def _load_tf_config(value: str | Mapping[str, Any] | None,
                    source: str = "TF_CONFIG") -> Mapping[str, Any]:
    """Get the TF_CONFIG object from value, or from the environment when value is None."""
    if value is None:
        value = os.environ.get(_TF_CONFIG_ENV, "")
        if not value.strip():
            raise ValueError(
                f"The {_TF_CONFIG_ENV} environment variable is not set; set it to JSON such as "
                f"{_TF_CONFIG_EXAMPLE}, or pass the cluster explicitly"
            )
        source = _ENV_SOURCE
    config = value if isinstance(value, Mapping) else _read_json(value, source)
    if not isinstance(config, Mapping):
        raise ValueError(f"{source} must be a JSON object such as {_TF_CONFIG_EXAMPLE}")
    return config


def _task_type(task: Mapping[str, Any]) -> str | None:
    """Read TF_CONFIG's task type, a job name."""
    task_type = task.get("type")
    if task_type is None:
        return None
    if not isinstance(task_type, str) or not task_type:
        raise ValueError(f"TF_CONFIG task type {task_type!r} must be a job name such as 'worker'")
    return task_type


def _task_index(task: Mapping[str, Any]) -> int | None:
    """Read TF_CONFIG's task index; a string of digits counts, as TF's int() accepts it."""
    index = task.get("index")
    return None if index is None else _check_task_index(index, "TF_CONFIG task")


def tf_config_task(task: object) -> tuple[str | None, int | None]:
    """Read TF_CONFIG's "task" object: (type, index), None for what it leaves out."""
    if task is None:
        return None, None
    if not isinstance(task, Mapping):
        raise ClusterSpecTypeError(
            f"TF_CONFIG 'task' must be an object such as {{\"type\": \"worker\", \"index\": 0}}, "
            f"got {task!r}"
        )
    return _task_type(task), _task_index(task)


def _read_task(task: object, cluster: ClusterSpec) -> tuple[str | None, int | None]:
    """Read TF_CONFIG's "task" and check that it names a task of the cluster."""
    task_type, task_index = tf_config_task(task)
    if task_type is None or not cluster or task_type in _TASKS_OUTSIDE_CLUSTER:
        return task_type, task_index
    if task_type not in cluster.jobs:
        raise ValueError(
            f"TF_CONFIG task type {task_type!r} is not a job of its cluster, which has jobs "
            f"{cluster.jobs}; fix 'task' or add the job to 'cluster'"
        )
    if task_index is not None:
        cluster.task_address(task_type, task_index)  # raises, naming the tasks that exist
    return task_type, task_index


def _is_tf_config_shaped(document: Mapping[str, Any]) -> bool:
    """Tell a TF_CONFIG object from a plain cluster dict (which might have a job "cluster")."""
    cluster = document.get("cluster")
    return (
        isinstance(cluster, Mapping)
        and set(document) <= _TF_CONFIG_KEYS
        and all(isinstance(tasks, (list, Mapping)) for tasks in cluster.values())
    )


# ---- ClusterSpec ---------------------------------------------------------------------------


class ClusterSpec:
    """A cluster as jobs of tasks: ``ClusterSpec({"ps": ["127.0.0.1:2221"], "worker": [...]})``.

    A job may also be sparse, ``{"worker": {1: "10.0.0.6:2222"}}``, so that a task need not
    know every other task. Immutable once built; unhashable, as in TF.
    """

    __slots__ = ("_tasks",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, cluster: ClusterSpec | ClusterDef | Mapping[str, Any]) -> None:
        self._tasks: dict[str, dict[int, str]] = _normalize(cluster)

    def with_address(self, job_name: str, task_index: int, address: str) -> ClusterSpec:
        """A copy in which one task has another address (a server that bound port 0)."""
        self.task_address(job_name, task_index)   # raises, naming the tasks that exist
        tasks = {job: dict(addresses) for job, addresses in self._tasks.items()}
        tasks[job_name][task_index] = address
        return ClusterSpec(tasks)

    @classmethod
    def from_json(cls, text_or_path: str | os.PathLike[str]) -> ClusterSpec:
        """Load a cluster from JSON text or a JSON file: a cluster dict or a TF_CONFIG object."""
        document = _read_json(text_or_path, "ClusterSpec.from_json")
        if isinstance(document, Mapping) and _is_tf_config_shaped(document):
            document = document["cluster"]
        return cls(document)

    @classmethod
    def from_tf_config(
        cls, value: str | Mapping[str, Any] | None = None
    ) -> tuple[ClusterSpec, str | None, int | None]:
        """Read TF_CONFIG (the env var when value is None): (cluster, task type, task index)."""
        config = _load_tf_config(value)
        cluster = cls(config.get("cluster") or {})
        task_type, task_index = _read_task(config.get("task"), cluster)
        return cluster, task_type, task_index

    # ---- TF's API ------------------------------------------------------------------------

    @property
    def jobs(self) -> list[str]:
        """The job names, sorted."""
        return list(self._tasks)

    def _job(self, job_name: str) -> dict[int, str]:
        """Look a job up; the error lists the jobs that do exist."""
        try:
            return self._tasks[job_name]
        except (KeyError, TypeError):
            raise ValueError(
                f"No such job in cluster: {job_name!r}; the cluster has jobs {self.jobs}"
            ) from None

    def num_tasks(self, job_name: str) -> int:
        """How many tasks the job has (a sparse job counts only the tasks it lists)."""
        return len(self._job(job_name))

    def task_indices(self, job_name: str) -> list[int]:
        """The job's task indices, sorted."""
        return list(self._job(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        """The address of one task, as it was given."""
        tasks = self._job(job_name)
        try:
            return tasks[task_index]
        except (KeyError, TypeError):
            raise ValueError(
                f"No task with index {task_index!r} in job {job_name!r}; its tasks are "
                f"{list(tasks)}"
            ) from None

    def job_tasks(self, job_name: str) -> list[str | None]:
        """The job's addresses by task index, with None where a sparse job has no task."""
        tasks = self._job(job_name)
        size = max(tasks, default=-1) + 1
        return [tasks.get(index) for index in range(size)]

    def as_cluster_def(self) -> ClusterDef:
        """The cluster as a ``tf.train.ClusterDef`` message, jobs and tasks sorted (as TF)."""
        cluster_def = ClusterDef()
        for job, tasks in self._tasks.items():
            cluster_def.job.add(name=job, tasks=tasks)
        return cluster_def

    def as_dict(self) -> dict[str, JobTasks]:
        """Return {job: [addresses]}, or {job: {task_index: address}} for a sparse job (TF)."""
        result: dict[str, JobTasks] = {}
        for job, tasks in self._tasks.items():
            dense = list(tasks) == list(range(len(tasks)))
            result[job] = list(tasks.values()) if dense and tasks else dict(tasks)
        return result

    # ---- zmtf's additions ----------------------------------------------------------------

    def all_tasks(self) -> list[tuple[str, int, str]]:
        """Every task as (job, task_index, address), by job then index."""
        return [(job, index, address) for job, tasks in self._tasks.items()
                for index, address in tasks.items()]

    def device_name(self, job_name: str, task_index: int) -> str:
        """The task's device prefix, "/job:ps/replica:0/task:0"; the task must exist."""
        self.task_address(job_name, task_index)
        return DeviceSpec(job=job_name, replica=0, task=task_index).to_string()

    # ---- comparison and display ----------------------------------------------------------

    def __bool__(self) -> bool:
        return bool(self._tasks)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ClusterSpec):
            return self._tasks == other._tasks
        if isinstance(other, Mapping):
            try:
                return self._tasks == _normalize(other)
            except ValueError:
                return False
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __repr__(self) -> str:
        items = ", ".join(f"{job!r}: {tasks!r}" for job, tasks in self.as_dict().items())
        return f"ClusterSpec({{{items}}})"
