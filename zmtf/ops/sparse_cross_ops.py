"""tf.sparse.cross / tf.sparse.cross_hashed (TF's SparseCross op) and the Bucketize op, the two
kernels feature columns need beyond the sparse and lookup ops.

SparseCross takes the rows of N SparseTensors and M dense [batch, k] tensors and emits, for
each row, every combination of one value from each input (the last input varies fastest).
As in TF, the sparse inputs come first and the dense ones after, whatever order the caller
gave. The hashed form combines per-feature fingerprints with FingerprintCat64 starting from
``hash_key``, so its ids equal TF's: strings are fingerprinted with FarmHash Fingerprint64,
int64 values are used as they are.
"""

from __future__ import annotations

from typing import Any, Sequence

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import not_differentiable
from zmtf.framework.graph import Tensor
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.ops import math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.sparse_tensor import SparseTensor
from zmtf.framework.tensor_shape import TensorShape

#: TF's default ``hash_key`` of sparse_cross_hashed and crossed_column (sparse_ops.py)
DEFAULT_HASH_KEY = 0xDECAFCAFFE

STRING_INPUT_OPS.add("SparseCross")


@op_def("SparseCross")
def _sparse_cross_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    out = dtypes.int64 if attrs["hashed_output"] else dtypes.string
    return [(dtypes.int64, TensorShape([None, 2])), (out, TensorShape([None])),
            (dtypes.int64, TensorShape([2]))]


@op_def("Bucketize")
def _bucketize_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x = inputs[0]
    if not (x.dtype.is_integer or x.dtype.is_floating):
        raise TypeError(f"Bucketize: input must be an int or float tensor, got {x.dtype.name} "
                        f"({x.name})")
    return [(dtypes.int32, x.shape)]


not_differentiable("SparseCross")
not_differentiable("Bucketize")


def bucketize(input: Any, boundaries: Sequence[float], name: str | None = None) -> Tensor:  # noqa: A002
    """The bucket of each value: ``i`` where ``boundaries[i-1] <= x < boundaries[i]`` (int32,
    the input's shape); ``boundaries`` must be a sorted list of floats."""
    x = convert_to_tensor(input)
    bounds = [float(b) for b in boundaries]
    if any(a > b for a, b in zip(bounds, bounds[1:])):
        raise ValueError(f"Bucketize: boundaries must be sorted, got {list(boundaries)}")
    return apply_op("Bucketize", [x], {"boundaries": bounds}, name=name or "Bucketize").outputs[0]


def _cross(inputs: Sequence[Any], hashed: bool, num_buckets: int, hash_key: int | None,
           name: str | None) -> SparseTensor:
    if not isinstance(inputs, (tuple, list)):
        raise TypeError("Inputs must be a list")
    if not all(isinstance(i, (SparseTensor, Tensor)) for i in inputs):
        raise TypeError("All inputs must be SparseTensors")
    sparse = [i for i in inputs if isinstance(i, SparseTensor)]
    dense = [i for i in inputs if not isinstance(i, SparseTensor)]
    for what in [s.values for s in sparse] + dense:
        if what.dtype != dtypes.string and not what.dtype.is_integer:
            raise TypeError(f"sparse_cross: inputs must be string or integer, got "
                            f"{what.dtype.name} ({what.name})")
    values = [_int64_or_string(s.values) for s in sparse]
    dense = [_int64_or_string(d) for d in dense]
    attrs = {"N": len(sparse), "num_dense": len(dense), "hashed_output": hashed,
             "num_buckets": int(num_buckets), "hash_key": int(hash_key or DEFAULT_HASH_KEY)}
    op = apply_op("SparseCross", [s.indices for s in sparse] + values +
                  [s.dense_shape for s in sparse] + dense, attrs, name=name or "SparseCross")
    return SparseTensor(*op.outputs)


def _int64_or_string(t: Tensor) -> Tensor:
    return t if t.dtype in (dtypes.string, dtypes.int64) else math_ops.cast(t, dtypes.int64)


def sparse_cross(inputs: Sequence[Any], name: str | None = None,
                 separator: str | None = None) -> SparseTensor:
    """The crosses of ``inputs`` (SparseTensors and dense [batch, k] tensors) as strings
    joined by ``separator`` ("_X_"), one row of crosses per input row."""
    if separator not in (None, "_X_"):
        raise NotImplementedError("tf.sparse.cross in zmtf joins with TF1's '_X_' separator only")
    return _cross(inputs, False, 0, None, name)


def sparse_cross_hashed(inputs: Sequence[Any], num_buckets: int = 0, hash_key: int | None = None,
                        name: str | None = None) -> SparseTensor:
    """The crosses of ``inputs`` as int64 ids: FingerprintCat64 of the features' fingerprints,
    mod ``num_buckets`` (mod 2**63-1 when 0), equal to TF's ids."""
    return _cross(inputs, True, num_buckets, hash_key, name)


__all__ = ["DEFAULT_HASH_KEY", "bucketize", "sparse_cross", "sparse_cross_hashed"]
