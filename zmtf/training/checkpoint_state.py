"""``tf.train.generate_checkpoint_state_proto``: the CheckpointState that
``update_checkpoint_state`` would record, built in memory (nothing is written)."""

from __future__ import annotations

import logging
import os
from typing import Any, Iterable

from zmtf.training.saver import CheckpointState

_logger = logging.getLogger(__name__)


def generate_checkpoint_state_proto(save_dir: str | os.PathLike,
                                    model_checkpoint_path: str | os.PathLike,
                                    all_model_checkpoint_paths: Iterable[Any] | None = None,
                                    all_model_checkpoint_timestamps: Iterable[float] | None = None,
                                    last_preserved_timestamp: float | None = None
                                    ) -> CheckpointState:
    """As TF: ``model_checkpoint_path`` is appended to the kept paths unless it is already the
    last; when ``save_dir`` is relative, relative paths are rewritten relative to it. Unlike
    TF, the list passed in is not modified. zmtf's CheckpointState has no timestamps, so
    giving them raises NotImplementedError (after TF's length check)."""
    save_dir, latest = os.fspath(save_dir), os.fspath(model_checkpoint_path)
    kept = [os.fspath(p) for p in all_model_checkpoint_paths or []]
    if not kept or kept[-1] != latest:
        _logger.info("%s is not in all_model_checkpoint_paths. Manually adding it.", latest)
        kept.append(latest)
    timestamps = list(all_model_checkpoint_timestamps or [])
    if timestamps and len(timestamps) != len(kept):
        raise ValueError(f"Checkpoint timestamps, if provided, must match checkpoint paths (got "
                         f"paths {kept} and timestamps {timestamps})")
    if timestamps or last_preserved_timestamp is not None:
        raise NotImplementedError("zmtf's CheckpointState records no timestamps; leave "
                                  "all_model_checkpoint_timestamps and "
                                  "last_preserved_timestamp out")
    if not os.path.isabs(save_dir):
        relative = lambda p: p if os.path.isabs(p) else os.path.relpath(p, save_dir)  # noqa: E731
        latest, kept = relative(latest), [relative(p) for p in kept]
    return CheckpointState(latest, tuple(kept))


__all__ = ["generate_checkpoint_state_proto"]
