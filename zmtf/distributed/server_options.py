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
from typing import Any

DEFAULT_SESSION_GC_SECS = 3600.0   # an hour without a request: a client would have sent one
DEFAULT_WAIT_SECS = 600.0          # as long as a step without a client deadline may take
DEFAULT_LOG_SECS = 10.0            # TF1's interval between "still waiting" lines
DEFAULT_SESSIONS_PER_CLIENT = 64   # a client holds a few; a leak or a flood holds thousands


def _setting(default: Any, help: str, metavar: str | None = None) -> Any:
    return field(default=default, metadata={"help": help, "metavar": metavar})


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
    # ---- identities (CURVE keys per task and client) ----
    curve_key: str | None = _setting(
        None, "this task's own CURVE credential, made by python -m zmtf.keys add-task (default: "
        "DIR.private/tasks/JOB-INDEX.key_secret beside the curve_dir DIR)", "FILE")
    max_sessions_per_client: int = _setting(
        DEFAULT_SESSIONS_PER_CLIENT, "sessions one client key may have open on this master "
        "under CURVE; more are refused with ResourceExhaustedError (task keys: no limit; 0: no "
        "limit)", "N")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(f.default, float):
                if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                    raise ValueError(f"server setting {f.name} must be a number >= 0, not {value!r}")
                object.__setattr__(self, f.name, float(value))


def add_flags(parser: argparse.ArgumentParser) -> None:
    """One ``--name`` flag per setting, with its default and help."""
    for f in dataclasses.fields(ServerOptions):
        flag = "--" + f.name.replace("_", "-")
        help = f.metadata["help"] + (f" (default: {f.default})" if f.default is not None else "")
        kind = type(f.default) if f.default is not None else str
        if kind is bool:
            parser.add_argument(flag, action="store_true", help=f.metadata["help"])
        else:
            parser.add_argument(flag, type=kind, default=f.default, help=help,
                                metavar=f.metadata["metavar"])


def from_flags(args: argparse.Namespace) -> ServerOptions:
    """The settings the flags of ``add_flags`` gave."""
    return ServerOptions(**{f.name: getattr(args, f.name) for f in dataclasses.fields(ServerOptions)})
