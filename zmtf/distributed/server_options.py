"""zmtf's own server settings: one declaration per setting, read by both of its faces.

TF's ``ConfigProto`` carries what TF1 has (thread pools, ``operation_timeout_in_ms``);
what zmtf adds (session collection, waiting for late tasks, CURVE keys, ...) is declared
here once, with its default and its help. ``tf.train.Server(..., name=value)`` takes the
fields as keyword arguments, and ``python -m zmtf.server`` makes one ``--name`` flag per
field from the same declaration, so the two cannot drift apart. This module imports
nothing heavy: the CLI's ``--help`` answers before numba or zmq load.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any

from zmtf.placement.op_policy import allowed_names

DEFAULT_SESSION_GC_SECS = 3600.0   # an hour without a request: a client would have sent one
DEFAULT_WAIT_SECS = 600.0          # as long as a step without a client deadline may take
DEFAULT_LOG_SECS = 10.0            # TF1's interval between "still waiting" lines
DEFAULT_HANDSHAKE_SECS = 5.0       # a peer on a LAN finishes the ZeroMQ handshake in milliseconds
DEFAULT_MAX_CONNECTIONS = 512      # half of the usual 1024-descriptor limit (ulimit -n)
DEFAULT_SESSIONS_PER_CLIENT = 64   # a client holds a few; a leak or a flood holds thousands


def _setting(default: Any, help: str, metavar: str | None = None, env: str | None = None) -> Any:
    """A field with its flag's help; ``env`` names the environment variable that sets it when
    the server's own arguments leave it at its default."""
    return field(default=default, metadata={"help": help, "metavar": metavar, "env": env})


_TRUE = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True)
class ServerOptions:
    """A server's zmtf settings (TF1's own ones stay in ``ConfigProto``)."""

    curve_dir: str | None = _setting(
        None, "the cluster's CURVE key directory (python -m zmtf.keys init DIR makes one): "
        "encrypt, and admit only its task and client keys (default: ZMTF_CURVE_DIR)", "DIR")
    session_gc_secs: float = _setting(
        DEFAULT_SESSION_GC_SECS, "close a session whose client sent no request for this long, "
        "and free its partitions on every task (0: never)", "SECONDS")
    wait_for_tasks_secs: float = _setting(
        DEFAULT_WAIT_SECS, "how long a step's first run waits for tasks it needs that have not "
        "started yet (a client's deadline bounds it too)", "SECONDS")
    wait_log_secs: float = _setting(
        DEFAULT_LOG_SECS, "log the tasks still waited for this often", "SECONDS")
    # ---- op policy for graphs from the network (placement/op_policy.py) ----
    allow_ops: str | None = _setting(
        None, "ops to run for graphs from the network although the op policy refuses them "
        "(file ops, Print, py_func): comma-separated op names, or 'all' (default: "
        "ZMTF_ALLOW_OPS)", "OPS", env="ZMTF_ALLOW_OPS")
    file_root: str | None = _setting(
        None, "allow file ops (ReadFile, readers, file datasets, ...) in graphs from the network "
        "on paths under DIR only, symlinks and '..' resolved (default: ZMTF_FILE_ROOT)", "DIR",
        env="ZMTF_FILE_ROOT")
    allow_reset: bool = _setting(
        False, "let clients call Session.reset, which clears every variable of the cluster "
        "(default: ZMTF_ALLOW_RESET=1)", env="ZMTF_ALLOW_RESET")
    # ---- binding and connections (issue 31: bind) ----
    insecure: bool = _setting(
        False, "serve a non-loopback address without CURVE keys: anyone who reaches the port may "
        "run any op on this server (refused otherwise; also ZMTF_INSECURE=1)", env="ZMTF_INSECURE")
    handshake_timeout_secs: float = _setting(
        DEFAULT_HANDSHAKE_SECS, "close a connection that has not finished the ZeroMQ handshake "
        "(greeting, CURVE) after this long (0: libzmq's 30 s)", "SECONDS")
    max_connections: int = _setting(
        DEFAULT_MAX_CONNECTIONS, "connections one listener keeps open (at most half of ulimit "
        "-n); beyond it a new one replaces the oldest that has sent no request, else is closed "
        "at once (0: no cap)", "N")
    # ---- identities (CURVE keys per task and client) ----
    curve_key: str | None = _setting(
        None, "this task's own CURVE credential, made by python -m zmtf.keys add-task (default: "
        "DIR.private/tasks/JOB-INDEX.key_secret beside the curve_dir DIR)", "FILE")
    max_sessions_per_client: int = _setting(
        DEFAULT_SESSIONS_PER_CLIENT, "sessions one client key may have open on this master "
        "under CURVE; more are refused with ResourceExhaustedError (task keys: no limit; 0: no "
        "limit)", "N")
    # ---- quotas and log limits (issue 31, items 4 and 6) ----
    max_inflight_bytes: int = _setting(
        0, "refuse (ResourceExhaustedError) a step output or an inbound stream that would take "
        "the bytes held for requests in flight past this (0: half of this machine's memory)",
        "BYTES")
    no_shared_memory: bool = _setting(
        False, "send big tensors to tasks and clients on this machine over tcp, not through "
        "shared memory (for the whole process; also ZMTF_SHARED_MEMORY=0)")
    stream_idle_secs: float = _setting(
        30.0, "drop an inbound stream, and free its buffers, when no part of it came for "
        "this long", "SECONDS")
    max_graph_bytes: int = _setting(
        2 << 30, "refuse a session's graph larger than this, constants included, before "
        "building it (TF1's GraphDef limit is 2 GB; 0: no limit)", "BYTES")
    max_graph_nodes: int = _setting(
        1_000_000, "refuse a session's graph with more nodes than this, before building it "
        "(0: no limit)", "COUNT")
    peer_log_secs: float = _setting(
        60.0, "log a peer-caused error (a malformed message, ...) once per peer and kind this "
        "often; the next line counts the ones held back", "SECONDS")
    # ---- Prometheus metrics (issue 24, item 3: distributed/metrics.py) ----
    metrics_port: int = _setting(
        0, "serve Prometheus metrics (steps, latency, bytes per peer, ...) over HTTP on this "
        "port, at /metrics; no authentication (0: off)", "PORT")
    metrics_address: str = _setting(
        "127.0.0.1", "the address the metrics endpoint binds (anyone who reaches it reads the "
        "metrics: keep it on loopback or a private network)", "ADDRESS")
    # ---- the process (issue 26, item 4: distributed/process_tuning.py) ----
    tune_process: bool = _setting(
        True, "when this process's first server starts, tune the process for serving "
        "(gc.freeze, fewer young-GC passes, glibc keeps freed memory); off: leave the process "
        "as it is (also ZMTF_TUNE_PROCESS=0)", env="ZMTF_TUNE_PROCESS")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(f.default, float):
                if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                    raise ValueError(f"server setting {f.name} must be a number >= 0, not {value!r}")
                object.__setattr__(self, f.name, float(value))
            elif type(f.default) is int and (type(value) is not int or value < 0):
                raise ValueError(f"server setting {f.name} must be an integer >= 0, not {value!r}")
            elif type(f.default) is bool and type(value) is not bool:
                raise ValueError(f"server setting {f.name} must be True or False, not {value!r}")
        if self.metrics_port > 65535:
            raise ValueError(f"server setting metrics_port must be a port number (1-65535, 0: "
                             f"off), not {self.metrics_port}")
        if not isinstance(self.metrics_address, str) or not self.metrics_address:
            raise ValueError(f"server setting metrics_address must be an address to bind, not "
                             f"{self.metrics_address!r}")
        names = allowed_names(self.allow_ops)   # ValueError on a name the policy does not refuse
        object.__setattr__(self, "allow_ops", ",".join(sorted(names)) or None)
        if self.file_root is not None and not isinstance(self.file_root, str):
            raise ValueError(f"server setting file_root must be a folder path, not {self.file_root!r}")


