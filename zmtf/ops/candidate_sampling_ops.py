"""tf.nn.log_uniform_candidate_sampler, uniform_candidate_sampler and compute_accidental_hits.

The samplers are stateful random ops seeded like TF1's (graph seed + op seed) and have no
gradient. Each returns (sampled_candidates int64 [num_sampled], true_expected_count float32
[batch, num_true], sampled_expected_count float32 [num_sampled]); the kernels are in
zmtf/kernels/cpu/sampling.py.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape

SAMPLER_OPS = ("LogUniformCandidateSampler", "UniformCandidateSampler")


@op_def(*SAMPLER_OPS, stateful=True)
def _sampler_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    true_classes = inputs[0]
    if true_classes.shape.ndims not in (None, 2):
        raise ValueError(f"candidate sampler: true_classes must be a matrix [batch, num_true], got "
                         f"{true_classes.name} of shape {true_classes.shape}")
    batch = true_classes.shape.as_list()[0] if true_classes.shape.ndims else None
    sampled = TensorShape([attrs["num_sampled"]])
    return [(dtypes.int64, sampled), (dtypes.float32, TensorShape([batch, attrs["num_true"]])),
            (dtypes.float32, sampled)]


def _sampler(op_type: str, true_classes: Any, num_true: int, num_sampled: int, unique: bool,
             range_max: int, seed: int | None, name: str | None) -> tuple[Tensor, Tensor, Tensor]:
    if range_max < 1 or num_sampled < 1 or num_true < 1:
        raise ValueError(f"{op_type}: num_true ({num_true}), num_sampled ({num_sampled}) and "
                         f"range_max ({range_max}) must be positive")
    if unique and num_sampled > range_max:
        raise ValueError(f"{op_type}: cannot draw num_sampled={num_sampled} unique classes out of "
                         f"range_max={range_max}; pass unique=False or sample fewer")
    classes = math_ops.cast(convert_to_tensor(true_classes), dtypes.int64)
    graph_seed, op_seed = get_default_graph().seeds_for_op(seed)
    attrs = {"num_true": int(num_true), "num_sampled": int(num_sampled), "unique": bool(unique),
             "range_max": int(range_max), "seed": graph_seed, "seed2": op_seed}
    op = apply_op(op_type, [classes], attrs, name=name or op_type)
    return op.outputs[0], op.outputs[1], op.outputs[2]


def log_uniform_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool,
                                  range_max: int, seed: int | None = None,
                                  name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """Classes drawn with P(c) = log((c + 2) / (c + 1)) / log(range_max + 1): a Zipf-like
    distribution for classes sorted by decreasing frequency, as word2vec's vocabularies are."""
    return _sampler("LogUniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                    range_max, seed, name)


def uniform_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool,
                              range_max: int, seed: int | None = None,
                              name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """Classes drawn uniformly from [0, range_max)."""
    return _sampler("UniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                    range_max, seed, name)


@op_def("ComputeAccidentalHits")
def _hits_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    hits = TensorShape([None])
    return [(dtypes.int32, hits), (dtypes.int64, hits), (dtypes.float32, hits)]


def compute_accidental_hits(true_classes: Any, sampled_candidates: Any, num_true: int,
                            seed: int | None = None,
                            name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """(indices int32, ids int64, weights float32): for each true class of row ``indices[k]``
    that was also sampled, at position ``ids[k]``, a weight of -FLT_MAX to add to that logit."""
    classes = math_ops.cast(convert_to_tensor(true_classes), dtypes.int64)
    sampled = math_ops.cast(convert_to_tensor(sampled_candidates), dtypes.int64)
    op = apply_op("ComputeAccidentalHits", [classes, sampled], {"num_true": int(num_true)},
                  name=name or "ComputeAccidentalHits")
    return op.outputs[0], op.outputs[1], op.outputs[2]
