"""tf.train.SessionManager: TF1's session preparation, which Supervisor and monitored sessions
are built from in TF, and which scripts also use directly::

    sm = tf.train.SessionManager()
    if is_chief:
        sess = sm.prepare_session(server.target, init_op=init, saver=saver, checkpoint_dir=logdir)
    else:
        sess = sm.wait_for_session(server.target)   # until the chief has initialized

The chief restores a checkpoint if there is one, else runs ``init_op``/``init_fn``, then the
local init op; the model must then be *ready* (``ready_op``: by default every global
variable is initialized) or RuntimeError says what was tried. Others open sessions until
one is ready, ``recovery_wait_secs`` apart, up to ``max_wait_secs``.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import logging

import numpy as np

from zmtf.client.session import Session
from zmtf.framework.errors import DeadlineExceededError
from zmtf.framework.graph import get_default_graph
from zmtf.ops.variables import global_variables, report_uninitialized_variables
from zmtf.training.saver import latest_checkpoint


_log = logging.getLogger("zmtf.client")


class SessionManager:
    def __init__(self, local_init_op: Any = None, ready_op: Any = None,
                 ready_for_local_init_op: Any = None, graph: Any = None,
                 recovery_wait_secs: float = 30, local_init_run_options: Any = None,
                 local_init_feed_dict: dict | None = None) -> None:
        self._graph = graph or get_default_graph()
        with self._graph.as_default():
            self._ready_op = ready_op if ready_op is not None else \
                report_uninitialized_variables(global_variables())
        self._local_init_op, self._ready_for_local_init_op = local_init_op, ready_for_local_init_op
        self._local_init_feed_dict = local_init_feed_dict
        self._local_init_run_options = local_init_run_options
        self._recovery_wait_secs = recovery_wait_secs

    # ---- the chief -----------------------------------------------------------------------
    def prepare_session(self, master: str, init_op: Any = None, saver: Any = None,
                        checkpoint_dir: str | None = None,
                        checkpoint_filename_with_path: str | None = None,
                        wait_for_checkpoint: bool = False, max_wait_secs: float = 7200,
                        config: Any = None, init_feed_dict: dict | None = None,
                        init_fn: Callable[[Any], None] | None = None) -> Session:
        """A ready session: restored from a checkpoint, else initialized by init_op/init_fn."""
        session, restored = self.recover_session(
            master, saver, checkpoint_dir, checkpoint_filename_with_path, wait_for_checkpoint,
            max_wait_secs, config)
        try:
            if not restored:
                if init_op is None and init_fn is None and self._local_init_op is None:
                    raise RuntimeError("Model is not initialized and no init_op or init_fn or "
                                       "local_init_op was given")
                if init_op is not None:
                    session.run(init_op, feed_dict=init_feed_dict)
                if init_fn is not None:
                    init_fn(session)
                _log.info("No checkpoint to restore%s: the model was initialized",
                          f" in {checkpoint_dir}" if checkpoint_dir else "")
            self._local_init(session)
            not_ready = self._not_ready(session)
            if not_ready:
                raise RuntimeError(f"Init operations did not make model ready. Init op: "
                                   f"{getattr(init_op, 'name', init_op)}, init fn: {init_fn}, "
                                   f"not ready: {not_ready}")
        except BaseException:
            session.close()
            raise
        return session

    def recover_session(self, master: str, saver: Any = None, checkpoint_dir: str | None = None,
                        checkpoint_filename_with_path: str | None = None,
                        wait_for_checkpoint: bool = False, max_wait_secs: float = 7200,
                        config: Any = None) -> tuple[Session, bool]:
        """(session, whether it restored a checkpoint and is ready to use)."""
        session = Session(master, graph=self._graph, config=config)
        try:
            path = self._checkpoint(saver, checkpoint_dir, checkpoint_filename_with_path,
                                    wait_for_checkpoint, max_wait_secs)
            if path is None:
                return session, False
            saver.restore(session, path)
            _log.info("Restored the model from %s", path)
            self._local_init(session)
            return session, not self._not_ready(session)
        except BaseException:
            session.close()
            raise

    def _checkpoint(self, saver: Any, checkpoint_dir: str | None, path: str | None,
                    wait: bool, max_wait_secs: float) -> str | None:
        if saver is None:
            return None
        if path is not None:
            return path
        if checkpoint_dir is None:   # neither a checkpoint nor a directory to look in
            return None
        deadline = time.monotonic() + max_wait_secs
        while True:
            found = latest_checkpoint(checkpoint_dir)
            if found is not None or not wait:
                return found
            if time.monotonic() >= deadline:
                return None
            time.sleep(min(self._recovery_wait_secs, max(deadline - time.monotonic(), 0.0)))

    # ---- the others ---------------------------------------------------------------------
    def wait_for_session(self, master: str, config: Any = None,
                         max_wait_secs: float = float("inf")) -> Session:
        """A session once the model is ready (the chief has initialized or restored it);
        DeadlineExceededError after ``max_wait_secs``."""
        deadline = time.monotonic() + max_wait_secs
        session = Session(master, graph=self._graph, config=config)   # one, asked again and again
        try:
            while True:
                if self._local_init(session, only_if_ready=True) and not self._not_ready(session):
                    return session
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DeadlineExceededError(None, None, f"Session was not ready after waiting "
                                                f"{max_wait_secs} secs.")
                time.sleep(min(self._recovery_wait_secs, left))
        except BaseException:
            session.close()
            raise

    # ---- readiness ----------------------------------------------------------------------
    def _local_init(self, session: Session, only_if_ready: bool = False) -> bool:
        """Run the local init op, once ``ready_for_local_init_op`` holds; False if it does
        not (then nothing ran)."""
        if self._local_init_op is None:
            return True
        if self._ready_for_local_init_op is not None and \
                _not_ready_names(session.run(self._ready_for_local_init_op)):
            if only_if_ready:
                return False
            raise RuntimeError("the model is not ready for its local init op "
                               "(ready_for_local_init_op)")
        session.run(self._local_init_op, feed_dict=self._local_init_feed_dict,
                    options=self._local_init_run_options)
        return True

    def _not_ready(self, session: Session) -> list[str]:
        return _not_ready_names(session.run(self._ready_op)) if self._ready_op is not None else []


def _not_ready_names(value: Any) -> list[str]:
    """What a ready op says is not ready: TF's ready ops give the names (empty when ready);
    zmtf's default gives one bool per variable (all True when ready)."""
    items = value if isinstance(value, (list, tuple)) else [value]
    missing = []
    for k, item in enumerate(items):
        array = np.asarray(item)
        if array.dtype == np.bool_:
            if not array.all():
                missing.append(f"ready check {k}")
        elif array.size:   # names, as report_uninitialized_variables gives them
            missing.extend(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
                           for v in array.ravel())
    return missing