def with_environment(options: ServerOptions, environ: Mapping[str, str]) -> ServerOptions:
    """``options`` with each setting it leaves at its default taken from its environment
    variable, where set (ZMTF_ALLOW_OPS, ZMTF_INSECURE, ...): how a server that a library
    starts (an Estimator's, from TF_CONFIG) is told what its trusted job may do."""
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(options):
        name = f.metadata["env"]
        if name is None or not environ.get(name) or getattr(options, f.name) != f.default:
            continue
        text = environ[name]
        changes[f.name] = text.strip().lower() in _TRUE if type(f.default) is bool else text
    return dataclasses.replace(options, **changes) if changes else options


def add_flags(parser: argparse.ArgumentParser) -> None:
    """One ``--name`` flag per setting, with its default and help."""
    for f in dataclasses.fields(ServerOptions):
        flag = "--" + f.name.replace("_", "-")
        help = f.metadata["help"] + (f" (default: {f.default})" if f.default is not None else "")
        kind = type(f.default) if f.default is not None else str
        if kind is bool and f.default:   # on by default: the flag turns it off
            parser.add_argument("--no-" + f.name.replace("_", "-"), dest=f.name,
                                action="store_false", help=f.metadata["help"])
        elif kind is bool:
            parser.add_argument(flag, action="store_true", help=f.metadata["help"])
        else:
            parser.add_argument(flag, type=kind, default=f.default, help=help,
                                metavar=f.metadata["metavar"])


def from_flags(args: argparse.Namespace) -> ServerOptions:
    """The settings the flags of ``add_flags`` gave."""
    return ServerOptions(**{f.name: getattr(args, f.name) for f in dataclasses.fields(ServerOptions)})
