"""tf.train.Supervisor: TF1's older helper for distributed training loops.

    sv = tf.train.Supervisor(is_chief=(task == 0), logdir=ckpt_dir, global_step=step)
    with sv.managed_session(server.target) as sess:
        while not sv.should_stop():
            sess.run(train_op)

The chief restores the newest checkpoint in ``logdir`` or runs ``init_op``; others wait
for it. ``managed_session`` yields a plain Session, starts the graph's queue runners, and
on the chief saves a checkpoint every ``save_model_secs`` on a background thread and once
more at the end. Summaries are not written (``summary_op`` is accepted and ignored).
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from zmtf.client.monitored_session import WORKER_POLL_SECS, Scaffold
from zmtf.client.session import Session
from zmtf.client.session_manager import SessionManager
from zmtf.framework.errors import OutOfRangeError
from zmtf.framework.graph import get_default_graph
from zmtf.train.coordinator import Coordinator
from zmtf.train.optimizers import get_global_step
from zmtf.train.queue_runner import start_queue_runners

USE_DEFAULT = 0


class Supervisor:
    def __init__(self, graph: Any = None, ready_op: Any = USE_DEFAULT, is_chief: bool = True,
                 init_op: Any = USE_DEFAULT, init_feed_dict: dict | None = None,
                 local_init_op: Any = USE_DEFAULT, logdir: str | None = None,
                 summary_op: Any = USE_DEFAULT, saver: Any = USE_DEFAULT,
                 global_step: Any = USE_DEFAULT, save_summaries_secs: float = 120,
                 save_model_secs: float = 600, recovery_wait_secs: float = 30,
                 stop_grace_secs: float = 120, checkpoint_basename: str = "model.ckpt",
                 **_unused: Any) -> None:
        self._graph = graph or get_default_graph()
        with self._graph.as_default():
            self._scaffold = Scaffold(
                init_op=None if init_op is USE_DEFAULT else init_op, init_feed_dict=init_feed_dict,
                local_init_op=None if local_init_op is USE_DEFAULT else local_init_op,
                saver=None if saver is USE_DEFAULT else saver,
                ready_op=None if ready_op is USE_DEFAULT else ready_op)
            self._scaffold.finalize()
            self._global_step = get_global_step(self._graph) if global_step is USE_DEFAULT else global_step
        self._is_chief, self._logdir = is_chief, logdir
        self._save_secs, self._grace = save_model_secs, stop_grace_secs
        self._max_wait = max(recovery_wait_secs * 240, 60.0)
        self._path = os.path.join(logdir, checkpoint_basename) if logdir else None
        self._coord = Coordinator(clean_stop_exception_types=[OutOfRangeError])
        self._threads: list[threading.Thread] = []

    is_chief = property(lambda self: self._is_chief)
    coord = property(lambda self: self._coord)
    saver = property(lambda self: self._scaffold.saver)
    global_step = property(lambda self: self._global_step)
    init_op = property(lambda self: self._scaffold.init_op)

    def prepare_or_wait_for_session(self, master: str = "", config: Any = None, **_unused: Any) -> Session:
        """A session whose variables are ready: initialized or restored (chief), or waited for."""
        manager = SessionManager(local_init_op=self._scaffold.local_init_op,
                                 ready_op=self._scaffold.ready_op, graph=self._graph,
                                 recovery_wait_secs=WORKER_POLL_SECS)
        if self._is_chief:
            if self._logdir:
                os.makedirs(self._logdir, exist_ok=True)
            session = manager.prepare_session(master, init_op=self._scaffold.init_op,
                                              saver=self._scaffold.saver, checkpoint_dir=self._logdir,
                                              config=config, init_feed_dict=self._scaffold.init_feed_dict)
        else:
            session = manager.wait_for_session(master, config, self._max_wait)
        self._threads.extend(start_queue_runners(session, coord=self._coord))
        if self._is_chief and self._path and self._save_secs and self._scaffold.saver is not None:
            saver = threading.Thread(target=self._save_loop, args=(session,), daemon=True,
                                     name="SupervisorCheckpoints")
            self._coord.register_thread(saver)
            saver.start()
        return session

    def _save_loop(self, session: Any) -> None:
        while not self._coord.wait_for_stop(self._save_secs):
            self._save(session)

    def _save(self, session: Any) -> None:
        step = session.run(self._global_step) if self._global_step is not None else None
        self._scaffold.saver.save(session, self._path, global_step=step)  # type: ignore[union-attr]

    @contextmanager
    def managed_session(self, master: str = "", config: Any = None,
                        start_standard_services: bool = True,
                        close_summary_writer: bool = True) -> Iterator[Session]:
        session = self.prepare_or_wait_for_session(master, config=config)
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
                self.stop()
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

    def start_queue_runners(self, sess: Any, queue_runners: Any = None) -> list[threading.Thread]:
        threads = start_queue_runners(sess, coord=self._coord)
        self._threads.extend(threads)
        return threads
