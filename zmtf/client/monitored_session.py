"""tf.train.MonitoredTrainingSession: a session that initializes, recovers, runs hooks, stops.

The TF1 distributed training loop::

    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=(task == 0),
                                           checkpoint_dir=ckpt, hooks=[StopAtStepHook(last_step=N)]) as s:
        while not s.should_stop():
            s.run(train_op)

The chief restores the newest checkpoint in ``checkpoint_dir`` or runs the init op; the
other workers wait until every global variable is initialized (polling, up to
``max_wait_secs``: then DeadlineExceededError). Then every worker runs the local init op
and the hooks' ``after_create_session``. Each ``run`` adds the hooks' fetches and feeds to
the same ``sess.run``. On the chief, a CheckpointSaverHook (``save_checkpoint_secs`` or
``save_checkpoint_steps``), a StepCounterHook and a SummarySaverHook are added, as TF adds
them: they share ``summary_dir``'s (default ``checkpoint_dir``) one events file
(``tf.summary.FileWriterCache``), which gets the graph, ``global_step/sec`` and the graph's
summaries for TensorBoard.

As TF1's recoverable session: a run, a hook, a ``run_step_fn`` step or the creation of a
session that fails with AbortedError or UnavailableError (a ps or worker died, restarted or
was preempted), or such an error a thread reported to the coordinator, closes the session
and makes a fresh one with the same creator: the chief restores the newest checkpoint, the
others wait for it; the hooks are kept (``after_create_session`` runs again) and the run is
tried again. Any other error a thread reports makes ``should_stop()`` true and is raised by
``close()`` (the end of the ``with`` block). OutOfRangeError or StopIteration ending the
``with`` block is a clean stop: the hooks' ``end`` runs (the final checkpoint).
SingularMonitoredSession does not recover. While a monitored session is open its graph is
finalized (the Scaffold does it), and opened again on close if it was open before.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from zmtf.client.session import Session
from zmtf.client.session_manager import SessionManager
from zmtf.formats.config_proto import RunMetadata, RunOptions
from zmtf.framework.errors import AbortedError, OutOfRangeError, UnavailableError
from zmtf.framework.graph import GraphKeys, get_default_graph
from zmtf.framework.scopes import add_to_collection, get_collection
from zmtf.ops.summary_ops import merge_all
from zmtf.ops.control_flow_ops import group
from zmtf.ops.variables import (
    global_variables, global_variables_initializer, local_variables_initializer,
    report_uninitialized_variables, tables_initializer,
)
from zmtf.training.coordinator import Coordinator
from zmtf.training.queue_runner import start_queue_runners
from zmtf.training.optimizers import get_global_step
from zmtf.training.saver import Saver
from zmtf.training.session_run_hook import (
    CheckpointSaverHook, SessionRunArgs, SessionRunContext, SessionRunValues, StepCounterHook,
    SummarySaverHook,
)


class Scaffold:
    """The ops a monitored session needs; what is not given is made by ``finalize()``.

    ``finalize()`` takes each missing op from its graph collection (INIT_OP, READY_OP,
    READY_FOR_LOCAL_INIT_OP, LOCAL_INIT_OP, SUMMARY_OP, SAVERS) or makes it and puts it
    there, so every Scaffold of a graph shares them; then it finalizes the graph. ``init_fn``
    (``init_fn(scaffold, session)``) runs after ``init_op`` when no checkpoint was restored.
    """

    def __init__(self, init_op: Any = None, init_feed_dict: dict | None = None,
                 init_fn: Callable[[Scaffold, Any], Any] | None = None, ready_op: Any = None,
                 ready_for_local_init_op: Any = None, local_init_op: Any = None,
                 summary_op: Any = None, saver: Saver | None = None,
                 copy_from_scaffold: Scaffold | None = None) -> None:
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            other = copy_from_scaffold
            init_op, init_feed_dict = _given(init_op, other.init_op), _given(init_feed_dict,
                                                                             other.init_feed_dict)
            init_fn = _given(init_fn, other._user_init_fn)
            ready_op = _given(ready_op, other.ready_op)
            ready_for_local_init_op = _given(ready_for_local_init_op, other.ready_for_local_init_op)
            local_init_op, summary_op = _given(local_init_op, other.local_init_op), _given(
                summary_op, other.summary_op)
            saver = _given(saver, other.saver)
        self._init_op, self._init_feed_dict = init_op, init_feed_dict
        self._user_init_fn: Callable[[Scaffold, Any], Any] | None = init_fn
        self._ready_op, self._ready_for_local_init_op = ready_op, ready_for_local_init_op
        self._local_init_op, self._summary_op, self._saver = local_init_op, summary_op, saver

    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)

    @property
    def init_fn(self) -> Callable[[Any], Any] | None:
        """The user's ``init_fn`` bound to this scaffold: ``init_fn(session)``."""
        user_fn = self._user_init_fn
        return None if user_fn is None else (lambda session: user_fn(self, session))

    def finalize(self) -> Scaffold:
        """Make (or reuse) the missing ops, finalize the graph; returns self."""
        with _FINALIZE_LOCK:    # two sessions' scaffolds on one graph make its ops once
            self._make_missing_ops()
        graph = get_default_graph()
        if not graph.finalized:
            graph.finalize()
            _log.info("Graph was finalized.")
        return self

    def _make_missing_ops(self) -> None:
        if self._init_op is None:
            self._init_op = _cached(GraphKeys.INIT_OP, "init_op", global_variables_initializer)
        if self._ready_op is None:   # TF's defaults: the names of uninitialized variables
            self._ready_op = _cached(GraphKeys.READY_OP, "ready_op", report_uninitialized_variables)
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = _cached(
                GraphKeys.READY_FOR_LOCAL_INIT_OP, "ready_for_local_init_op",
                lambda: report_uninitialized_variables(global_variables()))
        if self._local_init_op is None:
            self._local_init_op = _cached(GraphKeys.LOCAL_INIT_OP, "local_init_op",
                                          Scaffold.default_local_init_op)
        if self._summary_op is None:
            self._summary_op = _cached(GraphKeys.SUMMARY_OP, "summary_op", merge_all)
        if self._saver is None:
            self._saver = _saver_or_default()

    @staticmethod
    def get_or_default(arg_name: str, collection_key: str, default_constructor: Callable[[], Any]) -> Any:
        """The one item of ``collection_key``, else ``default_constructor()`` (kept there)."""
        return _cached(collection_key, arg_name, default_constructor)

    @staticmethod
    def default_local_init_op() -> Any:
        """TF's default local init op: initialize local variables and lookup tables."""
        return group(local_variables_initializer(), tables_initializer())


