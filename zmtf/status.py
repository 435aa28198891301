"""``python -m zmtf.status``: which tasks of a cluster are up, and how busy each one is.

    python -m zmtf.status --cluster '{"ps": ["10.0.0.1:2222"], "worker": ["10.0.0.2:2222"]}'
    python -m zmtf.status --cluster cluster.json --watch 2
    TF_CONFIG='{"cluster": {...}}' python -m zmtf.status --json

Exit status: 0 when every task answered, 1 when any is down (or refused this key), 2 on a
usage error: a health probe. Under CURVE it connects with the client key of ZMTF_CURVE_KEY.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

# The runtime (zmq) loads after the flags are parsed, so that --help answers at once.
if TYPE_CHECKING:
    from zmtf.distributed.cluster_spec import ClusterSpec
    from zmtf.distributed.status_probe import Probe

DEFAULT_TIMEOUT = 2.0    # seconds each task is given to answer
DEFAULT_WATCH = 2.0      # seconds between refreshes of --watch
CLEAR = "\x1b[H\x1b[2J"  # ANSI: cursor home, clear screen
ERROR_CHARS = 200        # what a row's reason keeps of an error's text


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m zmtf.status", description="Which tasks of a cluster are up, and how busy each one is.",
        epilog="Exit status: 0 all tasks up, 1 a task down or refusing this key, 2 usage error.")
    parser.add_argument("--cluster", help="cluster spec: JSON text or a JSON file (default: "
                        "TF_CONFIG's cluster)")
    parser.add_argument("--timeout", type=_positive, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help="how long each task is given to answer; tasks are asked at once "
                        f"(default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--watch", type=_positive, nargs="?", const=DEFAULT_WATCH,
                        metavar="SECONDS", help="redraw the report every SECONDS (default "
                        f"{DEFAULT_WATCH:g}) until Ctrl-C; exits with the last report's status")
    parser.add_argument("--json", action="store_true",
                        help="print JSON for scripts (with --watch: one document per line)")
    parser.add_argument("--curve-key", metavar="FILE", help="the client credential to connect "
                        "with under CURVE (default: ZMTF_CURVE_KEY)")
    return parser.parse_args(argv)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return value


def load_cluster(flag: str | None) -> ClusterSpec:
    """The cluster of --cluster, else TF_CONFIG's; ValueError naming what to give."""
    from zmtf.distributed.cluster_spec import ClusterSpec

    cluster = ClusterSpec.from_json(flag) if flag else ClusterSpec.from_tf_config()[0]
    if not cluster:
        raise ValueError("no cluster to ask: give --cluster JSON|FILE or set TF_CONFIG")
    return cluster


class History:
    """What this run has seen of each task: when it last answered, and the first probe that
    failed since. A task's real moment of failure is unknown to an observer; "down since"
    is the first probe of this run that could not reach it (the last answer bounds it)."""

    def __init__(self) -> None:
        self.last_up: dict[str, float] = {}
        self.first_failed: dict[str, float] = {}

    def record(self, probes: list[Probe]) -> None:
        for probe in probes:
            if probe.state == "up":
                self.last_up[probe.task] = probe.at
                self.first_failed.pop(probe.task, None)
            else:
                self.first_failed.setdefault(probe.task, probe.at)


def as_json(probes: list[Probe], history: History, at: float) -> dict[str, Any]:
    """The report as plain data: one map per task, its reply's fields when it is up."""
    tasks = []
    for probe in probes:
        row: dict[str, Any] = {"task": probe.task, "address": probe.address, "state": probe.state}
        if probe.status is not None:
            s = probe.status
            row.update(started_at=_iso(s.started_ms / 1000), uptime_s=s.uptime_ms / 1000,
                       endpoint=s.address, devices=s.devices, sessions=s.sessions,
                       steps_running=s.steps_running, steps=s.steps, graphs=s.graphs,
                       steps_per_sec=s.steps_per_sec, graphs_per_sec=s.graphs_per_sec,
                       rate_window_s=s.window_ms / 1000, bytes_in=s.bytes_in,
                       bytes_out=s.bytes_out, messages_in=s.messages_in,
                       messages_out=s.messages_out, rss_bytes=s.rss_bytes, version=s.version)
        else:
            last_up = history.last_up.get(probe.task)
            row.update(error=probe.error,
                       first_failed_at=_iso(history.first_failed.get(probe.task, probe.at)),
                       last_up_at=_iso(last_up) if last_up is not None else None)
        tasks.append(row)
    return {"checked_at": _iso(at), "healthy": _healthy(probes), "tasks": tasks}


