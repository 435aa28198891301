"""The TF1 root namespace (``tf.*``): what ``import zmtf as tf`` shows, loaded on first use.

Re-exports only: each name lives in the package that implements it (framework, ops, training,
client, ...); ``zmtf/__init__.py`` resolves ``tf.<name>`` here lazily. Importing it starts no
threads, opens no sockets and compiles no kernels.
"""

import sys as _sys

from zmtf.tf1 import app, data, errors, layers, linalg, logging, losses, manip, math, metrics, nn, sparse, strings, summary, test, train
from zmtf.tf1 import gfile, initializers, io, profiler, python_io
from zmtf.tf1 import debugging, dtypes, nest, random, sets
from zmtf import feature_column
from zmtf.tf1 import lookup
from zmtf import saved_model
from zmtf.tf1.image import random_crop, reverse  # also binds tf.image (zmtf/tf1/image.py)
reverse_v2 = reverse
from zmtf.platform.app import flags
from zmtf.client.async_session import AsyncSession
from zmtf.formats.config_proto import (
    ConfigProto, GPUOptions, GraphOptions, OptimizerOptions, RunMetadata, RunOptions,
)
from zmtf.client.session import InteractiveSession, Session, get_default_session
from zmtf.framework.device_spec import DeviceSpec
from zmtf.formats.event_proto import Event, HistogramProto, SessionLog, Summary
from zmtf.framework.dtypes import (
    DType, as_dtype, bool_ as bool, complex64, complex128, double, float16, float32, float64, half, int8, int16, int32, int64,
    resource, string, uint8, uint16, uint32, uint64, variant,
)
from zmtf.framework.graph import (
    Graph, GraphKeys, Operation, Tensor, get_default_graph, reset_default_graph,
)
from zmtf.framework.errors import OpError
from zmtf.framework.indexed_slices import IndexedSlices, IndexedSlicesValue
from zmtf.framework.sparse_tensor import SparseTensor, SparseTensorValue
from zmtf.ops.sparse_ops import (
    sparse_mask, sparse_placeholder, sparse_reorder, sparse_reshape, sparse_retain,
    sparse_tensor_to_dense, sparse_to_dense, sparse_concat, sparse_fill_empty_rows, sparse_slice,
)
from zmtf.ops.sparse_math_ops import sparse_add, sparse_reduce_sum, sparse_tensor_dense_matmul
from zmtf.ops.array_ops import (
    broadcast_to, concat, expand_dims, fill, identity, one_hot, ones, ones_like, placeholder,
    rank, reshape, shape, size, squeeze, stack, stop_gradient, transpose, zeros, zeros_like,
)
from zmtf.ops.cond_ops import case, cond, switch_case
from zmtf.ops.complex_ops import angle, complex, conj, imag, real
from zmtf.ops.while_ops import while_loop
from zmtf.ops.functional_ops import foldl, foldr, map_fn, scan
from zmtf.ops.tensor_array_ops import TensorArray
from zmtf.ops.diag_ops import (
    diag, diag_part, matrix_band_part, matrix_diag, matrix_diag_part, matrix_set_diag, trace,
)
from zmtf.ops.einsum_ops import einsum
from zmtf.ops.manip_ops import meshgrid, roll
from zmtf.ops.linalg_ops import matrix_transpose, norm, tensordot
from zmtf.ops.unique_ops import unique, unique_with_counts
from zmtf.ops.script_ops import numpy_function, py_func
from zmtf.ops.csv_ops import decode_csv
from zmtf.framework.gradient_registry import NotDifferentiable, RegisterGradient
NoGradient = no_gradient = NotDifferentiable
from zmtf.ops.custom_gradient import custom_gradient
from zmtf.ops.bincount_ops import bincount
from zmtf.ops.print_ops import print_v2 as print
from zmtf.ops.sort_ops import argsort, searchsorted, sort
from zmtf.ops.array_extras_ops import (
    batch_gather, parallel_stack, repeat, setdiff1d, unravel_index,
)
from zmtf.ops.math_extras_ops import (
    accumulate_n, clip_by_average_norm, histogram_fixed_width, histogram_fixed_width_bins,
    saturate_cast,
)
from zmtf.ops.shape_utils import (
    broadcast_dynamic_shape, broadcast_static_shape, dimension_at_index, dimension_value,
    ensure_shape, get_static_value,
)
from zmtf.ops.linalg_solve_ops import (
    cholesky, log_matrix_determinant, matrix_determinant, matrix_inverse, matrix_solve,
    matrix_triangular_solve,
)
from zmtf.ops.special_ops import digamma, erf, erfc, lgamma, polygamma, zeta
from zmtf.ops.special_extras_ops import betainc, igamma, igammac, lbeta
from zmtf.ops.string_ops import (
    as_string, decode_raw, string_join, string_to_hash_bucket, string_to_hash_bucket_fast,
    string_to_hash_bucket_strong, string_to_number,
)
from zmtf.ops.text_ops import reduce_join, regex_replace, strip as string_strip, substr
from zmtf.ops.string_split_ops import string_split
from zmtf.ops.parsing_ops import FixedLenFeature, VarLenFeature, parse_example, parse_single_example
from zmtf.ops.constant_op import constant, convert_to_tensor
from zmtf.ops.control_flow_ops import group, no_op, tuple_ as tuple
from zmtf.ops.data_flow_ops import (
    ConditionalAccumulator, FIFOQueue, PaddingFIFOQueue, QueueBase, RandomShuffleQueue,
)
from zmtf.ops.io_ops import (
    FixedLengthRecordReader, IdentityReader, ReaderBase, TextLineReader, TFRecordReader,
    WholeFileReader,
)
from zmtf.ops.math_ops import (
    abs, add, add_n, argmax, argmin, cast, divide, equal, exp, floordiv, floormod, greater,
    greater_equal, less, less_equal, log, logical_and, logical_not, logical_or, matmul, maximum,
    minimum, multiply, negative, not_equal, pow, reciprocal, reduce_all, reduce_any, reduce_max,
    reduce_mean, reduce_min, reduce_prod, reduce_sum, rsqrt, sigmoid, sign, sqrt, square,
    squared_difference, subtract, tanh, to_double, to_float, to_int32, to_int64, truediv, floor, ceil, round, is_nan, is_finite,
    cumprod, cumsum, cos, expm1, log1p, logical_xor, sin, is_inf, rint,
)
from zmtf.ops.trig_ops import acos, acosh, asin, asinh, atan, atan2, atanh, cosh, sinh, tan
from zmtf.ops.division_ops import div_no_nan, floor_div, realdiv, truncatediv, truncatemod
from zmtf.ops.composite_ops import (
    check_numerics, clip_by_global_norm, confusion_matrix, clip_by_norm, clip_by_value, count_nonzero, global_norm,
    identity_n, log_sigmoid, placeholder_with_default, print_ as Print, range_ as range, reduce_logsumexp,
    scalar_mul, shape_n, verify_tensor_all_finite,
)
from zmtf.ops.check_ops import (
    assert_ as Assert, assert_equal, assert_greater, assert_greater_equal, assert_integer,
    assert_less, assert_less_equal, assert_negative, assert_non_negative, assert_non_positive,
    assert_none_equal, assert_positive, assert_rank, assert_rank_at_least, assert_scalar,
    assert_type,
)
from zmtf.ops.partition_ops import (
    dynamic_partition, dynamic_stitch, invert_permutation, unsorted_segment_sum,
)
from zmtf.ops.segment_ops import (
    segment_max, segment_mean, segment_min, segment_prod, segment_sum, unsorted_segment_max,
    unsorted_segment_mean, unsorted_segment_min, unsorted_segment_prod,
)
from zmtf.ops.random_distributions import multinomial, random_gamma, random_poisson
from zmtf.ops.math_compositions import unsorted_segment_sqrt_n
from zmtf.ops.check_extras import (
    assert_near, assert_proper_iterable, assert_rank_in, assert_same_float_dtype,
    is_non_decreasing, is_numeric_tensor, is_strictly_increasing,
)
from zmtf.ops.random_ops import random_normal, random_shuffle, random_uniform, set_random_seed, truncated_normal
from zmtf.ops.sequence_ops import (
    eye, gather_nd, lin_space, linspace, reverse_sequence, scatter_nd, sequence_mask,
)
from zmtf.ops import sequence_grad as _sequence_grad  # noqa: F401 (registers the gradients)
from zmtf.ops.selection_ops import (
    boolean_mask, gather, newaxis, pad, slice, split, strided_slice, tile, unstack, where,
    where_v2,
)
from zmtf.ops.init_ops import (
    constant_initializer, glorot_normal_initializer, glorot_uniform_initializer, ones_initializer,
    orthogonal_initializer, random_normal_initializer, random_uniform_initializer,
    truncated_normal_initializer, uniform_unit_scaling_initializer, variance_scaling_initializer,
    zeros_initializer,
)
from zmtf.ops.linalg_solve_ops import qr
from zmtf.ops.linalg_decomp_ops import cross, self_adjoint_eig, self_adjoint_eigvals, svd
from zmtf.ops.linalg_compositions import cholesky_solve, matrix_solve_ls
from zmtf.ops.template import Template, make_template
from zmtf.formats.graph_def_proto import (
    AttrValue, GraphDef, NodeDef, TensorProto, TensorShapeProto, VersionDef, make_ndarray,
    make_tensor_proto,
)
from zmtf.interop.graph_util import import_graph_def
from zmtf.tf1 import graph_util
from zmtf import compat, contrib
from zmtf.compat.behavior import (
    disable_control_flow_v2, disable_eager_execution, disable_resource_variables, disable_tensor_equality,
    disable_v2_behavior, enable_eager_execution, enable_resource_variables, enable_v2_behavior,
    executing_eagerly, resource_variables_enabled,
)
from zmtf.ops.variable_scope import (
    AUTO_REUSE, PartitionedVariable, VariableScope, fixed_size_partitioner, get_local_variable,
    get_variable, get_variable_scope, variable_scope,
)
from zmtf.ops.scatter_ops import (
    scatter_add, scatter_div, scatter_max, scatter_min, scatter_mul, scatter_nd_add, scatter_nd_sub,
    scatter_nd_update, scatter_sub, scatter_update,
)
from zmtf.ops.tensor_scatter_ops import (
    tensor_scatter_nd_add, tensor_scatter_nd_max, tensor_scatter_nd_min, tensor_scatter_nd_sub,
    tensor_scatter_nd_update,
)
tensor_scatter_add, tensor_scatter_sub = tensor_scatter_nd_add, tensor_scatter_nd_sub
tensor_scatter_update = tensor_scatter_nd_update
from zmtf.ops.partitioners import (
    create_partitioned_variables, min_max_variable_partitioner, no_regularizer,
    variable_axis_size_partitioner,
)
from zmtf.ops.deprecated_scopes import container, op_scope, variable_op_scope
from zmtf.ops.file_ops import decode_base64, encode_base64, matching_files, read_file, write_file
from zmtf.ops.space_batch_ops import (  # image/nn ops TF1 also puts at the top level
    batch_to_space, batch_to_space_nd, depth_to_space, space_to_batch, space_to_batch_nd,
    space_to_depth,
)
from zmtf.ops.patches_ops import extract_image_patches
from zmtf.ops.state_ops import assign, assign_add, assign_sub, count_up_to, is_variable_initialized
from zmtf.framework.scopes import (
    add_to_collection, add_to_collections, colocate_with, control_dependencies, device,
    get_collection, get_collection_ref, init_scope, name_scope,
)
from zmtf.framework.tensor_shape import Dimension, TensorShape
from zmtf.ops.variables import (
    Variable, VariableAggregation, VariableSynchronization, assert_variables_initialized, all_variables, global_variables, global_variables_initializer, initialize_all_tables,
    initialize_all_variables, initialize_local_variables, initialize_variables, is_tensor,
    local_variables, local_variables_initializer, model_variables, moving_average_variables,
    report_uninitialized_variables, tables_initializer, trainable_variables, variables_initializer,
)

