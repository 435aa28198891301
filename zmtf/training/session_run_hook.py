"""Session run hooks (TF1's tf.train.SessionRunHook family) and the hooks TF ships most.

A hook sees a MonitoredSession's life: ``begin()`` before the session exists (add ops
here), ``after_create_session(session, coord)``, ``before_run(run_context)`` returning
``SessionRunArgs`` (extra fetches and feeds, run in the same ``sess.run``),
``after_run(run_context, run_values)`` with their results, and ``end(session)``.
``run_context.request_stop()`` ends the training loop (``should_stop()`` turns True).
"""

from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zmtf.framework.graph import GraphKeys, Tensor, get_default_graph
from zmtf.framework.scopes import get_collection
from zmtf.training.optimizers import get_global_step
from zmtf.training.saver import Saver

log = logging.getLogger("zmtf.train")


@dataclass
class SessionRunArgs:
    """What a hook adds to one run: ``fetches`` (any nest) and ``feed_dict``."""

    fetches: Any = None
    feed_dict: dict | None = None
    options: Any = None


@dataclass
class SessionRunValues:
    """The results of a hook's fetches for one run."""

    results: Any = None
    options: Any = None
    run_metadata: Any = None


@dataclass
class SessionRunContext:
    """The run in progress: its original arguments and the session; ``request_stop()``."""

    original_args: SessionRunArgs
    session: Any
    _stop_requested: bool = field(default=False)

    def request_stop(self) -> None:
        self._stop_requested = True

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested


class SessionRunHook:
    """Base class: every method does nothing."""

    def begin(self) -> None:
        pass

    def after_create_session(self, session: Any, coord: Any) -> None:
        pass

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        return None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        pass

    def end(self, session: Any) -> None:
        pass


def _global_step_tensor() -> Tensor:
    step = get_global_step(get_default_graph())
    if step is None:
        raise RuntimeError("this hook needs a global step: create it with "
                           "tf.train.get_or_create_global_step() before the session")
    return step


class SecondOrStepTimer:
    """Triggers every ``every_secs`` seconds or every ``every_steps`` steps (exactly one)."""

    def __init__(self, every_secs: float | None = None, every_steps: int | None = None) -> None:
        if (every_secs is None) == (every_steps is None):
            raise ValueError("exactly one of every_secs or every_steps should be set")
        if every_steps is not None and every_steps < 1:
            raise ValueError(f"every_steps must be positive, got {every_steps}")
        self._every_secs, self._every_steps = every_secs, every_steps
        self.reset()

    def reset(self) -> None:
        self._last_time: float | None = None
        self._last_step: int | None = None

    def should_trigger_for_step(self, step: int) -> bool:
        """True for the first step seen, then once the interval has passed since the last
        triggered step (never twice for one step)."""
        if self._last_step is None:
            return True
        if step == self._last_step:
            return False
        if self._every_steps is not None:
            return step >= self._last_step + self._every_steps
        return time.monotonic() - self._last_time >= self._every_secs  # type: ignore[operator]

    def update_last_triggered_step(self, step: int) -> tuple[float | None, int | None]:
        """Mark ``step`` triggered; (seconds, steps) since the previous trigger, or Nones."""
        now = time.monotonic()
        elapsed = (None, None) if self._last_time is None else (
            now - self._last_time, step - self._last_step)  # type: ignore[operator]
        self._last_time, self._last_step = now, step
        return elapsed

    def last_triggered_step(self) -> int | None:
        return self._last_step


class StopAtStepHook(SessionRunHook):
    """Request a stop once the global step reaches ``last_step`` (or ``num_steps`` more)."""

    def __init__(self, num_steps: int | None = None, last_step: int | None = None) -> None:
        if (num_steps is None) == (last_step is None):
            raise ValueError("Exactly one of num_steps or last_step should be specified.")
        self._num_steps, self._last_step = num_steps, last_step

    def begin(self) -> None:
        self._step = _global_step_tensor()

    def after_create_session(self, session: Any, coord: Any) -> None:
        if self._last_step is None:
            self._last_step = int(session.run(self._step)) + int(self._num_steps)  # type: ignore[arg-type]

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        # The value fetched with the train op may be from before or after its update (as in
        # TF): when it says "maybe there", read the step again to be sure.
        if int(run_values.results) + 1 >= self._last_step:  # type: ignore[operator]
            if int(run_context.session.run(self._step)) >= self._last_step:  # type: ignore[operator]
                run_context.request_stop()


class CheckpointSaverListener:
    """Called around the saves of a CheckpointSaverHook; ``after_save`` returning True
    asks the training loop to stop."""

    def begin(self) -> None:
        pass

    def before_save(self, session: Any, global_step_value: int) -> None:
        pass

    def after_save(self, session: Any, global_step_value: int) -> bool | None:
        return None

    def end(self, session: Any, global_step_value: int) -> None:
        pass