_COLUMNS = ("TASK", "STATE", "ADDRESS", "DEVICES", "SESSIONS", "STEPS/S", "GRAPHS/S", "IN",
            "OUT", "RSS", "VERSION")


def as_table(probes: list[Probe], history: History, at: float) -> str:
    """The report for people: a header line, one row per task, then why each down task is."""
    counts = {state: sum(p.state == state for p in probes) for state in ("up", "down", "refused")}
    rows = [list(_COLUMNS)]
    for probe in probes:
        task = _short_task(probe.task)
        s = probe.status
        if s is None:
            rows.append([task, probe.state, probe.address] + ["-"] * (len(_COLUMNS) - 3))
            continue
        rows.append([task, f"up {_duration(s.uptime_ms / 1000)}", probe.address,
                     ",".join(d.rpartition("/device:")[2] for d in s.devices) or "-",
                     f"{s.sessions}", f"{s.steps_per_sec:.1f}", f"{s.graphs_per_sec:.1f}",
                     _bytes(s.bytes_in), _bytes(s.bytes_out), _bytes(s.rss_bytes), s.version])
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    summary = ", ".join(f"{n} {state}" for state, n in counts.items() if n or state == "up")
    lines = [f"zmtf cluster status at {_clock(at)}: {len(probes)} task(s), {summary}",
             *("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)]
    for probe in probes:
        if probe.state != "up":
            lines.append(f"{_short_task(probe.task)} {probe.state}{_since(probe, history)}: "
                         f"{(probe.error or '')[:ERROR_CHARS]}")
    return "\n".join(lines)


def _since(probe: Probe, history: History) -> str:
    """Since when a task is not up, as far as this run knows (nothing to say on its first
    probe: when it went down is unknown to an observer that never saw it up)."""
    since = history.first_failed.get(probe.task, probe.at)
    last_up = history.last_up.get(probe.task)
    if since == probe.at and last_up is None:
        return ""
    seen = f"; last answered {_clock(last_up)}" if last_up is not None else ""
    return f" since {_clock(since)} (first failed probe of this watch{seen})"


def _healthy(probes: list[Probe]) -> bool:
    return all(p.state == "up" for p in probes)


def _short_task(task: str) -> str:
    return task.replace("/replica:0", "")


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds % 1 * 1000):03d}Z"


def _clock(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def _duration(seconds: float) -> str:
    s = int(seconds)
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days}d{hours}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{s:02d}s" if minutes else f"{s}s"


def _bytes(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from zmtf.distributed import security
    from zmtf.distributed.status_probe import probe_cluster
    from zmtf.framework.errors import OpError

    try:
        cluster = load_cluster(args.cluster)
        keys = security.read_credential(args.curve_key) if args.curve_key else \
            security.client_credential()
    except (ValueError, OSError) as error:
        print(f"zmtf.status: {error}", file=sys.stderr)
        return 2
    except OpError as error:
        print(f"zmtf.status: {error.message}", file=sys.stderr)
        return 2
    history = History()
    probes: list[Probe] | None = None   # the last report's
    redraw = args.watch is not None and not args.json and sys.stdout.isatty()
    try:
        while True:
            started = time.time()
            probes = probe_cluster(cluster, args.timeout, keys)
            history.record(probes)
            if args.json:
                report = json.dumps(as_json(probes, history, started),
                                    indent=None if args.watch else 2)
            else:
                report = as_table(probes, history, started)
            print((CLEAR if redraw else "") + report, flush=True)
            if args.watch is None:
                break
            if not redraw and not args.json:
                print(flush=True)   # a blank line between reports when not on a terminal
            time.sleep(max(0.0, started + args.watch - time.time()))
    except KeyboardInterrupt:
        pass
    return 0 if probes is not None and _healthy(probes) else 1


if __name__ == "__main__":
    sys.exit(main())
