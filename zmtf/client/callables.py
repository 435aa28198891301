"""Session.make_callable and Session._make_callable_from_options: a run() with its fetches
worked out once.

The fetch structure (any nest ``sess.run`` takes) is flattened when the callable is made;
each call runs the flat list of graph elements, which takes the session's cached-plan path,
and rebuilds the structure from the values. As in TF1, a callable with a ``feed_list`` takes
the feed values positionally (and run()'s ``options``/``run_metadata`` by keyword); one
made with ``accept_options=True`` takes ``options`` and ``run_metadata``; any other takes
nothing.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from zmtf.client.fetches import FetchPlan
from zmtf.formats.config_proto import CallableOptions, RunMetadata, RunOptions
from zmtf.framework.errors import InvalidArgumentError


class Runs(Protocol):
    """What a callable needs of its session (the Session class, without importing it)."""

    @property
    def graph(self) -> Any: ...

    def run(self, fetches: Any, feed_dict: Any = None, options: Any = None,
            run_metadata: Any = None) -> Any: ...


def make_callable(session: Runs, fetches: Any, feed_list: Any = None,
                  accept_options: bool = False) -> Callable[..., Any]:
    if feed_list is not None and not isinstance(feed_list, (list, tuple)):
        raise TypeError("`feed_list` must be a list or tuple.")
    plan = FetchPlan.of(session.graph, fetches)
    elements, rebuild = plan.elements, plan.rebuild

    if feed_list is not None:
        feeds = list(feed_list)

        def run_with_feeds(*feed_args: Any, options: RunOptions | None = None,
                           run_metadata: RunMetadata | None = None) -> Any:
            feed_dict = dict(zip(feeds, feed_args))
            return rebuild(session.run(elements, feed_dict, options, run_metadata))

        return run_with_feeds
    if accept_options:
        def run_with_options(options: RunOptions | None = None,
                             run_metadata: RunMetadata | None = None) -> Any:
            return rebuild(session.run(elements, None, options, run_metadata))

        return run_with_options

    def run() -> Any:
        return rebuild(session.run(elements))

    return run


class OptionsCallable:
    """TF1's ``_Callable``: feeds by position in ``CallableOptions.feed`` order, returns the
    values of ``CallableOptions.fetch`` as a list, runs ``target`` too, and traces by the
    options' ``run_options`` into a ``run_metadata`` keyword."""

    def __init__(self, session: Runs, options: CallableOptions) -> None:
        if not isinstance(options, CallableOptions):
            raise TypeError(f"callable_options must be a CallableOptions, got {type(options).__name__}")
        self._session = session
        self._feeds = list(options.feed)
        self._elements = list(options.fetch) + list(options.target)
        self._fetch_count = len(options.fetch)
        self._run_options = options.run_options

    def __call__(self, *args: Any, **kwargs: Any) -> list[Any]:
        run_metadata = kwargs.pop("run_metadata", None)
        if kwargs:
            raise TypeError(f"a callable takes only run_metadata by keyword, not {sorted(kwargs)}")
        if len(args) != len(self._feeds):
            raise InvalidArgumentError(
                None, None, f"Expected {len(self._feeds)} feed values (one per "
                f"CallableOptions.feed: {self._feeds}), got {len(args)}.")
        values = self._session.run(self._elements, dict(zip(self._feeds, args)),
                                   self._run_options, run_metadata)
        return list(values[:self._fetch_count])
