"""tf.train.Supervisor: TF1's older helper for distributed training loops.

    sv = tf.train.Supervisor(is_chief=(task == 0), logdir=ckpt_dir, global_step=step)
    with sv.managed_session(server.target) as sess:
        while not sv.should_stop():
            sess.run(train_op)

The chief restores the newest checkpoint in ``logdir`` or runs ``init_op``; others wait
for it (both through ``tf.train.SessionManager``). ``managed_session`` yields a plain
Session and starts the graph's queue runners; on the chief it also starts TF1's standard
services, each a LooperThread under the supervisor's coordinator: a checkpoint every
``save_model_secs``, the summaries of ``summary_op`` (default: ``tf.summary.merge_all()``)
every ``save_summaries_secs`` into ``logdir``'s event file, and a ``global_step/sec``
summary at the same pace. A last checkpoint is saved when the block ends. As TF's, the
constructor finalizes the graph: make every op (a sync optimizer's init tokens op, a
summary) before it.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from zmtf.client.monitored_session import WORKER_POLL_SECS, Scaffold
from zmtf.client.session import Session
from zmtf.client.session_manager import SessionManager
from zmtf.framework.errors import OutOfRangeError
from zmtf.framework.graph import get_default_graph
from zmtf.formats.summary_proto import scalar_summary
from zmtf.training.basic_loops import LooperThread
from zmtf.training.coordinator import Coordinator
from zmtf.training.optimizers import get_global_step
from zmtf.training.queue_runner import start_queue_runners
from zmtf.training.summary_writer import FileWriter

USE_DEFAULT = 0


class Supervisor:
    def __init__(self, graph: Any = None, ready_op: Any = USE_DEFAULT, is_chief: bool = True,
                 init_op: Any = USE_DEFAULT, init_feed_dict: dict | None = None,
                 local_init_op: Any = USE_DEFAULT, logdir: str | None = None,
                 summary_op: Any = USE_DEFAULT, saver: Any = USE_DEFAULT,
                 global_step: Any = USE_DEFAULT, save_summaries_secs: float = 120,
                 save_model_secs: float = 600, recovery_wait_secs: float = 30,
                 stop_grace_secs: float = 120, checkpoint_basename: str = "model.ckpt",
                 summary_writer: Any = USE_DEFAULT, init_fn: Callable[[Any], None] | None = None,
                 ready_for_local_init_op: Any = USE_DEFAULT, **_unused: Any) -> None:
        self._graph = graph or get_default_graph()
        with self._graph.as_default():
            self._scaffold = Scaffold(
                init_op=None if init_op is USE_DEFAULT else init_op, init_feed_dict=init_feed_dict,
                local_init_op=None if local_init_op is USE_DEFAULT else local_init_op,
                saver=None if saver is USE_DEFAULT else saver,
                ready_op=None if ready_op is USE_DEFAULT else ready_op,
                ready_for_local_init_op=None if ready_for_local_init_op is USE_DEFAULT
                else ready_for_local_init_op,
                summary_op=None if summary_op is USE_DEFAULT else summary_op)
            self._global_step = get_global_step(self._graph) if global_step is USE_DEFAULT else global_step
            self._scaffold.finalize()    # as TF: the graph cannot change from here on
            self._summary_op = self._scaffold.summary_op if summary_op is USE_DEFAULT else summary_op
        self._is_chief, self._logdir, self._init_fn = is_chief, logdir, init_fn
        self._save_secs, self._summary_secs, self._grace = save_model_secs, save_summaries_secs, stop_grace_secs
        self._max_wait = max(recovery_wait_secs * 240, 60.0)
        self._path = os.path.join(logdir, checkpoint_basename) if logdir else None
        if summary_writer is USE_DEFAULT:
            summary_writer = FileWriter(logdir) if is_chief and logdir else None
        self._summary_writer = summary_writer
        self._coord = Coordinator(clean_stop_exception_types=[OutOfRangeError])
        self._threads: list[threading.Thread] = []

    is_chief = property(lambda self: self._is_chief)
    coord = property(lambda self: self._coord)
    saver = property(lambda self: self._scaffold.saver)
    global_step = property(lambda self: self._global_step)
    init_op = property(lambda self: self._scaffold.init_op)
    ready_op = property(lambda self: self._scaffold.ready_op)
    summary_op = property(lambda self: self._summary_op)
    summary_writer = property(lambda self: self._summary_writer)
    save_path = property(lambda self: self._path)
    save_model_secs = property(lambda self: self._save_secs)
    save_summaries_secs = property(lambda self: self._summary_secs)

    def prepare_or_wait_for_session(self, master: str = "", config: Any = None,
                                    start_standard_services: bool = True, **_unused: Any) -> Session:
        """A session whose variables are ready: initialized or restored (chief), or waited for;
        its queue runners started, and on the chief the standard services."""
        manager = SessionManager(local_init_op=self._scaffold.local_init_op,
                                 ready_op=self._scaffold.ready_op,
                                 ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
                                 graph=self._graph, recovery_wait_secs=WORKER_POLL_SECS)
        if self._is_chief:
            if self._logdir:
                os.makedirs(self._logdir, exist_ok=True)
            session = manager.prepare_session(master, init_op=self._scaffold.init_op,
                                              saver=self._scaffold.saver, checkpoint_dir=self._logdir,
                                              config=config, init_feed_dict=self._scaffold.init_feed_dict,
                                              init_fn=self._init_fn)
            if start_standard_services:
                self.start_standard_services(session)
        else:
            session = manager.wait_for_session(master, config, self._max_wait)
        self.start_queue_runners(session)
        return session

    def start_standard_services(self, sess: Any) -> list[threading.Thread]:
        """The chief's checkpoint, summary and steps-per-second threads (TF1's)."""
        if not self._is_chief:
            raise RuntimeError("Only chief supervisor can start standard services. Because only "
                               "chief supervisors can write events.")
        threads: list[threading.Thread] = []
        if self._path and self._save_secs and self._scaffold.saver is not None:
            threads.append(self.loop(self._save_secs, self._save, args=(sess,)))
        if self._summary_writer is not None and self._summary_secs:
            if self._summary_op is not None:
                threads.append(self.loop(self._summary_secs, self._write_summaries, args=(sess,)))
            if self._global_step is not None:
                counter = _StepRate(sess, self._global_step, self._summary_writer)
                threads.append(self.loop(self._summary_secs, counter))
        return threads

    def loop(self, timer_interval_secs: float | None, target: Callable[..., Any], args: Any = None,
             kwargs: Any = None) -> LooperThread:
        """Call ``target(*args, **kwargs)`` every ``timer_interval_secs`` on a thread until the
        supervisor stops."""
        looper = LooperThread.loop(self._coord, timer_interval_secs, target, args, kwargs)
        self._threads.append(looper)
        return looper

    def _save(self, session: Any) -> None:
        saver, path = self._scaffold.saver, self._path
        assert saver is not None and path, "_save runs only with a saver and a logdir"
        step = session.run(self._global_step) if self._global_step is not None else None
        saver.save(session, path, global_step=step)

    def _write_summaries(self, session: Any) -> None:
        if self._global_step is not None:
            summary, step = session.run([self._summary_op, self._global_step])
        else:
            summary, step = session.run(self._summary_op), None
        self._summary_writer.add_summary(summary, step)   # looped only with a writer

    def summary_computed(self, sess: Any, summary: Any, global_step: Any = None) -> None:
        """Write a summary the caller ran (the chief's writer); RuntimeError without one."""
        if self._summary_writer is None:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step is not None:
            global_step = sess.run(self._global_step)
        self._summary_writer.add_summary(summary, global_step)

    @contextmanager
    def managed_session(self, master: str = "", config: Any = None,
                        start_standard_services: bool = True,
                        close_summary_writer: bool = True) -> Iterator[Session]:
        session = self.prepare_or_wait_for_session(master, config=config,
                                                   start_standard_services=start_standard_services)
        failed = False
        try:
            yield session
        except OutOfRangeError:
            pass
        except BaseException:
            failed = True
            raise
        finally:
            try:
                if self._is_chief and self._path and self._scaffold.saver is not None and not failed:
                    self._save(session)
            finally:
                self.stop(close_summary_writer=close_summary_writer)
                session.close()

    def should_stop(self) -> bool:
        return self._coord.should_stop()

    def request_stop(self, ex: Any = None) -> None:
        self._coord.request_stop(ex)

    def stop(self, threads: Any = None, close_summary_writer: bool = True,
             ignore_live_threads: bool = False) -> None:
        self._coord.request_stop()
        try:
            self._coord.join(threads, stop_grace_period_secs=self._grace,
                             ignore_live_threads=ignore_live_threads)
        except OutOfRangeError:
            pass
        finally:
            if close_summary_writer and self._summary_writer is not None:
                self._summary_writer.close()

    def wait_for_stop(self) -> None:
        self._coord.wait_for_stop()

    def stop_on_exception(self) -> Any:
        return self._coord.stop_on_exception()

    def start_queue_runners(self, sess: Any, queue_runners: Any = None) -> list[threading.Thread]:
        """The threads of ``queue_runners`` (default: the graph's QUEUE_RUNNERS collection),
        under the supervisor's coordinator (a SyncReplicas chief passes its chief runner)."""
        if queue_runners is None:
            threads = start_queue_runners(sess, coord=self._coord)
        else:
            threads = [t for qr in queue_runners
                       for t in qr.create_threads(sess, coord=self._coord, daemon=True, start=True)]
        self._threads.extend(threads)
        return threads


class _StepRate:
    """TF1's SVStepCounterThread: a ``global_step/sec`` summary each time it is called."""

    def __init__(self, session: Any, global_step: Any, writer: Any) -> None:
        self._session, self._global_step, self._writer = session, global_step, writer
        self._last: tuple[float, int] | None = None

    def __call__(self) -> None:
        step, now = int(self._session.run(self._global_step)), time.monotonic()
        if self._last is not None and now > self._last[0]:
            rate = (step - self._last[1]) / (now - self._last[0])
            self._writer.add_summary(scalar_summary("global_step/sec", rate), step)
        self._last = (now, step)
