"""``tf.data.experimental``: the AUTOTUNE constant (zmtf accepts it wherever TF takes a
parallelism or buffer size; its pipelines run one element at a time, produced on demand),
the fused transformations TF1 scripts ``apply``, as the compositions they stand for,
ignore_errors, and make_batched_features_dataset (ops/dataset_readers.py)."""

from __future__ import annotations

from typing import Any, Callable

from zmtf.ops.dataset_readers import make_batched_features_dataset

AUTOTUNE = -1


def unbatch() -> Callable[[Any], Any]:
    """``dataset.apply(tf.data.experimental.unbatch())``: ``dataset.unbatch()``."""
    return lambda dataset: dataset.unbatch()


def shuffle_and_repeat(buffer_size: int, count: int | None = None,
                       seed: int | None = None) -> Callable[[Any], Any]:
    """``shuffle(buffer_size, seed)`` then ``repeat(count)``, each epoch reshuffled."""
    return lambda dataset: dataset.shuffle(buffer_size, seed).repeat(count)


def map_and_batch(map_func: Callable[..., Any], batch_size: int, num_parallel_batches: Any = None,
                  drop_remainder: bool = False, num_parallel_calls: Any = None) -> Callable[[Any], Any]:
    """``map(map_func)`` then ``batch(batch_size, drop_remainder)``."""
    return lambda dataset: dataset.map(map_func).batch(batch_size, drop_remainder)


def parallel_interleave(map_func: Callable[..., Any], cycle_length: int, block_length: int = 1,
                        sloppy: bool = False, buffer_output_elements: Any = None,
                        prefetch_input_elements: Any = None) -> Callable[[Any], Any]:
    """``interleave(map_func, cycle_length, block_length)``: zmtf reads one element at a
    time, so the order is the deterministic one even when ``sloppy``."""
    return lambda dataset: dataset.interleave(map_func, cycle_length, block_length)


def ignore_errors(log_warning: bool = False) -> Callable[[Any], Any]:
    """``dataset.apply(tf.data.experimental.ignore_errors())``: the elements whose map or
    filter raised are dropped instead of ending the iteration."""
    return lambda dataset: dataset.ignore_errors(log_warning)


__all__ = ["AUTOTUNE", "ignore_errors", "make_batched_features_dataset", "map_and_batch", "parallel_interleave", "shuffle_and_repeat", "unbatch"]