mod = floormod
div = truediv
mul = multiply
sub = subtract
neg = negative

# tf.__version__ is the TF1 release zmtf follows (scripts compare it); zmtf's own: ZMTF_VERSION
from zmtf.framework.versions import COMPILER_VERSION, GIT_VERSION, VERSION, ZMTF_VERSION  # noqa: E402
from zmtf.framework.versions import __version__  # noqa: E402
from zmtf.framework import versions as version  # noqa: E402  (tf.version.VERSION, ...)

__all__ = [name for name in dir() if not name.startswith("_")]

from zmtf import estimator  # noqa: E402  (builds on the client and distributed layers)
from zmtf import distribute  # noqa: E402  (cluster resolvers: client layer)

from zmtf.training.gradients import gradients  # noqa: E402
from zmtf.training.hessians import hessians  # noqa: E402
from zmtf.runtime.gpus import list_local_devices as list_devices  # noqa: E402


from zmtf import keras  # noqa: E402  (graph-mode tf.keras over the framework's ops)

#: TF1 names a script may use that zmtf does not provide, and what to do instead
_NOT_BUILT: dict[str, str] = {}


def __getattr__(name: str) -> object:
    """A TF1 name zmtf lacks: say so, and what to use instead, rather than a bare AttributeError."""
    if name.startswith("__"):
        raise AttributeError(f"module 'zmtf' has no attribute {name!r}")
    hint = _NOT_BUILT.get(name, "zmtf implements a subset of TensorFlow 1.x; docs/supported.md lists what "
                                 "is built")
    raise AttributeError(f"module 'zmtf' has no attribute {name!r}: tf.{name} is not in zmtf ({hint})")
