"""tf.summary.FileWriter: TensorBoard event files (``events.out.tfevents.<time>.<host>``)."""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any

import numpy as np

from zmtf.formats.summary_proto import encode_event, record


def _step(global_step: Any) -> int | None:
    return None if global_step is None else int(global_step)


class FileWriter:
    """Writes Events to ``logdir``; thread-safe; flushes on ``flush()``, ``close()`` and every
    ``flush_secs`` seconds when events are added."""

    def __init__(self, logdir: str, graph: Any = None, max_queue: int = 10, flush_secs: float = 120,
                 graph_def: Any = None, filename_suffix: str | None = None, session: Any = None) -> None:
        os.makedirs(logdir, exist_ok=True)
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}{filename_suffix or ''}"
        self._path = os.path.join(logdir, name)
        self._file = open(self._path, "ab")
        self._lock = threading.Lock()
        self._flush_secs, self._last_flush = flush_secs, time.monotonic()
        self._write(encode_event(time.time(), file_version="brain.Event:2"))
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)
        self.flush()

    def get_logdir(self) -> str:
        return os.path.dirname(self._path)

    def _write(self, event: bytes) -> None:
        with self._lock:
            if self._file.closed:
                raise ValueError(f"FileWriter for {self._path} is closed")
            self._file.write(record(event))
            if time.monotonic() - self._last_flush >= self._flush_secs:
                self._file.flush()
                self._last_flush = time.monotonic()

    def add_summary(self, summary: Any, global_step: Any = None) -> None:
        """``summary``: what a summary op's run returned (uint8 array), serialized bytes, or a
        ``tf.Summary`` built in Python."""
        if hasattr(summary, "SerializeToString"):
            data = summary.SerializeToString()
        else:
            data = summary.tobytes() if isinstance(summary, np.ndarray) else bytes(summary)
        self._write(encode_event(time.time(), step=_step(global_step), summary=data))

    def add_event(self, event: Any) -> None:
        """Write a ``tf.Event`` as it is (its wall_time and step included)."""
        self._write(event.SerializeToString())

    def add_session_log(self, session_log: Any, global_step: Any = None) -> None:
        """Write a ``tf.SessionLog`` (START after a restart, CHECKPOINT, STOP) at ``global_step``."""
        self._write(encode_event(time.time(), step=_step(global_step),
                                 session_log=session_log.SerializeToString()))

    def add_graph(self, graph: Any, global_step: Any = None, graph_def: Any = None) -> None:
        """Write the graph for TensorBoard's graph view: a ``tf.Graph`` (zmtf-only ops such as
        gradient helpers appear with their own op types) or a ``tf.GraphDef``."""
        from zmtf.interop.graph_def_io import display_graph_def

        if graph_def is None:
            graph_def = graph if hasattr(graph, "SerializeToString") else display_graph_def(graph)
        data = graph_def.SerializeToString() if hasattr(graph_def, "SerializeToString") else bytes(graph_def)
        self._write(encode_event(time.time(), step=_step(global_step), graph_def=data))

    def flush(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.flush()
                self._last_flush = time.monotonic()

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:   # a writer nobody closed (a run that failed) still ends its file
        file = getattr(self, "_file", None)
        if file is not None and not file.closed:
            file.close()
