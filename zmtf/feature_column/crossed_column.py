"""crossed_column: the conjunction of several categorical features, hashed into buckets.

The ids are TF's exactly: sparse_cross_hashed chains FingerprintCat64 over each feature's
fingerprint (Fingerprint64 of raw strings, the id of a categorical column). A raw feature
named by a string key is crossed as it is: a dense input keeps its '' / -1 cells, as in TF.
"""

from __future__ import annotations

import collections
from typing import Any

from zmtf.feature_column.base import CategoricalColumn, FeatureColumn, LazyBuilder
from zmtf.feature_column.categorical_columns import HashedCategoricalColumn
from zmtf.framework import dtypes
from zmtf.ops.parsing_ops import VarLenFeature
from zmtf.ops.sparse_cross_ops import sparse_cross_hashed


def _leaf_keys(cross: Any) -> list:
    """The keys of ``cross`` with nested crosses expanded into theirs."""
    keys = []
    for key in cross.keys:
        keys.extend(_leaf_keys(key) if isinstance(key, CrossedColumn) else [key])
    return keys


class CrossedColumn(CategoricalColumn, collections.namedtuple(
        "CrossedColumn", ["keys", "hash_bucket_size", "hash_key"])):
    """See ``crossed_column``."""

    _num_buckets = property(lambda self: self.hash_bucket_size)

    @property
    def name(self) -> str:
        return "_X_".join(sorted(k.name if isinstance(k, FeatureColumn) else k
                                 for k in _leaf_keys(self)))

    @property
    def _parse_example_spec(self) -> dict:
        config: dict = {}
        for key in self.keys:
            if isinstance(key, FeatureColumn):
                config.update(key._parse_example_spec)
            else:
                config[key] = VarLenFeature(dtypes.string)
        return config

    def _transform_feature(self, inputs: LazyBuilder) -> Any:
        feature_tensors = []
        for key in _leaf_keys(self):
            if isinstance(key, str):
                feature_tensors.append(inputs.get(key))
            elif isinstance(key, CategoricalColumn):
                ids_and_weights = key._get_sparse_tensors(inputs)
                if ids_and_weights.weight_tensor is not None:
                    raise ValueError(f"crossed_column does not support weight_tensor, but the given "
                                     f"column populates weight_tensor. Given column: {key.name}")
                feature_tensors.append(ids_and_weights.id_tensor)
            else:
                raise ValueError(f"Unsupported column type. Given: {key}")
        return sparse_cross_hashed(feature_tensors, num_buckets=self.hash_bucket_size,
                                   hash_key=self.hash_key)


def crossed_column(keys: Any, hash_bucket_size: int, hash_key: int | None = None) -> CrossedColumn:
    """Every combination of one value per key (raw feature names or categorical columns other
    than hashed ones) in each example, hashed into ``hash_bucket_size`` buckets."""
    if not hash_bucket_size or hash_bucket_size < 1:
        raise ValueError(f"hash_bucket_size must be > 1. hash_bucket_size: {hash_bucket_size}")
    if not keys or len(keys) < 2:
        raise ValueError(f"keys must be a list with length > 1. Given: {keys}")
    for key in keys:
        if not isinstance(key, (str, CategoricalColumn)):
            raise ValueError(f"Unsupported key type. All keys must be either string, or "
                             f"categorical column except HashedCategoricalColumn. Given: {key}")
        if isinstance(key, HashedCategoricalColumn):
            raise ValueError(f"categorical_column_with_hash_bucket is not supported for crossing. "
                             f"Hashing before crossing will increase probability of collision. "
                             f"Instead, use the feature name as a string. Given: {key}")
    return CrossedColumn(tuple(keys), hash_bucket_size, hash_key)