_FINALIZE_LOCK = threading.Lock()


def _given(value: Any, fallback: Any) -> Any:
    """``value`` unless None (ops and tensors have no truth value to ``or`` with)."""
    return value if value is not None else fallback


def _cached(collection_key: str, arg_name: str, make: Callable[[], Any]) -> Any:
    items = get_collection(collection_key)
    if items:
        if len(items) > 1:
            raise RuntimeError(f'More than one item in the collection "{collection_key}". Please '
                               f"indicate which one to use by passing it to the tf.Scaffold "
                               f"constructor as:  tf.Scaffold({arg_name}=item to use)")
        return items[0]
    item = make()
    if item is not None:
        add_to_collection(collection_key, item)
    return item


def _saver_or_default() -> Saver:
    """The graph's one Saver (SAVERS collection), else a new one put there, as TF."""
    savers = get_collection(GraphKeys.SAVERS)
    if savers:
        if len(savers) > 1:
            raise RuntimeError(f"More than one item in collection {GraphKeys.SAVERS}. Please "
                               f"indicate which one to use by passing it to the constructor.")
        return savers[0]
    saver = Saver(sharded=True, allow_empty=True)
    add_to_collection(GraphKeys.SAVERS, saver)
    return saver


_log = logging.getLogger("zmtf.client")

#: The errors after which TF1's MonitoredSession makes a fresh session: a task died,
#: restarted or was preempted, and its state may be gone
PREEMPTION_ERRORS = (AbortedError, UnavailableError)

#: Pause between attempts to create a session while a task is unreachable
RECREATE_PAUSE_SECS = 0.5

#: How long a session being abandoned after a preemption gets for its queue runner threads
RECOVERY_GRACE_SECS = 5.0

