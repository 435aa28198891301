"""``tf.test.Benchmark``: the base class of TF1 benchmark files, so they import and run.

A subclass's ``benchmark*`` methods time things and call ``report_benchmark``, which logs
one TF-worded line (logger ``zmtf.testing``) and, when ``TEST_REPORT_FILE_PREFIX`` is set
as in TF's harness, writes the entry next to it as JSON (zmtf has no BenchmarkEntries
protobuf). ``run_op_benchmark`` runs an op in a session and reports its median wall time.
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any

import numpy as np

_logger = logging.getLogger("zmtf.testing")

#: every Benchmark subclass defined so far (TF keeps such a registry too)
GLOBAL_BENCHMARK_REGISTRY: set[type] = set()


class Benchmark:
    """Base class of a benchmark: methods named ``benchmark*`` measure something and call
    ``report_benchmark``."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        GLOBAL_BENCHMARK_REGISTRY.add(cls)

    def _default_name(self) -> str:
        """``<Class>.<benchmark method>``: the calling benchmark method, as TF names entries."""
        import inspect

        for frame in inspect.stack()[2:]:
            if frame.function.startswith("benchmark"):
                return f"{type(self).__name__}.{frame.function}"
        return type(self).__name__

    def report_benchmark(self, iters: int | None = None, cpu_time: float | None = None,
                         wall_time: float | None = None, throughput: float | None = None,
                         extras: dict[str, Any] | None = None, name: str | None = None,
                         metrics: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Record one benchmark result; returns the entry (a dict of what was given)."""
        entry = {"name": name or self._default_name(), "iters": iters, "cpu_time": cpu_time,
                 "wall_time": wall_time, "throughput": throughput, "extras": dict(extras or {}),
                 "metrics": list(metrics or [])}
        _logger.info("Benchmark [%s] iters: %d, wall_time: %g, cpu_time: %g, throughput: %g, "
                     "extras: %s, metrics: %s", entry["name"], iters or -1, wall_time or -1,
                     cpu_time or -1, throughput or -1, entry["extras"], entry["metrics"])
        prefix = os.environ.get("TEST_REPORT_FILE_PREFIX")
        if prefix:
            path = prefix + entry["name"].replace("/", "__")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(entry, f, default=str)
        return entry

    def run_op_benchmark(self, sess: Any, op_or_tensor: Any, feed_dict: Any = None,
                         burn_iters: int = 2, min_iters: int = 10, store_trace: bool = False,
                         store_memory_usage: bool = True, name: str | None = None,
                         extras: dict[str, Any] | None = None, mbs: int = 0) -> dict[str, Any]:
        """Run ``op_or_tensor`` ``burn_iters`` times untimed, then ``min_iters`` times timed;
        report and return the median wall time (seconds)."""
        for _ in range(burn_iters):
            sess.run(op_or_tensor, feed_dict=feed_dict)
        deltas = []
        for _ in range(min_iters):
            start = time.perf_counter()
            sess.run(op_or_tensor, feed_dict=feed_dict)
            deltas.append(time.perf_counter() - start)
        extras = dict(extras or {})
        wall_time = float(np.median(deltas))
        throughput = mbs / wall_time if mbs and wall_time > 0 else None
        self.report_benchmark(iters=min_iters, wall_time=wall_time, extras=extras, name=name,
                              throughput=throughput)
        return {"iters": min_iters, "wall_time": wall_time, "extras": extras}

    def evaluate(self, tensors: Any) -> Any:
        """``tensors`` run in the default session."""
        from zmtf.client.session import get_default_session

        sess = get_default_session()
        if sess is None:
            raise ValueError("Benchmark.evaluate needs a default session: use it inside "
                             "`with tf.Session().as_default():`")
        return sess.run(tensors)


def benchmark_config() -> Any:
    """The ConfigProto TF's benchmarks run with: Grappler's dependency optimization off, as
    TF's (zmtf runs no Grappler; the field is recorded, so the config's bytes are TF's)."""
    from zmtf.formats.config_proto import ConfigProto
    from zmtf.formats.rewriter_config_proto import RewriterConfig

    config = ConfigProto()
    config.graph_options.rewrite_options.dependency_optimization = RewriterConfig.OFF
    return config


__all__ = ["Benchmark", "GLOBAL_BENCHMARK_REGISTRY", "benchmark_config"]