class CheckpointSaverHook(SessionRunHook):
    """Save a checkpoint every ``save_secs`` seconds or ``save_steps`` steps, and at the end."""

    def __init__(self, checkpoint_dir: str, save_secs: float | None = None,
                 save_steps: int | None = None, saver: Saver | None = None,
                 checkpoint_basename: str = "model.ckpt", scaffold: Any = None,
                 listeners: Any = None, save_graph_def: bool = True) -> None:
        """``save_graph_def``: write each checkpoint's ``.meta`` graph too (TF's default)."""
        if (save_secs is None) == (save_steps is None):
            raise ValueError("exactly one of save_secs or save_steps should be set")
        self._dir, self._timer = checkpoint_dir, SecondOrStepTimer(save_secs, save_steps)
        self._saver, self._scaffold = saver, scaffold
        self._path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._listeners = list(listeners or ())
        self._save_graph_def = save_graph_def

    def add_listeners(self, listeners: Any) -> None:
        """Also notify ``listeners`` (those not listening yet) around each save: the
        Estimator's saving_listeners join a CheckpointSaverHook the caller passed."""
        self._listeners.extend(listener for listener in listeners
                               if listener not in self._listeners)

    def begin(self) -> None:
        self._step = _global_step_tensor()
        if self._saver is None and self._scaffold is None and not get_collection(GraphKeys.SAVERS):
            # used outside a MonitoredSession (whose Scaffold fills the SAVERS collection):
            # one of our own, made now, while the graph may still grow
            self._saver = Saver()
        os.makedirs(self._dir, exist_ok=True)
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session: Any, coord: Any) -> None:
        # TF saves the starting point too, so a checkpoint exists from the first step on
        self._save(session, int(session.run(self._step)))

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        # maybe due (the fetched step can be stale): read it again to be sure
        if self._timer.should_trigger_for_step(int(run_values.results) + 1):
            step = int(run_context.session.run(self._step))
            if self._timer.should_trigger_for_step(step) and self._save(run_context.session, step):
                run_context.request_stop()

    def end(self, session: Any) -> None:
        step = int(session.run(self._step))
        if step != self._timer.last_triggered_step():
            self._save(session, step)
        for listener in self._listeners:
            listener.end(session, step)

    def _get_saver(self) -> Any:
        """As TF: the given saver, else the scaffold's, else the one in the SAVERS collection
        (asked when saving, after the MonitoredSession's Scaffold was finalized)."""
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = get_collection(GraphKeys.SAVERS)
        if not savers:
            raise RuntimeError(f"No items in collection {GraphKeys.SAVERS}. Please add a saver to "
                               f"the collection or provide a saver or scaffold.")
        if len(savers) > 1:
            raise RuntimeError(f"More than one item in collection {GraphKeys.SAVERS}. Please "
                               f"indicate which one to use by passing it to the constructor.")
        self._saver = savers[0]
        return self._saver

    def _save(self, session: Any, step: int) -> bool:
        """Save; True when a listener asks to stop."""
        self._timer.update_last_triggered_step(step)
        for listener in self._listeners:
            listener.before_save(session, step)
        path = self._get_saver().save(session, self._path, global_step=step,
                                write_meta_graph=self._save_graph_def)
        log.info("saved checkpoint %s", path)
        stop = False
        for listener in self._listeners:
            stop = bool(listener.after_save(session, step)) or stop
        return stop


class LoggingTensorHook(SessionRunHook):
    """Log the values of ``tensors`` (a dict or list) every ``every_n_iter`` runs."""

    def __init__(self, tensors: Any, every_n_iter: int = 100, formatter: Any = None) -> None:
        if every_n_iter is None or every_n_iter < 1:
            raise ValueError("every_n_iter must be a positive int")
        self._tensors = tensors if isinstance(tensors, dict) else {getattr(t, "name", str(t)): t
                                                                   for t in tensors}
        self._every, self._formatter, self._count = every_n_iter, formatter, 0

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        return SessionRunArgs(self._tensors) if self._count % self._every == 0 else None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if self._count % self._every == 0:
            values = run_values.results
            text = self._formatter(values) if self._formatter else ", ".join(
                f"{k} = {np.asarray(v)}" for k, v in values.items())
            log.info("%s", text)
        self._count += 1


