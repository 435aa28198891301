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
from collections.abc import MutableSequence
from typing import Any, Sequence

from zmtf.formats.queue_runner_proto import QueueRunnerDef
from zmtf.framework.errors import (
    CODE_TO_CLASS, CancelledError, InvalidArgumentError, OutOfRangeError,
    error_code_from_exception_type, exception_type_from_error_code,
)
from zmtf.framework.graph import (
    Graph, GraphKeys, Operation, default_session_getter, get_default_graph,
)
from zmtf.interop.meta_graph import ItemCodec, register_item_codec
from zmtf.training.coordinator import Coordinator


class QueueRunner:
    """Holds a queue, the ops that fill it, and the ops that close it on the way out."""

    def __init__(self, queue: Any = None, enqueue_ops: Sequence[Any] | None = None,
                 close_op: Operation | None = None, cancel_op: Operation | None = None,
                 queue_closed_exception_types: Sequence[type] | None = None,
                 queue_runner_def: QueueRunnerDef | None = None,
                 import_scope: str | None = None) -> None:
        """``queue_closed_exception_types``: the errors that mean "the queue closed" (default
        OutOfRangeError, as TF); a CancelledError (the session closed under a loop) ends a
        loop cleanly too. ``queue_runner_def`` rebuilds a runner from ``to_proto()``'s output
        (by op names, in the default graph; ``import_scope`` prefixes them)."""
        if queue_runner_def is not None:
            if queue is not None or enqueue_ops:
                raise ValueError("queue_runner_def and queue are mutually exclusive.")
            self._init_from_proto(queue_runner_def, import_scope)
        else:
            if queue is None or not enqueue_ops:
                raise ValueError("Must provide queue and enqueue_ops.")
            self._queue = queue
            self._enqueue_ops = list(enqueue_ops)
            self._close_op = close_op if close_op is not None else queue.close()
            self._cancel_op = cancel_op if cancel_op is not None else queue.close(
                cancel_pending_enqueues=True)
            self._closed_errors = tuple(queue_closed_exception_types or (OutOfRangeError,))
        self._lock = threading.Lock()
        self._runs_per_session: dict[int, int] = {}
        self._exceptions_raised: list[BaseException] = []

    def _init_from_proto(self, queue_runner_def: QueueRunnerDef, import_scope: str | None) -> None:
        graph = get_default_graph()

        def element(name: str) -> Any:
            return graph.as_graph_element(f"{import_scope}/{name}" if import_scope else name)

        self._queue = element(queue_runner_def.queue_name)
        self._enqueue_ops = [element(name) for name in queue_runner_def.enqueue_op_name]
        self._close_op = element(queue_runner_def.close_op_name)
        self._cancel_op = element(queue_runner_def.cancel_op_name)
        # a QueueRunnerDef written before the field existed means OutOfRangeError, as in TF
        self._closed_errors = tuple(exception_type_from_error_code(code)
                                    for code in queue_runner_def.queue_closed_exception_types
                                    ) or (OutOfRangeError,)

    queue = property(lambda self: self._queue)
    enqueue_ops = property(lambda self: list(self._enqueue_ops))
    close_op = property(lambda self: self._close_op)
    cancel_op = property(lambda self: self._cancel_op)
    queue_closed_exception_types = property(lambda self: self._closed_errors)

    @property
    def name(self) -> str:
        """The queue's name (what ``get_collection(QUEUE_RUNNERS, scope)`` matches)."""
        return str(self._queue.name)

    @property
    def exceptions_raised(self) -> list[BaseException]:
        """Errors the loops stopped on, when no coordinator was there to take them."""
        with self._lock:
            return list(self._exceptions_raised)

    def to_proto(self, export_scope: str | None = None) -> QueueRunnerDef | None:
        """This runner as a QueueRunnerDef (op names, ``export_scope`` stripped); None when
        the queue is not under ``export_scope``."""
        if export_scope is not None and not self.name.startswith(export_scope):
            return None
        return QueueRunnerDef(
            queue_name=_strip_scope(self.name, export_scope),
            enqueue_op_name=[_strip_scope(op.name, export_scope) for op in self._enqueue_ops],
            close_op_name=_strip_scope(self._close_op.name, export_scope),
            cancel_op_name=_strip_scope(self._cancel_op.name, export_scope),
            queue_closed_exception_types=[error_code_from_exception_type(cls)
                                          for cls in self._closed_errors])

    @staticmethod
    def from_proto(queue_runner_def: QueueRunnerDef, import_scope: str | None = None) -> QueueRunner:
        """The runner ``to_proto()`` described, over the default graph's ops."""
        return QueueRunner(queue_runner_def=queue_runner_def, import_scope=import_scope)

    def create_threads(self, sess: Any, coord: Coordinator | None = None, daemon: bool = False,
                       start: bool = False) -> list[threading.Thread]:
        """One thread per enqueue op (plus, with ``coord``, one that runs cancel_op on stop),
        named as TF names them: ``QueueRunnerThread-<queue>-<op>``."""
        with self._lock:
            if self._runs_per_session.get(id(sess), 0) > 0:
                return []  # already running in this session, as TF
            self._runs_per_session[id(sess)] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [threading.Thread(target=self._run, args=(sess, op, coord), daemon=daemon,
                                    name=f"QueueRunnerThread-{self.name}-{op.name}")
                   for op in self._enqueue_ops]
        if coord is not None:
            threads.append(threading.Thread(target=self._close_on_stop, args=(sess, coord),
                                            daemon=daemon,
                                            name=f"QueueRunnerThread-{self.name}-close_on_stop"))
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
                except self._closed_errors + (CancelledError,):
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
    """Start the threads of every queue runner in ``collection`` of the session's graph.

    A MonitoredSession starts its graph's queue runners itself: given one, this returns []
    (as TF, for the scripts that call it anyway); anything else that is not a session is a
    TypeError."""
    sess = sess if sess is not None else default_session_getter[0]()
    if sess is None:
        raise ValueError("Cannot start queue runners: No default session is registered. Use "
                         "`with sess.as_default()` or pass an explicit session to "
                         "tf.train.start_queue_runners(sess=sess)")
    if _is_monitored_session(sess):
        return []
    if not callable(getattr(sess, "run", None)) or not hasattr(sess, "graph"):
        raise TypeError(f"sess must be a `tf.Session` object. Given class: {type(sess)}")
    threads: list[threading.Thread] = []
    for qr in sess.graph.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads


def _is_monitored_session(sess: Any) -> bool:
    """TF's test, by class name: training cannot import the client package's class."""
    return any(cls.__name__ in ("MonitoredSession", "SingularMonitoredSession")
               for cls in type(sess).__mro__)


def _strip_scope(name: str, scope: str | None) -> str:
    """``name`` without a leading ``scope/`` (TF's ops.strip_name_scope for plain names)."""
    if scope and name.startswith(scope.rstrip("/") + "/"):
        return name[len(scope.rstrip("/")) + 1:]
    return name


# ---- in meta graphs (export_meta_graph / import_meta_graph) ---------------------------------
_DEF_FIELDS = ("queue_name", "enqueue_op_name", "close_op_name", "cancel_op_name",
               "queue_closed_exception_types")


def _runner_to_plain(runner: QueueRunner) -> dict[str, Any]:
    proto = runner.to_proto()
    assert proto is not None   # no export scope: always a def
    return {name: list(value) if isinstance(value, MutableSequence) else value
            for name in _DEF_FIELDS for value in [getattr(proto, name)]}


def _runner_from_plain(graph: Graph, plain: Any, where: str, rename: Any) -> QueueRunner:
    """A QueueRunner over ``graph``'s ops, from a document that may be hostile: every name
    must name an op or tensor there, every code a TF error code."""
    if not isinstance(plain, dict) or set(plain) != set(_DEF_FIELDS):
        raise InvalidArgumentError(f"meta graph {where}: a queue_runner must be a map with "
                                   f"exactly the keys {list(_DEF_FIELDS)}")
    names = [plain["queue_name"], plain["close_op_name"], plain["cancel_op_name"]]
    enqueues, codes = plain["enqueue_op_name"], plain["queue_closed_exception_types"]
    if not isinstance(enqueues, list) or not enqueues or not all(
            isinstance(n, str) for n in names + enqueues):
        raise InvalidArgumentError(f"meta graph {where}: a queue_runner's names must be strings, "
                                   f"with at least one enqueue op")
    if not isinstance(codes, list) or not all(type(c) is int and c in CODE_TO_CLASS for c in codes):
        raise InvalidArgumentError(f"meta graph {where}: queue_closed_exception_types must be "
                                   f"TF error codes")
    proto = QueueRunnerDef(queue_name=rename(names[0]), close_op_name=rename(names[1]),
                           cancel_op_name=rename(names[2]),
                           enqueue_op_name=[rename(n) for n in enqueues],
                           queue_closed_exception_types=codes)
    try:
        with graph.as_default():
            return QueueRunner(queue_runner_def=proto)
    except (KeyError, ValueError, TypeError) as error:
        raise InvalidArgumentError(f"meta graph {where}: {error}") from None


register_item_codec(ItemCodec("queue_runner", lambda item: isinstance(item, QueueRunner),
                              _runner_to_plain, _runner_from_plain))
