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

As TF1's recoverable session: a run (or the creation of a session) that fails with
AbortedError or UnavailableError (a ps or worker died, restarted or was preempted) closes
the session and makes a fresh one with the same creator: the chief restores the newest
checkpoint, the others wait for it; the hooks are kept (``after_create_session`` runs again)
and the run is tried again. OutOfRangeError or StopIteration ending the ``with`` block is a
clean stop: the hooks' ``end`` runs (the final checkpoint).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from zmtf.client.session import Session
from zmtf.client.session_manager import SessionManager
from zmtf.formats.config_proto import RunMetadata, RunOptions
from zmtf.framework.errors import AbortedError, OutOfRangeError, UnavailableError
from zmtf.framework.graph import get_default_graph
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
    """The ops a monitored session needs; what is not given is made by ``finalize()``."""

    def __init__(self, init_op: Any = None, init_feed_dict: dict | None = None,
                 local_init_op: Any = None, saver: Saver | None = None, ready_op: Any = None,
                 ready_for_local_init_op: Any = None, **_unused: Any) -> None:
        self.init_op, self.init_feed_dict = init_op, init_feed_dict
        self.local_init_op, self.saver, self.ready_op = local_init_op, saver, ready_op
        self.ready_for_local_init_op = ready_for_local_init_op
        self._finalized = False

    def finalize(self) -> None:
        if self._finalized:
            return
        if self.init_op is None:
            self.init_op = global_variables_initializer()
        if self.local_init_op is None:
            self.local_init_op = Scaffold.default_local_init_op()
        if self.ready_op is None:   # TF's defaults: the names of uninitialized variables
            self.ready_op = report_uninitialized_variables()
        if self.ready_for_local_init_op is None:
            self.ready_for_local_init_op = report_uninitialized_variables(global_variables())
        if self.saver is None and global_variables():
            self.saver = Saver()
        self._finalized = True

    @staticmethod
    def default_local_init_op() -> Any:
        """TF's default local init op: initialize local variables and lookup tables."""
        return group(local_variables_initializer(), tables_initializer())


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
            init_feed_dict=self.scaffold.init_feed_dict)


class WorkerSessionCreator(ChiefSessionCreator):
    """TF1's ``tf.train.WorkerSessionCreator``: a session on ``master`` that waits (up to
    ``max_wait_secs``) until the chief has initialized the variables."""

    def __init__(self, scaffold: Scaffold | None = None, master: str = "", config: Any = None,
                 max_wait_secs: float = 1800) -> None:
        super().__init__(scaffold, master, config, max_wait_secs=max_wait_secs)

    def create_session(self) -> Session:
        return self._manager().wait_for_session(self.master, self.config, self.max_wait_secs)


