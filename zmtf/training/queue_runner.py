"""tf.train.QueueRunner: threads that run enqueue ops in a loop until the queue closes.

SyncReplicasOptimizer's chief runs its sync op this way::

    coord = tf.train.Coordinator()
    threads = opt.get_chief_queue_runner().create_threads(sess, coord=coord, start=True)
    ...                     # train
    coord.request_stop()
    sess.close()            # cancels the sync op still waiting for gradients
    coord.join(threads)

A loop ends cleanly on OutOfRangeError or CancelledError (its queue or session closed),
and quietly on any error that arrives after the coordinator was asked to stop.
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

from zmtf.framework.graph import GraphKeys, Operation, default_session_getter, get_default_graph
from zmtf.training.coordinator import QUEUE_CLOSED_ERRORS, Coordinator


class QueueRunner:
    """Holds a queue, the ops that fill it, and the ops that close it on the way out."""

    def __init__(self, queue: Any = None, enqueue_ops: Sequence[Operation] | None = None,
                 close_op: Operation | None = None, cancel_op: Operation | None = None,
                 queue_closed_exception_types: Sequence[type] | None = None) -> None:
        if queue is None or not enqueue_ops:
            raise ValueError("QueueRunner needs a queue and a non-empty list of enqueue_ops")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = cancel_op if cancel_op is not None else queue.close(
            cancel_pending_enqueues=True)
        self._closed_errors = tuple(queue_closed_exception_types or QUEUE_CLOSED_ERRORS)
        self._lock = threading.Lock()
        self._runs_per_session: dict[int, int] = {}
        self._exceptions_raised: list[BaseException] = []

    queue = property(lambda self: self._queue)
    enqueue_ops = property(lambda self: list(self._enqueue_ops))
    close_op = property(lambda self: self._close_op)
    cancel_op = property(lambda self: self._cancel_op)
    queue_closed_exception_types = property(lambda self: self._closed_errors)

    @property
    def name(self) -> str:
        return self._queue.name

    @property
    def exceptions_raised(self) -> list[BaseException]:
        """Errors the loops stopped on, when no coordinator was there to take them."""
        with self._lock:
            return list(self._exceptions_raised)

    def create_threads(self, sess: Any, coord: Coordinator | None = None, daemon: bool = False,
                       start: bool = False) -> list[threading.Thread]:
        """One thread per enqueue op (plus, with ``coord``, one that runs cancel_op on stop)."""
        with self._lock:
            if self._runs_per_session.get(id(sess), 0) > 0:
                return []  # already running in this session, as TF
            self._runs_per_session[id(sess)] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [threading.Thread(target=self._run, args=(sess, op, coord), daemon=daemon,
                                    name=f"QueueRunner-{self.name}-{i}")
                   for i, op in enumerate(self._enqueue_ops)]
        if coord is not None:
            threads.append(threading.Thread(target=self._close_on_stop, args=(sess, coord),
                                            daemon=True, name=f"QueueRunnerStop-{self.name}"))
        for thread in threads:
            if coord is not None:
                coord.register_thread(thread)
            if start:
                thread.start()
        return threads

    def _run(self, sess: Any, enqueue_op: Operation, coord: Coordinator | None) -> None:
        try:
            while coord is None or not coord.should_stop():
                try:
                    sess.run(enqueue_op)
                except self._closed_errors:
                    break
        except Exception as error:  # noqa: BLE001 - handed to the coordinator or kept
            if coord is not None and coord.should_stop():
                return  # stopping anyway: the session may be closing under us
            if coord is not None:
                coord.request_stop(error)
            else:
                with self._lock:
                    self._exceptions_raised.append(error)
                raise
        finally:
            self._last_one_closes(sess)

    def _last_one_closes(self, sess: Any) -> None:
        with self._lock:
            left = self._runs_per_session.get(id(sess), 1) - 1
            self._runs_per_session[id(sess)] = left
        if left == 0:
            try:
                sess.run(self._close_op)
            except Exception:  # noqa: BLE001 - the session may be closed already
                pass

    def _close_on_stop(self, sess: Any, coord: Coordinator) -> None:
        """On stop, cancel_op; unlike TF, also return once every loop has ended by itself, so
        that coord.join() does not wait for a stop nobody will request."""
        while not coord.wait_for_stop(0.1):
            with self._lock:
                if self._runs_per_session.get(id(sess), 0) <= 0:
                    return
        try:
            sess.run(self._cancel_op)
        except Exception:  # noqa: BLE001 - the session may be closed already
            pass


def add_queue_runner(qr: QueueRunner, collection: str = GraphKeys.QUEUE_RUNNERS) -> None:
    """Register ``qr`` so that start_queue_runners() starts it."""
    get_default_graph().add_to_collection(collection, qr)


def start_queue_runners(sess: Any = None, coord: Coordinator | None = None, daemon: bool = True,
                        start: bool = True,
                        collection: str = GraphKeys.QUEUE_RUNNERS) -> list[threading.Thread]:
    """Start the threads of every queue runner in ``collection`` of the session's graph."""
    sess = sess if sess is not None else default_session_getter[0]()
    if sess is None:
        raise ValueError("start_queue_runners() needs a session: pass sess=..., or call it inside "
                         "`with sess.as_default():` (or `with tf.Session() as sess:`)")
    graph = sess.graph
    threads: list[threading.Thread] = []
    for qr in graph.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
