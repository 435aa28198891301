"""Session.partial_run_setup / partial_run: one step fed and fetched over several calls.

zmtf runs each call as an ordinary step of the session (local or remote) that is fed every
value given so far plus the values fetched so far: a fetched tensor is not computed again,
so a later fetch that depends on it sees the very value the caller got. The rules are
TF1's: feeds and fetches must be named at setup, each fed once and fetched once
(InvalidArgumentError otherwise). One difference: an intermediate tensor that was never
fetched is computed again by each call that needs it (TF1 computes it once per partial run).
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from zmtf.client.feeds import feed_arrays, feed_keys
from zmtf.client.fetches import FetchPlan
from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.graph import Graph, Operation, Tensor

Run = Callable[[Any, dict], Any]   # Session.run(fetches, feed_dict)


@dataclass
class _PartialRun:
    feeds: set[Tensor]
    fetches: set[Tensor | Operation]
    fed: dict[Tensor, np.ndarray] = field(default_factory=dict)
    fetched: dict[Tensor | Operation, Any] = field(default_factory=dict)


class PartialRuns:
    """The partial runs of one session, by handle."""

    def __init__(self, graph: Graph) -> None:
        self._graph = graph
        self._runs: dict[str, _PartialRun] = {}
        self._ids = itertools.count()
        self._lock = threading.Lock()

    def setup(self, fetches: Any, feeds: Any) -> str:
        elements = FetchPlan.of(self._graph, fetches).elements
        if not elements:
            raise InvalidArgumentError(None, None, "Must specify at least one target to fetch or "
                                       "execute.")
        fed_tensors = feed_keys(self._graph, feeds or [])
        handle = f"partial_run_{next(self._ids)}"
        with self._lock:
            self._runs[handle] = _PartialRun(set(fed_tensors), set(elements))
        return handle

    def run(self, handle: Any, fetches: Any, feed_dict: dict | None, run: Run) -> Any:
        state = self._runs.get(handle) if isinstance(handle, str) else None
        if state is None:
            raise InvalidArgumentError(None, None, f"Partial run handle {handle!r} is not one this "
                                       f"session's partial_run_setup() returned.")
        tensors, values = feed_arrays(self._graph, feed_dict) if feed_dict else ([], [])
        for tensor in tensors:
            if tensor not in state.feeds:
                raise InvalidArgumentError(None, None, f"The feed {tensor.name} was not specified "
                                           f"in partial_run_setup.")
            if tensor in state.fed:
                raise InvalidArgumentError(None, None, f"The feed {tensor.name} has already been fed.")
        plan = FetchPlan.of(self._graph, fetches)
        for element in plan.elements:
            if element not in state.fetches:
                raise InvalidArgumentError(None, None, f"The fetch {element.name} was not "
                                           f"specified in partial_run_setup.")
            if element in state.fetched:
                raise InvalidArgumentError(None, None, f"The fetch {element.name} has already "
                                           f"been fetched.")
        if plan.elements:
            known = {**state.fed, **dict(zip(tensors, values)),
                     **{t: v for t, v in state.fetched.items() if isinstance(t, Tensor)}}
            got = run(plan.elements, known)
        else:
            got = []
        state.fed.update(zip(tensors, values))
        # kept apart from the caller's copies, which the caller may change in place
        state.fetched.update((e, np.array(v) if isinstance(v, np.ndarray) else v)
                             for e, v in zip(plan.elements, got))
        return plan.rebuild(got)
