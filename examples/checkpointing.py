"""Checkpoints in the training examples, written once: each example says at start whether
it restores a checkpoint or starts fresh, saves one periodically, and on Ctrl-C finishes
the step in flight, saves, and exits (130) with one line saying where; the next run
continues from there. A second Ctrl-C quits at once.

Imported by the examples next to it (``python examples/<name>.py`` puts this folder on
``sys.path``). MonitoredTrainingSession, Supervisor and Estimator restore and save by
themselves (CheckpointSaverHook, save_model_secs, save_checkpoints_steps): for them
``announce`` says which they will do and ``StopOnInterruptHook`` ends their loop cleanly,
so that their own last save runs.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import zmtf as tf


def restore_or_initialize(sess, saver, init, checkpoint_dir: str, fresh: bool = False,
                          who: str = "") -> None:
    """Restore the newest checkpoint of ``checkpoint_dir`` (unless ``fresh``), else run
    ``init``; say which, so a user knows whether the run continues an earlier one."""
    latest = tf.train.latest_checkpoint(checkpoint_dir)
    if latest and not fresh:
        saver.restore(sess, latest)
        step = tf.train.get_global_step(sess.graph)
        at = f" at global step {int(sess.run(step))}" if step is not None else ""
        print(f"{who}restored from {latest}{at}", flush=True)
    else:
        sess.run(init)
        print(f"{who}no checkpoint in {checkpoint_dir}"
              f"{' used (--fresh)' if latest else ''}: starting fresh", flush=True)


def announce(checkpoint_dir: str | None, who: str = "") -> None:
    """Say whether a trainer that restores by itself will restore or start fresh."""
    latest = tf.train.latest_checkpoint(checkpoint_dir) if checkpoint_dir else None
    if latest:
        print(f"{who}restoring {latest}", flush=True)
    else:
        print(f"{who}no checkpoint in {checkpoint_dir}: starting fresh", flush=True)


class Interrupt:
    """Ctrl-C as a request to stop: the first SIGINT sets ``requested`` (the training loop
    finishes its step, saves and ends); a second one quits at once, and so does the first
    with ``at_once`` (a task with nothing to save: an evaluator)."""

    def __init__(self, at_once: bool = False, who: str = "") -> None:
        self.requested = threading.Event()
        self._at_once, self._who = at_once, who
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum, frame) -> None:
        if self._at_once:
            print(f"{self._who}interrupted", file=sys.stderr, flush=True)
            os._exit(130)
        if self.requested.is_set():   # the second one: quit now, without saving
            print("interrupted again: quitting without saving", file=sys.stderr, flush=True)
            os._exit(130)
        self.requested.set()

    def __bool__(self) -> bool:
        return self.requested.is_set()


class StopOnInterruptHook(tf.train.SessionRunHook):
    """Ends a MonitoredSession's loop after the step during which Ctrl-C came, so that the
    session closes normally and its CheckpointSaverHook saves."""

    def __init__(self, interrupt: Interrupt) -> None:
        self._interrupt = interrupt

    def after_run(self, run_context, run_values) -> None:
        if self._interrupt:
            run_context.request_stop()


class PeriodicSave:
    """``saver.save`` of ``sess`` to ``prefix`` every ``every_secs`` (``maybe``) or now."""

    def __init__(self, sess, saver, prefix: str, global_step, every_secs: float) -> None:
        self._sess, self._saver, self._prefix = sess, saver, prefix
        self._global_step, self._every = global_step, every_secs
        self._last = time.monotonic()

    def maybe(self) -> None:
        if time.monotonic() - self._last >= self._every:
            self.now()

    def now(self) -> str:
        path = save(self._sess, self._saver, self._prefix, self._global_step)
        self._last = time.monotonic()
        return path


def save(sess, saver, prefix: str, global_step) -> str:
    """Save now, numbered by the global step's value."""
    return saver.save(sess, prefix, global_step=int(sess.run(global_step)))


def interrupted(checkpoint_dir: str | None, who: str = "") -> int:
    """The one line an interrupted example prints, and its exit status (``checkpoint_dir``
    None: a task that does not save)."""
    latest = tf.train.latest_checkpoint(checkpoint_dir) if checkpoint_dir else None
    if latest:
        print(f"{who}interrupted: saved {latest}; run again to continue from it", file=sys.stderr,
              flush=True)
    elif checkpoint_dir is None:   # not the chief: it saves
        print(f"{who}interrupted", file=sys.stderr, flush=True)
    else:
        print(f"{who}interrupted: no checkpoint saved", file=sys.stderr, flush=True)
    return 130


def train_and_evaluate(estimator, train_spec, eval_spec, role: str) -> int:
    """``tf.estimator.train_and_evaluate`` for the task ``role`` ("local", "chief", "worker",
    "evaluator", "ps"), as the examples do it: the chief (or a local run) says whether it
    restores; Ctrl-C ends training after the step in flight, so that the Estimator's own
    last save runs; 130 then (after the one line), else 0."""
    who = "" if role == "local" else f"{role}: "
    saves = role in ("local", "chief")
    if saves:
        announce(estimator.model_dir, who)
    interrupt = Interrupt(at_once=role == "evaluator", who=who)
    hooks = list(train_spec.hooks or ()) + [StopOnInterruptHook(interrupt)]
    tf.estimator.train_and_evaluate(estimator, train_spec._replace(hooks=hooks), eval_spec)
    if interrupt:
        return interrupted(estimator.model_dir if saves else None, who)
    return 0


def wait_for_tasks(tasks: dict, jobs: tuple, timeout: float) -> dict:
    """A launcher's wait for its task processes' stdout; on Ctrl-C (which the tasks got too:
    they save and stop) it goes on waiting for them, and a second Ctrl-C is ignored."""
    try:
        return {job: tasks[job].communicate(timeout=timeout)[0] for job in jobs}
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        return {job: tasks[job].communicate(timeout=60)[0] for job in jobs}


def default_dir(name: str) -> str:
    """A checkpoint folder that survives the run (so that the next one continues)."""
    import tempfile

    return os.path.join(tempfile.gettempdir(), name)