class MonitoredSession:
    """TF1's ``tf.train.MonitoredSession(session_creator=, hooks=)``: a session wrapped with
    hooks and a coordinator (MonitoredTrainingSession makes one)."""

    def __init__(self, session_creator: SessionCreator | None = None, hooks: list[Any] | None = None,
                 stop_grace_period_secs: float = 120) -> None:
        creator = session_creator or ChiefSessionCreator()
        scaffold = getattr(creator, "scaffold", None)
        if scaffold is not None:
            scaffold.finalize()
        self._hooks = list(hooks or [])
        for hook in self._hooks:
            hook.begin()
        self._creator = creator
        self._grace = stop_grace_period_secs
        self._stop = False
        self._create()

    def _create(self) -> None:
        """A new session from the creator (again while a task is unreachable), with its
        coordinator, queue runners and hooks' ``after_create_session``."""
        while True:
            try:
                self._session = self._creator.create_session()
                break
            except PREEMPTION_ERRORS as error:
                _log.info("An error was raised while a session was being created; a task may be "
                          "down or restarting. A new session will be created in %.1f s. Error: %s",
                          RECREATE_PAUSE_SECS, _first_line(error))
                time.sleep(RECREATE_PAUSE_SECS)
        try:
            self._coord = Coordinator(clean_stop_exception_types=[OutOfRangeError])
            start_queue_runners(self._session, coord=self._coord)   # tf.train.batch & co.
            for hook in self._hooks:
                hook.after_create_session(self._session, self._coord)
        except BaseException:
            self._session.close()
            raise

    def _recover(self, error: BaseException) -> None:
        _log.info("An error was raised. This may be due to a preemption in a connected worker "
                  "or parameter server. The current session will be closed and a new session "
                  "will be created. Error: %s", _first_line(error))
        self._coord.request_stop()
        self._session.close()
        try:
            self._coord.join(stop_grace_period_secs=min(self._grace, RECOVERY_GRACE_SECS))
        except Exception:  # noqa: BLE001 - the old session's threads failed with it
            pass
        self._create()

    @property
    def graph(self) -> Any:
        return self._session.graph

    # ---- running ---------------------------------------------------------------------
    def should_stop(self) -> bool:
        return self._stop or self._coord.should_stop()

    def run(self, fetches: Any, feed_dict: dict | None = None, options: Any = None,
            run_metadata: Any = None) -> Any:
        if self.should_stop():
            raise RuntimeError("Run called even after should_stop requested.")
        while True:
            try:
                return self._run_hooked(fetches, feed_dict, options, run_metadata)
            except PREEMPTION_ERRORS as error:
                self._recover(error)

    def _run_hooked(self, fetches: Any, feed_dict: dict | None, options: Any,
                    run_metadata: Any) -> Any:
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
                    raise RuntimeError(f"Same tensor is fed by a SessionRunHook and user: {key}")
                feeds[key] = value
        if hook_options:   # as TF: the largest trace level and the shortest deadline asked for
            options, run_metadata = _merged_options(options, hook_options), run_metadata or RunMetadata()
        try:
            results = self._session.run([fetches, extra], feed_dict=feeds or None, options=options,
                                        run_metadata=run_metadata)
        except OutOfRangeError:
            self._stop = True
            raise
        outputs, hook_results = results
        for index, hook in enumerate(self._hooks):
            hook.after_run(context, SessionRunValues(hook_results.get(index), options, run_metadata))
        if context.stop_requested:
            self._stop = True
        return outputs

    # ---- closing ---------------------------------------------------------------------
    def close(self, run_end_hooks: bool = True) -> None:
        try:
            if run_end_hooks:
                for hook in self._hooks:
                    hook.end(self._session)
        finally:
            self._coord.request_stop()
            self._session.close()      # cancels steps still running (a chief's sync thread)
            try:
                self._coord.join(stop_grace_period_secs=self._grace)
            except OutOfRangeError:
                pass

    def __enter__(self) -> MonitoredSession:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        clean = exc_type is not None and issubclass(exc_type, CLEAN_STOP_ERRORS)
        self.close(run_end_hooks=exc_type is None or clean)
        return clean


def _first_line(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def _merged_options(options: Any, hook_options: list[Any]) -> RunOptions:
    every = ([options] if options is not None else []) + hook_options
    deadlines = [o.timeout_in_ms for o in every if o.timeout_in_ms > 0]
    return RunOptions(trace_level=max(o.trace_level for o in every),
                      timeout_in_ms=min(deadlines) if deadlines else 0)


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


def SingularMonitoredSession(hooks: list[Any] | None = None, scaffold: Scaffold | None = None,  # noqa: N802
                             master: str = "", config: Any = None, checkpoint_dir: str | None = None,
                             stop_grace_period_secs: float = 120) -> MonitoredSession:
    """TF1's ``tf.train.SingularMonitoredSession``: a chief MonitoredSession in one call."""
    return MonitoredSession(ChiefSessionCreator(scaffold, master, config, checkpoint_dir), hooks,
                            stop_grace_period_secs)


__all__ = ["ChiefSessionCreator", "MonitoredSession", "MonitoredTrainingSession", "Scaffold",
           "SessionCreator", "SingularMonitoredSession", "WorkerSessionCreator"]