#: Clean ends of a ``with MonitoredSession(...)`` block: the input is exhausted
CLEAN_STOP_ERRORS = (OutOfRangeError, StopIteration)

#: How often a non-chief asks whether the chief has initialized the model (TF's
#: SessionManager default is 30 s; a poll costs one small step here)
WORKER_POLL_SECS = 0.2


class SessionCreator:
    """TF1's ``tf.train.SessionCreator``: MonitoredSession gets its session from
    ``create_session()``; subclass it to make sessions your own way."""

    def create_session(self) -> Any:
        raise NotImplementedError("a SessionCreator subclass must define create_session()")


class ChiefSessionCreator(SessionCreator):
    """TF1's ``tf.train.ChiefSessionCreator``: a session on ``master`` whose variables it
    restores from ``checkpoint_filename_with_path`` or ``checkpoint_dir``'s newest
    checkpoint, else initializes."""

    def __init__(self, scaffold: Scaffold | None = None, master: str = "", config: Any = None,
                 checkpoint_dir: str | None = None, checkpoint_filename_with_path: str | None = None,
                 max_wait_secs: float = 7200) -> None:
        self.scaffold = scaffold or Scaffold()
        self.master, self.config, self.checkpoint_dir = master, config, checkpoint_dir
        self.checkpoint_filename_with_path = checkpoint_filename_with_path
        self.max_wait_secs = max_wait_secs

    def _manager(self) -> SessionManager:
        self.scaffold.finalize()
        return SessionManager(local_init_op=self.scaffold.local_init_op,
                              ready_op=self.scaffold.ready_op,
                              ready_for_local_init_op=self.scaffold.ready_for_local_init_op,
                              graph=get_default_graph(), recovery_wait_secs=WORKER_POLL_SECS)

    def create_session(self) -> Session:
        return self._manager().prepare_session(
            self.master, init_op=self.scaffold.init_op, saver=self.scaffold.saver,
            checkpoint_dir=self.checkpoint_dir,
            checkpoint_filename_with_path=self.checkpoint_filename_with_path,
            max_wait_secs=self.max_wait_secs, config=self.config,
            init_feed_dict=self.scaffold.init_feed_dict, init_fn=self.scaffold.init_fn)


class WorkerSessionCreator(ChiefSessionCreator):
    """TF1's ``tf.train.WorkerSessionCreator``: a session on ``master`` that waits (up to
    ``max_wait_secs``) until the chief has initialized the variables."""

    def __init__(self, scaffold: Scaffold | None = None, master: str = "", config: Any = None,
                 max_wait_secs: float = 1800) -> None:
        super().__init__(scaffold, master, config, max_wait_secs=max_wait_secs)

    def create_session(self) -> Session:
        return self._manager().wait_for_session(self.master, self.config, self.max_wait_secs)


class StepContext:
    """What ``MonitoredSession.run_step_fn`` hands ``step_fn``: the raw ``session`` (runs
    without hooks) and ``run_with_hooks`` (a run the hooks see)."""

    def __init__(self, session: Any, run_with_hooks: Callable[..., Any]) -> None:
        self._session, self._run_with_hooks = session, run_with_hooks

    @property
    def session(self) -> Any:
        return self._session

    def run_with_hooks(self, *args: Any, **kwargs: Any) -> Any:
        return self._run_with_hooks(*args, **kwargs)

    def request_stop(self) -> None:
        """End the step and the loop: StopIteration, which ``with MonitoredSession`` takes as
        a clean stop."""
        raise StopIteration("step_fn has requested the iterations to stop.")


@dataclass(frozen=True)
class _CoordinatedCreatorView:
    """What TF's private ``MonitoredSession._coordinated_creator`` shows scripts."""

    tf_sess: Any
    coord: Coordinator | None


