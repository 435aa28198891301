"""RunMetadata's step stats across processes: NodeTrace <-> plain maps for the wire.

A traced step's partitions each record a NodeTrace per node run (``Executor.run(trace=)``,
times from ``time.perf_counter``). To travel to the master and the client they become
plain maps with wall-clock times (``perf_counter`` has a different origin in every
process; the wall clock is common to the tasks of one machine, and NTP-close across
machines). A map from the network is checked before it becomes a NodeTrace again.
"""

from __future__ import annotations

import math
import time
from typing import Any

from zmtf.framework.errors import InvalidArgumentError
from zmtf.runtime.executor import NodeTrace

#: perf_counter -> wall clock in this process (the local session's step stats add it)
WALL_OFFSET = time.time() - time.perf_counter()
_TEXT_KEYS = ("node", "device", "thread")
_KEYS = frozenset({*_TEXT_KEYS, "start", "end"})
#: optional: a _Send's/_Recv's "bytes"; a remote task's RunGraph span: "offset", "bound" (s);
#: a fused node's "label" (its ops)
_OPTIONAL = frozenset({"bytes", "offset", "bound", "label"})


def to_plain(traces: list[Any]) -> list[dict[str, Any]]:
    """NodeTraces (this process's clock) or maps already plain -> maps with wall-clock times."""
    out = []
    for t in traces:
        if isinstance(t, dict):
            out.append(t)
            continue
        item = {"node": t.node_name, "device": t.device, "thread": t.thread,
                "start": t.start + WALL_OFFSET, "end": t.end + WALL_OFFSET}
        if t.bytes:
            item["bytes"] = t.bytes
        if getattr(t, "label", ""):
            item["label"] = t.label
        out.append(item)
    return out


def wall_now() -> float:
    """This process's wall clock as to_plain() states it (perf_counter-based, so monotone)."""
    return time.perf_counter() + WALL_OFFSET


def from_plain(items: Any, source: str) -> list[NodeTrace]:
    """Checked maps from ``source`` -> NodeTraces (wall-clock times)."""
    if not isinstance(items, list):
        raise InvalidArgumentError(None, None, f"step stats from {source} must be a list")
    traces = []
    for k, item in enumerate(items):
        if not isinstance(item, dict) or not _KEYS <= item.keys() or not item.keys() <= _KEYS | _OPTIONAL:
            raise InvalidArgumentError(None, None, f"step stat {k} from {source} must be a map "
                                       f"with the keys {sorted(_KEYS)} (and optionally "
                                       f"{sorted(_OPTIONAL)})")
        if not all(type(item[key]) is str for key in _TEXT_KEYS):
            raise InvalidArgumentError(None, None, f"step stat {k} from {source}: node, device "
                                       f"and thread must be strings")
        start, end = item["start"], item["end"]
        if not all(type(v) in (int, float) and math.isfinite(v) for v in (start, end)) or end < start:
            raise InvalidArgumentError(None, None, f"step stat {k} from {source}: start and end "
                                       f"must be finite seconds, end >= start")
        size = item.get("bytes", 0)
        if type(size) is not int or size < 0:
            raise InvalidArgumentError(None, None, f"step stat {k} from {source}: bytes must be "
                                       f"an int >= 0")
        clock = None
        if "offset" in item or "bound" in item:
            offset: Any = item.get("offset")
            bound: Any = item.get("bound")
            if not all(type(v) in (int, float) and math.isfinite(v) for v in (offset, bound)) or bound < 0:
                raise InvalidArgumentError(None, None, f"step stat {k} from {source}: offset "
                                           f"and bound must be finite seconds, bound >= 0")
            clock = (float(offset), float(bound))
        label = item.get("label", "")
        if type(label) is not str:
            raise InvalidArgumentError(None, None, f"step stat {k} from {source}: label must be a string")
        traces.append(NodeTrace(item["node"], item["device"], float(start), float(end), item["thread"],
                                size, clock, label))
    return traces
