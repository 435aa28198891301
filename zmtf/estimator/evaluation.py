"""One evaluation pass: run the metrics' update ops over the eval input, then read them.

This is TF1's ``evaluation._evaluate_once`` over zmtf's MonitoredSession: restore the
checkpoint (or initialize, when there is none), run ``update_op`` until the input ends or
``steps`` runs are done, and fetch the metric values once at the end. The results go to
``model_dir/eval[_name]`` as a summary event at the checkpoint's global step, as TF writes
them, so TensorBoard and ``summary_iterator`` read them back.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from zmtf.client.monitored_session import ChiefSessionCreator, MonitoredSession
from zmtf.formats.event_proto import Summary
from zmtf.training.session_run_hook import FinalOpsHook, SessionRunHook
from zmtf.training.summary_writer import FileWriter

log = logging.getLogger("tensorflow")


class StopAfterNEvalsHook(SessionRunHook):
    """Stop an evaluation after ``num_evals`` runs of its update op."""

    def __init__(self, num_evals: int) -> None:
        self._num_evals, self._done = num_evals, 0

    def after_run(self, run_context: Any, run_values: Any) -> None:
        self._done += 1
        log.info("Evaluation [%d/%d]", self._done, self._num_evals)
        if self._done >= self._num_evals:
            run_context.request_stop()


def evaluate_once(checkpoint_path: str | None, master: str, scaffold: Any, update_op: Any,
                  final_ops: dict[str, Any], hooks: list[Any], config: Any) -> dict[str, Any]:
    """Run update_op to the end of the input (or the hooks' stop) and return final_ops' values."""
    final_hook = FinalOpsHook(final_ops)
    creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                  checkpoint_filename_with_path=checkpoint_path)
    log.info("Starting evaluation%s", f" of {checkpoint_path}" if checkpoint_path else "")
    with MonitoredSession(creator, list(hooks) + [final_hook]) as session:
        while not session.should_stop():
            session.run(update_op)
    log.info("Finished evaluation")
    return final_hook.final_ops_values


def _summary_value(key: str, value: Any) -> Summary.Value | None:
    """A scalar metric as a simple_value (what TF writes); other values are skipped, logged."""
    if isinstance(value, (float, int, np.floating, np.integer)) or (
            isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "fiu"):
        return Summary.Value(tag=key, simple_value=float(value))
    log.warning("Skipping summary for %s, must be a float, np.float32, np.int64, np.int32 or int.", key)
    return None


def write_dict_to_summary(output_dir: str, results: dict[str, Any], global_step: int) -> None:
    """Write the metrics (all but global_step) as one summary event at global_step."""
    log.info("Saving dict for global step %d: %s", global_step, ", ".join(
        f"{key} = {value}" for key, value in sorted(results.items()) if not isinstance(value, bytes)))
    values = [_summary_value(key, value) for key, value in results.items()
              if value is not None and key != "global_step"]
    writer = FileWriter(output_dir)
    try:
        writer.add_summary(Summary(value=[v for v in values if v is not None]), global_step)
    finally:
        writer.close()
