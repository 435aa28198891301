"""tf.train.ProfilerHook: every N steps (or seconds) a traced run, saved as a Chrome trace.

``timeline-<global step>.json`` in ``output_dir``, from the run's step stats: on a cluster
they hold every task's nodes (each task reports its partition's timings to the master).
"""

from __future__ import annotations

import os
from typing import Any

from zmtf.formats.config_proto import RunOptions
from zmtf.framework.graph import get_default_graph
from zmtf.training.optimizers import get_global_step
from zmtf.training.session_run_hook import (
    SecondOrStepTimer, SessionRunArgs, SessionRunContext, SessionRunHook, SessionRunValues,
)
from zmtf.training.timeline import Timeline


class ProfilerHook(SessionRunHook):
    def __init__(self, save_steps: int | None = None, save_secs: float | None = None,
                 output_dir: str = "", show_dataflow: bool = True, show_memory: bool = False) -> None:
        if (save_steps is None) == (save_secs is None):
            raise ValueError("exactly one of save_steps and save_secs should be provided")
        self._output_file = os.path.join(output_dir, "timeline-{}.json")
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._show_dataflow, self._show_memory = show_dataflow, show_memory
        self._next_step: int | None = None
        self._traced = False

    def begin(self) -> None:
        self._next_step = None
        self._global_step = get_global_step(get_default_graph())
        if self._global_step is None:
            raise RuntimeError("Global step should be created to use ProfilerHook.")

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        self._traced = self._next_step is not None and self._timer.should_trigger_for_step(self._next_step)
        options = RunOptions(trace_level=RunOptions.FULL_TRACE) if self._traced else None
        return SessionRunArgs({"global_step": self._global_step}, options=options)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        # zmtf's fetched variable values are read when the step ends: the value after the
        # run's own update (TF's resource variables give the one before: TF adds 1)
        step = int(run_values.results["global_step"])
        if self._next_step is None:
            self._timer.update_last_triggered_step(step - 1)
        if self._traced:   # as TF: named by the global step after the traced run
            step = int(run_context.session.run(self._global_step))
            self._timer.update_last_triggered_step(step)
            self._save(step, run_values.run_metadata)
        self._next_step = step + 1

    def _save(self, step: int, run_metadata: Any) -> None:
        os.makedirs(os.path.dirname(self._output_file) or ".", exist_ok=True)
        trace = Timeline(run_metadata.step_stats).generate_chrome_trace_format(
            show_dataflow=self._show_dataflow, show_memory=self._show_memory)
        with open(self._output_file.format(step), "w") as f:
            f.write(trace)
