"""``tf.train``: the training helpers of ``zmtf.training`` with the cluster classes
(``zmtf.distributed``) and the session classes (``zmtf.client``), as TF's namespace gathers them.
"""

import types as _types

from zmtf.formats.example_proto import BytesList, Example, Feature, Features, FloatList, Int64List
from zmtf.training.adadelta import AdadeltaOptimizer
from zmtf.training.adagrad_da import AdagradDAOptimizer
from zmtf.training.basic_loops import LooperThread, basic_train_loop
from zmtf.training.coordinator import Coordinator
from zmtf.training.device_setter import GreedyLoadBalancingStrategy, byte_size_load_fn, replica_device_setter
from zmtf.training.optimizers import (
    AdagradOptimizer, AdamOptimizer, RMSPropOptimizer, GradientDescentOptimizer, MomentumOptimizer, Optimizer,
    assert_global_step, create_global_step,
    get_global_step, get_or_create_global_step, global_step,
)
from zmtf.training.ftrl import FtrlOptimizer
from zmtf.training.proximal import ProximalAdagradOptimizer, ProximalGradientDescentOptimizer
from zmtf.training.input import (
    batch, batch_join, input_producer, limit_epochs, maybe_batch, maybe_batch_join,
    maybe_shuffle_batch, maybe_shuffle_batch_join, range_input_producer, shuffle_batch,
    shuffle_batch_join, slice_input_producer, string_input_producer,
)
from zmtf.ops.file_ops import match_filenames_once
from zmtf.training.learning_rate_decay import (
    cosine_decay, cosine_decay_restarts, exponential_decay, inverse_time_decay, linear_cosine_decay,
    natural_exp_decay, noisy_linear_cosine_decay, piecewise_constant, piecewise_constant_decay,
    polynomial_decay,
)
from zmtf.training.checkpoint import Checkpoint
from zmtf.training.checkpoint_manager import CheckpointManager
from zmtf.training.checkpoint_state import generate_checkpoint_state_proto
from zmtf.training.checkpoint_reader import NewCheckpointReader, list_variables, load_variable
from zmtf.training.checkpoint_utils import (
    checkpoints_iterator, get_checkpoint_mtimes, load_checkpoint, remove_checkpoint,
)
from zmtf.training.meta_graph import export_meta_graph, write_graph
from zmtf.training.saver import import_meta_graph
from zmtf.training.moving_averages import ExponentialMovingAverage
from zmtf.training.queue_runner import QueueRunner, add_queue_runner, start_queue_runners
from zmtf.training.saver import (
    CheckpointState, Saver, SaverDef, checkpoint_exists, get_checkpoint_state, latest_checkpoint,
    update_checkpoint_state,
)
from zmtf.training.session_run_hook import (
    CheckpointSaverHook, CheckpointSaverListener, FeedFnHook, FinalOpsHook, GlobalStepWaiterHook,
    LoggingTensorHook, NanLossDuringTrainingError, NanTensorHook, SecondOrStepTimer, SessionRunArgs, SessionRunContext,
    SessionRunHook, SessionRunValues, StepCounterHook, StopAtStepHook, SummarySaverHook,
)
from zmtf.training.profiler_hook import ProfilerHook
from zmtf.training.summary_iterator import summary_iterator
from zmtf.training.sync_replicas_optimizer import SyncReplicasOptimizer
from zmtf.training.warm_start import init_from_checkpoint
from zmtf.tf1 import train_experimental as experimental
from zmtf.distributed.cluster_spec import ClusterSpec
from zmtf.distributed.server import Server
from zmtf.formats.cluster_def_proto import ClusterDef, JobDef
from zmtf.formats.server_def_proto import ServerDef
from zmtf.client.monitored_session import (
    ChiefSessionCreator, MonitoredSession, MonitoredTrainingSession, Scaffold, SessionCreator,
    SingularMonitoredSession, WorkerSessionCreator,
)
from zmtf.client.session_manager import SessionManager
from zmtf.client.supervisor import Supervisor

__all__ = [
    "BytesList", "Example", "Feature", "Features", "FloatList", "Int64List",
    "AdadeltaOptimizer", "AdagradDAOptimizer", "ExponentialMovingAverage", "FtrlOptimizer", "AdagradOptimizer", "AdamOptimizer", "RMSPropOptimizer", "CheckpointSaverHook", "CheckpointState", "LoggingTensorHook", "NanLossDuringTrainingError", "NanTensorHook",
    "SessionRunArgs", "SessionRunContext", "SessionRunHook", "SessionRunValues", "StepCounterHook",
    "StopAtStepHook", "SummarySaverHook", "Coordinator", "GradientDescentOptimizer",
    "GreedyLoadBalancingStrategy", "MomentumOptimizer", "Optimizer", "QueueRunner", "Saver",
    "SyncReplicasOptimizer", "add_queue_runner", "byte_size_load_fn", "checkpoint_exists",
    "create_global_step", "exponential_decay", "inverse_time_decay", "natural_exp_decay",
    "piecewise_constant", "polynomial_decay", "generate_checkpoint_state_proto", "get_checkpoint_state", "get_global_step", "get_or_create_global_step",
    "global_step", "latest_checkpoint", "replica_device_setter", "start_queue_runners",
    "update_checkpoint_state", "batch", "input_producer", "limit_epochs", "range_input_producer",
    "shuffle_batch", "slice_input_producer", "batch_join", "shuffle_batch_join",
    "string_input_producer",
]
__all__ += ["NewCheckpointReader", "list_variables", "load_variable"]
__all__ += ["CheckpointSaverListener", "FeedFnHook", "FinalOpsHook", "GlobalStepWaiterHook",
            "SecondOrStepTimer", "cosine_decay", "init_from_checkpoint", "linear_cosine_decay",
            "ProximalAdagradOptimizer", "ProximalGradientDescentOptimizer", "LooperThread",
            "assert_global_step", "basic_train_loop"]
__all__ += ["export_meta_graph", "import_meta_graph", "write_graph"]
__all__ += ["NanLossDuringTrainingError", "checkpoints_iterator", "cosine_decay_restarts",
            "get_checkpoint_mtimes", "load_checkpoint", "noisy_linear_cosine_decay",
            "piecewise_constant_decay", "remove_checkpoint", "ProfilerHook", "summary_iterator"]
__all__ += ["SaverDef"]
__all__ += ["match_filenames_once", "maybe_batch", "maybe_batch_join", "maybe_shuffle_batch",
            "maybe_shuffle_batch_join"]
__all__ += ["Checkpoint", "CheckpointManager"]
__all__ += ["experimental"]

# tf.train.queue_runner: TF1's module of the same three names
queue_runner = _types.SimpleNamespace(
    QueueRunner=QueueRunner, add_queue_runner=add_queue_runner,
    start_queue_runners=start_queue_runners)
__all__ += ["queue_runner"]
