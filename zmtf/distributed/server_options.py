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
    # ---- quotas and log limits (issue 31, items 4 and 6) ----
    max_inflight_bytes: int = _setting(
        0, "refuse (ResourceExhaustedError) a step output or an inbound stream that would take "
        "the bytes held for requests in flight past this (0: half of this machine's memory)",
        "BYTES")
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

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(f.default, float):
                if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                    raise ValueError(f"server setting {f.name} must be a number >= 0, not {value!r}")
                object.__setattr__(self, f.name, float(value))
            elif type(f.default) is int:
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ValueError(f"server setting {f.name} must be an int >= 0, not {value!r}")


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
