"""``tf.estimator``: TF1's Estimator over zmtf's MonitoredTrainingSession, Server and TF_CONFIG.

A model_fn builds the graph for a mode and returns an EstimatorSpec; ``Estimator`` trains,
evaluates and predicts with it, and ``train_and_evaluate`` turns a process into the role
TF_CONFIG gives it (ps, chief, worker, evaluator), as TF1's does.
"""

from zmtf.estimator import export, inputs
from zmtf.estimator.estimator import Estimator, WarmStartSettings
from zmtf.estimator.exporter import Exporter, FinalExporter, LatestExporter
from zmtf.estimator.mode_keys import ModeKeys
from zmtf.estimator.model_fn import EstimatorSpec
from zmtf.estimator.run_config import RunConfig
from zmtf.estimator.training import EvalSpec, TrainSpec, train_and_evaluate
from zmtf.training.session_run_hook import (
    CheckpointSaverHook, CheckpointSaverListener, FeedFnHook, FinalOpsHook, GlobalStepWaiterHook,
    LoggingTensorHook, NanLossDuringTrainingError, NanTensorHook, SecondOrStepTimer, SessionRunArgs,
    SessionRunContext, SessionRunHook, SessionRunValues, StepCounterHook, StopAtStepHook,
    SummarySaverHook,
)
from zmtf.training.profiler_hook import ProfilerHook

__all__ = [
    "CheckpointSaverHook", "CheckpointSaverListener", "Estimator", "EstimatorSpec", "EvalSpec",
    "Exporter", "FeedFnHook", "FinalExporter", "FinalOpsHook", "GlobalStepWaiterHook",
    "LatestExporter", "LoggingTensorHook", "ModeKeys",
    "NanLossDuringTrainingError", "NanTensorHook", "ProfilerHook", "RunConfig", "SecondOrStepTimer",
    "SessionRunArgs", "SessionRunContext", "SessionRunHook", "SessionRunValues", "StepCounterHook",
    "StopAtStepHook", "SummarySaverHook", "TrainSpec", "WarmStartSettings", "export", "inputs",
    "train_and_evaluate",
]
