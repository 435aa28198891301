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


def _setting(default: Any, help: str, metavar: str | None = None) -> Any:
    return field(default=default, metadata={"help": help, "metavar": metavar})


@dataclass(frozen=True)
class ServerOptions:
    """A server's zmtf settings (TF1's own ones stay in ``ConfigProto``)."""

    curve_dir: str | None = _setting(
        None, "the cluster's CURVE key directory (python -m zmtf.keys DIR makes one): encrypt, "
        "and admit only its keys (default: ZMTF_CURVE_DIR)", "DIR")
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
        "ZMTF_ALLOW_OPS)", "OPS")
    file_root: str | None = _setting(
        None, "allow file ops (ReadFile, readers, file datasets, ...) in graphs from the network "
        "on paths under DIR only, symlinks and '..' resolved (default: ZMTF_FILE_ROOT)", "DIR")
    allow_reset: bool = _setting(
        False, "let clients call Session.reset, which clears every variable of the cluster "
        "(default: ZMTF_ALLOW_RESET=1)")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(f.default, float):
                if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                    raise ValueError(f"server setting {f.name} must be a number >= 0, not {value!r}")
                object.__setattr__(self, f.name, float(value))
        names = allowed_names(self.allow_ops)   # ValueError on a name the policy does not refuse
        object.__setattr__(self, "allow_ops", ",".join(sorted(names)) or None)
        if self.file_root is not None and not isinstance(self.file_root, str):
            raise ValueError(f"server setting file_root must be a folder path, not {self.file_root!r}")


def with_environment(options: ServerOptions, environ: Mapping[str, str]) -> ServerOptions:
    """The op policy's settings that ``options`` leaves unset, from ZMTF_ALLOW_OPS,
    ZMTF_FILE_ROOT and ZMTF_ALLOW_RESET: how a server that a library starts (an Estimator's,
    from TF_CONFIG) is told what its trusted job may do."""
    return dataclasses.replace(
        options, allow_ops=options.allow_ops or environ.get("ZMTF_ALLOW_OPS") or None,
        file_root=options.file_root or environ.get("ZMTF_FILE_ROOT") or None,
        allow_reset=options.allow_reset or environ.get("ZMTF_ALLOW_RESET") == "1")


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
