"""Checkpoints as files, for evaluation jobs and housekeeping: ``checkpoints_iterator`` (the
TF1 evaluator's loop over each new checkpoint a trainer writes), ``get_checkpoint_mtimes``,
``remove_checkpoint`` and ``load_checkpoint``."""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Callable, Iterator

from zmtf.training.checkpoint_reader import CheckpointReader, _prefix
from zmtf.training.saver import checkpoint_data_files, checkpoint_file, latest_checkpoint
from zmtf.training.meta_graph import meta_graph_filename

_logger = logging.getLogger("zmtf.train")


def load_checkpoint(ckpt_dir_or_file: str | os.PathLike) -> CheckpointReader:
    """A reader of the checkpoint (or of a folder's newest one)."""
    return CheckpointReader(_prefix(ckpt_dir_or_file))


def wait_for_new_checkpoint(checkpoint_dir: str | os.PathLike, last_checkpoint: str | None = None,
                            seconds_to_sleep: float = 1, timeout: float | None = None) -> str | None:
    """The newest checkpoint once it is not ``last_checkpoint``; None after ``timeout`` s."""
    stop_time = time.time() + timeout if timeout is not None else None
    while True:
        path = latest_checkpoint(checkpoint_dir)
        if path is not None and path != last_checkpoint:
            return path
        if stop_time is not None and time.time() + seconds_to_sleep > stop_time:
            return None
        time.sleep(seconds_to_sleep)


def checkpoints_iterator(checkpoint_dir: str | os.PathLike, min_interval_secs: float = 0,
                         timeout: float | None = None,
                         timeout_fn: Callable[[], bool] | None = None) -> Iterator[str]:
    """Each new checkpoint in ``checkpoint_dir`` as it appears, at most one per
    ``min_interval_secs``. After ``timeout`` s without one: stop, unless ``timeout_fn`` says
    to go on waiting (returns False)."""
    path = None
    while True:
        newer = wait_for_new_checkpoint(checkpoint_dir, path, timeout=timeout)
        if newer is None:
            if timeout_fn is None:
                _logger.info("Timed-out waiting for a checkpoint.")
                return
            if timeout_fn():
                return
            continue
        start = time.time()
        path = newer
        yield path
        pause = start + min_interval_secs - time.time()
        if pause > 0:
            time.sleep(pause)


def get_checkpoint_mtimes(checkpoint_prefixes: list[str]) -> list[float]:
    """The modification times of the checkpoints that exist (others are skipped, as TF)."""
    times = []
    for prefix in checkpoint_prefixes:
        try:
            times.append(os.stat(checkpoint_file(os.fspath(prefix)) or prefix).st_mtime)
        except OSError:
            _logger.warning("checkpoint %s not found", prefix)
    return times


def remove_checkpoint(checkpoint_prefix: str | os.PathLike, checkpoint_format_version: Any = None,
                      meta_graph_suffix: str = "meta") -> None:
    """Delete a checkpoint's files (its data, zmtf's or TF's V2, and its meta graph)."""
    prefix = os.fspath(checkpoint_prefix)
    for path in checkpoint_data_files(prefix) + [meta_graph_filename(prefix, meta_graph_suffix)]:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
