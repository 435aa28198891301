"""``tf.contrib.data``: the TF1 names of the tf.data.experimental functions zmtf has."""

from zmtf.ops.dataset_experimental import (
    AUTOTUNE, ignore_errors, make_batched_features_dataset, map_and_batch, parallel_interleave,
    shuffle_and_repeat, unbatch,
)

__all__ = ["AUTOTUNE", "ignore_errors", "make_batched_features_dataset", "map_and_batch",
           "parallel_interleave", "shuffle_and_repeat", "unbatch"]