class MonitoredSession:
    """TF1's ``tf.train.MonitoredSession(session_creator=, hooks=)``: a session wrapped with
    hooks and a coordinator (MonitoredTrainingSession makes one), made again after a
    preemption (see the module docstring)."""

    #: whether a preemption (AbortedError, UnavailableError) makes a new session
    _RECOVERS = True

    def __init__(self, session_creator: SessionCreator | None = None, hooks: list[Any] | None = None,
                 stop_grace_period_secs: float = 120) -> None:
        self._graph = get_default_graph()
        self._graph_was_finalized = self._graph.finalized
        self._hooks = list(hooks or [])
        for hook in self._hooks:     # before the creator's Scaffold finalizes the graph
            hook.begin()
        self._creator = session_creator or ChiefSessionCreator()
        self._grace = stop_grace_period_secs
        self._session: Any = None
        self._coord: Coordinator | None = None
        self._closed = self._hooks_stop = False
        try:
            self._create()
        except BaseException:
            if not self._graph_was_finalized:   # no session to close: open the graph again
                self._graph._unsafe_unfinalize()
            raise

    def _create(self) -> None:
        """A new session with its coordinator; made again (as TF) while a task is unreachable
        or a hook's ``after_create_session`` meets a preemption, when this session recovers."""
        while True:
            try:
                self._session, self._coord = self._create_coordinated()
                self._hooks_stop = False
                return
            except PREEMPTION_ERRORS as error:
                if not self._RECOVERS:
                    raise
                _log.info("An error was raised while a session was being created; a task may be "
                          "down or restarting. A new session will be created in %.1f s. Error: %s",
                          RECREATE_PAUSE_SECS, _first_line(error))
                time.sleep(RECREATE_PAUSE_SECS)

    def _create_coordinated(self) -> tuple[Any, Coordinator]:
        """The creator's session, its coordinator, queue runners and hooks'
        ``after_create_session``."""
        session = self._creator.create_session()
        coord = Coordinator(clean_stop_exception_types=[])   # every error reaches close()
        try:
            if self._graph.get_collection(GraphKeys.QUEUE_RUNNERS):   # tf.train.batch & co.
                start_queue_runners(session, coord=coord)
            for hook in self._hooks:
                hook.after_create_session(session, coord)
        except BaseException:
            coord.request_stop()
            session.close()
            raise
        return session, coord

    def _recover(self, error: BaseException) -> None:
        _log.info("An error was raised. This may be due to a preemption in a connected worker "
                  "or parameter server. The current session will be closed and a new session "
                  "will be created. Error: %s", _first_line(error))
        try:
            self._close_session(min(self._grace, RECOVERY_GRACE_SECS))
        except PREEMPTION_ERRORS as late:   # the old session's threads failed with it
            _log.warning("An error occurred while closing the preempted session: %s",
                         _first_line(late))
        self._create()

    @property
    def graph(self) -> Any:
        return self._graph

    # ---- running ---------------------------------------------------------------------
    def should_stop(self) -> bool:
        """True once closed, once a hook asked to stop, or once the coordinator stopped; an
        error a thread reported to the coordinator counts as a stop, except a preemption,
        after which (as TF) a new session is made and training goes on."""
        if self._closed:
            return True
        try:
            self._coordinator().raise_requested_exception()
        except PREEMPTION_ERRORS as error:
            if not self._RECOVERS:
                return True
            self._recover(error)
            return False
        except Exception:  # noqa: BLE001 - close() raises it; here it only means "stop"
            return True
        return self._hooks_stop or self._coordinator().should_stop()

    def run(self, fetches: Any, feed_dict: dict | None = None, options: Any = None,
            run_metadata: Any = None) -> Any:
        """A ``sess.run`` the hooks see; after a preemption, in a new session, tried again."""
        return self._with_recovery(
            lambda: self._run_hooked(fetches, feed_dict, options, run_metadata))

    def run_step_fn(self, step_fn: Callable[[StepContext], Any]) -> Any:
        """``step_fn(step_context)``: several runs, with or without hooks, as one step; after a
        preemption the whole step runs again in a new session."""
        params = list(inspect.signature(step_fn).parameters)
        if params != ["step_context"]:
            raise ValueError(f"`step_fn` may either have one `step_context` argument, or `self` "
                             f"and `step_context` arguments if it's an instance method. Got "
                             f"{tuple(params)} instead.")
        return self._with_recovery(
            lambda: step_fn(StepContext(self._session, self._run_hooked)))

    def _with_recovery(self, call: Callable[[], Any]) -> Any:
        if self._closed:
            raise RuntimeError("Session is already closed.")
        while True:
            try:
                return self._root_cause(call)
            except PREEMPTION_ERRORS as error:
                if not self._RECOVERS:
                    raise
                self._recover(error)

    def _root_cause(self, call: Callable[[], Any]) -> Any:
        """``call()``; when it fails, a preemption a thread reported to the coordinator is the
        root cause and is raised instead (a dequeue fails because the enqueuer died)."""
        try:
            return call()
        except PREEMPTION_ERRORS:
            raise
        except Exception:
            try:
                self._coordinator().raise_requested_exception()
            except PREEMPTION_ERRORS:
                raise
            except Exception:  # noqa: BLE001 - the original error is the one to see
                pass
            raise

    def _run_hooked(self, fetches: Any, feed_dict: dict | None = None, options: Any = None,
                    run_metadata: Any = None) -> Any:
        if self._hooks_stop:
            raise RuntimeError("Run called even after should_stop requested.")
        context = SessionRunContext(SessionRunArgs(fetches, feed_dict), self._session)
        extra, feeds = {}, dict(feed_dict or {})
        hook_options = []
        for index, hook in enumerate(self._hooks):
            request = hook.before_run(context)
            if request is None:
                continue
            if request.options is not None:
                hook_options.append(request.options)
            if request.fetches is not None:
                extra[index] = request.fetches
            for key, value in (request.feed_dict or {}).items():
                if key in feeds:
                    raise RuntimeError(
                        f"Same tensor is fed by a SessionRunHook and user. {key}"
                        if feed_dict and key in feed_dict else
                        f"Same tensor is fed by two hooks: {key}")
                feeds[key] = value
        # as TF, the hooks always see a RunOptions and a RunMetadata (tracing still only
        # when a trace_level asks for it)
        options = _merged_options(options, hook_options) if hook_options else (
            options if options is not None else RunOptions())
        run_metadata = run_metadata if run_metadata is not None else RunMetadata()
        try:
            results = self._session.run([fetches, extra], feed_dict=feeds or None, options=options,
                                        run_metadata=run_metadata)
        except OutOfRangeError:
            self._hooks_stop = True     # the input is exhausted
            raise
        outputs, hook_results = results
        for index, hook in enumerate(self._hooks):
            hook.after_run(context, SessionRunValues(hook_results.get(index), options, run_metadata))
        if context.stop_requested:
            self._hooks_stop = True
        return outputs

    def _coordinator(self) -> Coordinator:
        assert self._coord is not None, "a MonitoredSession always holds a coordinator"
        return self._coord

    # ---- closing ---------------------------------------------------------------------
    def close(self) -> None:
        """Run the hooks' ``end``, stop the threads, close the session; an error a thread
        reported to the coordinator is raised here."""
        self._close(run_end_hooks=True)

    def _close(self, run_end_hooks: bool) -> None:
        if self._closed:
            raise RuntimeError("Session is already closed.")
        try:
            if run_end_hooks:
                for hook in self._hooks:
                    hook.end(self._session)
        finally:
            self._closed = True
            try:
                self._close_session(self._grace)
            finally:
                if not self._graph_was_finalized:
                    self._graph._unsafe_unfinalize()

    def _close_session(self, grace_secs: float) -> None:
        """Stop the coordinator, close the session (it cancels steps still running: a queue
        runner's or a chief's sync thread), then join the threads: raises what they reported."""
        coord = self._coordinator()
        coord.request_stop()
        try:
            self._session.close()
        finally:
            coord.join(stop_grace_period_secs=grace_secs, ignore_live_threads=True)

    def _is_closed(self) -> bool:
        return self._closed

    # TF1 scripts reach the raw session through TF's private layers: ``mon._tf_sess()``,
    # ``mon._coordinated_creator.tf_sess`` / ``.coord``, or ``while type(s).__name__ !=
    # "Session": s = s._sess``. These give them the same objects (None once closed).
    def _tf_sess(self) -> Any:
        return None if self._closed else self._session

    _sess = property(_tf_sess)

    @property
    def _coordinated_creator(self) -> Any:
        return _CoordinatedCreatorView(self._tf_sess(), None if self._closed else self._coord)

    def __enter__(self) -> MonitoredSession:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        clean = exc_type is None or issubclass(exc_type, CLEAN_STOP_ERRORS)
        self._close(run_end_hooks=clean)
        return exc_type is not None and clean


