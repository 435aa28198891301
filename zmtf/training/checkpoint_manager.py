"""``tf.train.CheckpointManager``: numbered checkpoints of one Checkpoint, the newest kept.

    manager = tf.train.CheckpointManager(ckpt, "/tmp/run", max_to_keep=3)
    with tf.Session() as sess:          # save() uses the default session, as in TF graph mode
        manager.save()                  # "/tmp/run/ckpt-1", "ckpt-2", ...

Each save increments the Checkpoint's ``save_counter`` and (unless ``checkpoint_number`` is
given) numbers the file with it, writes the checkpoint, then atomically rewrites the
directory's "checkpoint" state file (relative paths), then deletes the oldest checkpoints
beyond ``max_to_keep`` (keeping one every ``keep_checkpoint_every_n_hours`` if set). A new
manager adopts the checkpoints the state file lists. zmtf's state file records no
timestamps, so adopted checkpoints count as saved when the manager was made.
"""

from __future__ import annotations

import collections
import logging
import os
import time
from typing import Any, Callable

from zmtf.framework.graph import default_session_getter
from zmtf.training.saver import get_checkpoint_state, update_checkpoint_state
from zmtf.training.tensor_bundle import bundle_files

_logger = logging.getLogger(__name__)


class CheckpointManager:
    """Saves ``checkpoint`` as ``<directory>/<checkpoint_name>-<n>`` and prunes old ones."""

    def __init__(self, checkpoint: Any, directory: str | os.PathLike, max_to_keep: int | None,
                 keep_checkpoint_every_n_hours: float | None = None,
                 checkpoint_name: str = "ckpt", step_counter: Any = None,
                 checkpoint_interval: int | None = None,
                 init_fn: Callable[[], Any] | None = None) -> None:
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError(f"Expected a positive integer or `None` for `max_to_keep`, "
                             f"got {max_to_keep}.")
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("`step_counter` should be passed if `checkpoint_interval` is "
                             "not None.")
        self._checkpoint = checkpoint
        self._max_to_keep = max_to_keep
        self._keep_every_n_hours = keep_checkpoint_every_n_hours
        self._directory = os.fspath(directory)
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._step_counter = step_counter
        self._checkpoint_interval = checkpoint_interval
        self._last_checkpoint_step: int | None = None
        self._init_fn = init_fn
        now = time.time()
        self._last_preserved = now - 1.0
        self._maybe_delete: collections.OrderedDict[str, float] = collections.OrderedDict()
        state = get_checkpoint_state(self._directory)
        self._latest = state.model_checkpoint_path if state else None
        for path in state.all_model_checkpoint_paths if state else ():
            self._maybe_delete[path] = now

    @property
    def directory(self) -> str:
        return self._directory

    @property
    def checkpoint(self) -> Any:
        return self._checkpoint

    @property
    def latest_checkpoint(self) -> str | None:
        """The newest checkpoint's prefix (saved or found in the state file), or None."""
        return self._latest

    @property
    def checkpoints(self) -> list[str]:
        """The checkpoints this manager keeps, oldest first."""
        return list(self._maybe_delete)

    @property
    def checkpoint_interval(self) -> int | None:
        return self._checkpoint_interval

    def _session(self) -> Any:
        session = default_session_getter[0]()
        if session is None:
            raise ValueError("CheckpointManager.save() in graph mode runs in the default "
                             "session: call it inside `with tf.Session() as sess:` (or "
                             "`with sess.as_default():`).")
        return session

    def _due(self, session: Any, check_interval: bool) -> bool:
        """With ``checkpoint_interval``: whether the step counter moved (far enough)."""
        if self._checkpoint_interval is None:
            return True
        step = int(session.run(self._step_counter))
        last = self._last_checkpoint_step
        if last is not None and (step == last or (
                check_interval and step < last + self._checkpoint_interval)):
            return False
        self._last_checkpoint_step = step
        return True

    def save(self, checkpoint_number: Any = None, check_interval: bool = True,
             options: Any = None) -> str | None:
        """Write the next checkpoint and return its prefix (None if the interval says wait)."""
        session = self._session()
        if not self._due(session, check_interval):
            return None
        number = self._checkpoint._increment_save_counter(session)
        if checkpoint_number is not None:
            number = (checkpoint_number if isinstance(checkpoint_number, int)
                      else session.run(checkpoint_number))
        path = self._checkpoint.write(f"{self._prefix}-{int(number)}", session=session)
        self._maybe_delete.pop(path, None)
        self._maybe_delete[path] = time.time()
        self._latest = path
        dropped = self._sweep()
        update_checkpoint_state(self._directory, path, list(self._maybe_delete),
                                save_relative_paths=True)
        for old in dropped:   # once the state file no longer names them
            for name in bundle_files(old):
                try:
                    os.remove(name)
                except OSError as error:
                    _logger.warning("Ignoring: failed to delete old checkpoint %s: %s", name, error)
        return path

    def _sweep(self) -> list[str]:
        """Forget the oldest checkpoints beyond max_to_keep; return those to delete (one every
        keep_checkpoint_every_n_hours is kept on disk, unlisted)."""
        dropped = []
        while self._max_to_keep and len(self._maybe_delete) > self._max_to_keep:
            path, saved_at = self._maybe_delete.popitem(last=False)
            if (self._keep_every_n_hours
                    and saved_at - self._keep_every_n_hours * 3600.0 >= self._last_preserved):
                self._last_preserved = saved_at
                continue
            dropped.append(path)
        return dropped

    def restore_or_initialize(self) -> str | None:
        """As TF: restore (build the restore ops of) the latest checkpoint and return its path,
        else call ``init_fn`` and return None."""
        if self._latest is not None:
            self._checkpoint.restore(self._latest)
            return self._latest
        if self._init_fn is not None:
            self._init_fn()
        return None


__all__ = ["CheckpointManager"]