class NanLossDuringTrainingError(RuntimeError):
    """Raised by NanTensorHook (``fail_on_nan_loss=True``) when the loss becomes NaN."""

    def __str__(self) -> str:
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Stop (or fail) when ``loss_tensor`` becomes NaN."""

    def __init__(self, loss_tensor: Tensor, fail_on_nan_loss: bool = True) -> None:
        self._loss, self._fail = loss_tensor, fail_on_nan_loss

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._loss)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if math.isnan(float(run_values.results)):
            if self._fail:
                raise NanLossDuringTrainingError()
            log.warning("NaN loss during training: stopping")
            run_context.request_stop()


class StepCounterHook(SessionRunHook):
    """Every ``every_n_steps`` steps or ``every_n_secs`` seconds, log ``global_step/sec`` and,
    with ``output_dir`` or ``summary_writer``, write it as a scalar TensorBoard plots (TF1's
    arguments; the rate is the global step's, so in a cluster it counts every worker)."""

    def __init__(self, every_n_steps: int | None = 100, every_n_secs: float | None = None,
                 output_dir: str | None = None, summary_writer: Any = None) -> None:
        if every_n_secs is not None and every_n_steps == 100:
            every_n_steps = None   # TF1 raises for every_n_secs alone; it means "by time"
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided")
        self._timer = SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_steps)
        self._dir, self._writer = output_dir, summary_writer

    def begin(self) -> None:
        from zmtf.training.summary_writer_cache import FileWriterCache

        if self._writer is None and self._dir:
            self._writer = FileWriterCache.get(self._dir)
        self._step = _global_step_tensor()
        self._tag = f"{self._step.op.name}/sec"

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        # the fetched step is read before this run's update: when it may be due, read it again
        if not self._timer.should_trigger_for_step(int(run_values.results) + 1):
            return
        step = int(run_context.session.run(self._step))
        if not self._timer.should_trigger_for_step(step):
            return
        seconds, steps = self._timer.update_last_triggered_step(step)
        if seconds is not None and steps is not None:
            rate = steps / max(seconds, 1e-9)
            if self._writer is not None:
                from zmtf.formats.summary_proto import scalar_summary

                self._writer.add_summary(scalar_summary(self._tag, rate), step)
            log.info("%s: %g", self._tag, rate)

    def end(self, session: Any) -> None:
        if self._writer is not None:
            self._writer.flush()


class SummarySaverHook(SessionRunHook):
    """Run ``summary_op`` (default: the merged summaries of the graph) every ``save_steps``
    steps or ``save_secs`` seconds and write it with a FileWriter in ``output_dir``."""

    def __init__(self, save_steps: int | None = None, save_secs: float | None = None,
                 output_dir: str | None = None, summary_writer: Any = None, scaffold: Any = None,
                 summary_op: Any = None) -> None:
        if (save_steps is None) == (save_secs is None):
            raise ValueError("exactly one of save_steps or save_secs should be set")
        if output_dir is None and summary_writer is None:
            raise ValueError("give output_dir or summary_writer")
        self._timer = SecondOrStepTimer(save_secs, save_steps)
        self._dir, self._writer, self._op = output_dir, summary_writer, summary_op
        self._next_step: int | None = None
        self._requested = False

    def begin(self) -> None:
        from zmtf.ops.summary_ops import merge_all
        from zmtf.training.summary_writer_cache import FileWriterCache

        if self._op is None:
            self._op = merge_all()
        if self._writer is None:
            self._writer = FileWriterCache.get(self._dir)  # type: ignore[arg-type]
        self._step = _global_step_tensor()

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        # the summary op runs only on steps that will be written (as TF's hook does)
        self._requested = self._op is not None and (
            self._next_step is None or self._timer.should_trigger_for_step(self._next_step))
        fetches = {"step": self._step}
        if self._requested:
            fetches["summary"] = self._op
        return SessionRunArgs(fetches)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        step = int(run_values.results["step"])
        if self._requested:
            self._timer.update_last_triggered_step(step)
            self._writer.add_summary(run_values.results["summary"], step)  # type: ignore[union-attr]
        self._next_step = step + 1

    def end(self, session: Any) -> None:
        if self._writer is not None:   # the directory's shared writer: flushed, left open
            self._writer.flush()


class GlobalStepWaiterHook(SessionRunHook):
    """Hold this worker's first run until the global step reaches ``wait_until_step``: TF1's
    way to let the chief (or a warm-up) go ahead before the other workers join in."""

    def __init__(self, wait_until_step: int) -> None:
        self._wait_until_step = int(wait_until_step)
        self._waited = self._wait_until_step <= 0

    def begin(self) -> None:
        self._step = _global_step_tensor()

    def before_run(self, run_context: SessionRunContext) -> None:
        last_logged = None
        while not self._waited:
            current = int(run_context.session.run(self._step))
            if current >= self._wait_until_step:
                self._waited = True
                break
            if current != last_logged:
                log.info("waiting for global step %d before starting; now %d",
                         self._wait_until_step, current)
                last_logged = current
            time.sleep(0.5)
        return None


class FinalOpsHook(SessionRunHook):
    """Run ``final_ops`` once when the session ends; their values in ``final_ops_values``."""

    def __init__(self, final_ops: Any, final_ops_feed_dict: dict | None = None) -> None:
        self._final_ops, self._feed = final_ops, final_ops_feed_dict
        self._values: Any = None

    @property
    def final_ops_values(self) -> Any:
        return self._values

    def end(self, session: Any) -> None:
        if self._final_ops is not None:
            self._values = session.run(self._final_ops, feed_dict=self._feed)


class FeedFnHook(SessionRunHook):
    """Feed ``feed_fn()``'s dict into every run."""

    def __init__(self, feed_fn: Any) -> None:
        self.feed_fn = feed_fn

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())