class SingularMonitoredSession(MonitoredSession):
    """TF1's ``tf.train.SingularMonitoredSession``: a chief MonitoredSession in one call,
    which does not recover from preemptions (the AbortedError reaches the caller) and hands
    out its ``raw_session()``."""

    _RECOVERS = False

    def __init__(self, hooks: list[Any] | None = None, scaffold: Scaffold | None = None,
                 master: str = "", config: Any = None, checkpoint_dir: str | None = None,
                 stop_grace_period_secs: float = 120,
                 checkpoint_filename_with_path: str | None = None) -> None:
        super().__init__(ChiefSessionCreator(scaffold, master, config, checkpoint_dir,
                                             checkpoint_filename_with_path),
                         hooks, stop_grace_period_secs)

    def raw_session(self) -> Any:
        """The tf.Session underneath (None once closed)."""
        return None if self._closed else self._session


def _first_line(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


#: How TF merges the RunOptions a caller and its hooks ask for, field by field: the largest
#: value (trace level, and, as TF, the longest timeout) or any true flag. Fields this
#: RunOptions lacks are left out.
_MERGED_OPTION_FIELDS = ("trace_level", "timeout_in_ms", "inter_op_thread_pool",
                         "output_partition_graphs", "report_tensor_allocations_upon_oom")


def _merged_options(options: Any, hook_options: list[Any]) -> RunOptions:
    every = ([options] if options is not None else []) + hook_options
    merged = RunOptions()
    for name in _MERGED_OPTION_FIELDS:
        if hasattr(merged, name):
            setattr(merged, name, max(getattr(o, name, getattr(merged, name)) for o in every))
    return merged


def MonitoredTrainingSession(master: str = "", is_chief: bool = True,  # noqa: N802 (TF's name)
                             checkpoint_dir: str | None = None, scaffold: Scaffold | None = None,
                             hooks: list[Any] | None = None, chief_only_hooks: list[Any] | None = None,
                             save_checkpoint_secs: float | None = 600, save_summaries_steps: Any = 100,
                             save_summaries_secs: Any = None, config: Any = None,
                             stop_grace_period_secs: float = 120, log_step_count_steps: int | None = 100,
                             max_wait_secs: float = 7200, save_checkpoint_steps: int | None = None,
                             summary_dir: str | None = None, **_unused: Any) -> MonitoredSession:
    """TF1's ``tf.train.MonitoredTrainingSession`` (see the module docstring)."""
    scaffold = scaffold or Scaffold()
    all_hooks = list(hooks or [])
    if is_chief:
        all_hooks.extend(chief_only_hooks or [])
        has_step = get_global_step(get_default_graph()) is not None
        if checkpoint_dir and has_step and (save_checkpoint_steps or save_checkpoint_secs):
            all_hooks.append(CheckpointSaverHook(
                checkpoint_dir, save_steps=save_checkpoint_steps,
                save_secs=None if save_checkpoint_steps else save_checkpoint_secs,
                scaffold=scaffold))
        output_dir = summary_dir or checkpoint_dir
        if log_step_count_steps and has_step:   # TF1: global_step/sec into output_dir's events
            all_hooks.append(StepCounterHook(every_n_steps=log_step_count_steps,
                                             output_dir=output_dir))
        if output_dir and has_step and (save_summaries_steps or save_summaries_secs):
            all_hooks.append(SummarySaverHook(
                save_steps=save_summaries_steps,
                save_secs=None if save_summaries_steps else save_summaries_secs,
                output_dir=output_dir))
    creator = ChiefSessionCreator(scaffold, master, config, checkpoint_dir, max_wait_secs=max_wait_secs) \
        if is_chief else WorkerSessionCreator(scaffold, master, config, max_wait_secs)
    return MonitoredSession(creator, all_hooks, stop_grace_period_secs)


__all__ = ["ChiefSessionCreator", "MonitoredSession", "MonitoredTrainingSession", "Scaffold",
           "SessionCreator", "SingularMonitoredSession", "StepContext", "WorkerSessionCreator"]
