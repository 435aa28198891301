"""tf.summary.FileWriterCache: one FileWriter per log directory, shared by every hook.

TF1's hooks (StepCounterHook, SummarySaverHook) write into the same events file of a
directory through this cache, so TensorBoard sees one run per directory, not one per hook.
A writer the cache creates writes the default graph first, as TF1's does: that is how a
``MonitoredTrainingSession(checkpoint_dir=...)`` puts the graph in TensorBoard."""

from __future__ import annotations

import threading

from zmtf.framework.graph import get_default_graph
from zmtf.training.summary_writer import FileWriter


class FileWriterCache:
    """``get(logdir)`` returns the directory's one writer; ``clear()`` closes them all."""

    _writers: dict[str, FileWriter] = {}
    _lock = threading.Lock()

    @staticmethod
    def get(logdir: str) -> FileWriter:
        with FileWriterCache._lock:
            writer = FileWriterCache._writers.get(logdir)
            if writer is None:
                writer = FileWriter(logdir, graph=get_default_graph())
                FileWriterCache._writers[logdir] = writer
            return writer

    @staticmethod
    def clear() -> None:
        with FileWriterCache._lock:
            for writer in FileWriterCache._writers.values():
                writer.close()
            FileWriterCache._writers.clear()
