"""``Dataset.window``: elements that are datasets, as TF's WindowDataset makes them.

zmtf does not carry datasets as values. The pipeline's window stage stacks each window's
elements (every component gains a first dimension, the window's length), and a function
that takes a window apart, flat_map's or interleave's, receives for each component
``Dataset.from_tensor_slices`` of that stacked tensor: a dataset of the window's elements, on
which it may batch, zip, map, take... as in TF. What needs a dataset as a value (get_next()
of a window, map, batch, filter, reduce of windows) is refused with NotImplementedError.
"""

from __future__ import annotations

from typing import Any, Callable

from zmtf.framework.graph import Tensor
from zmtf.ops.dataset_ops import Dataset, _pack, _sparse_starts, register_extension


class WindowDataset(Dataset):
    """A dataset whose elements are windows: for each component, a dataset of the window's
    elements. Reorder it (shuffle, repeat, take, skip, shard, cache), then flat_map or
    interleave it."""

    _holds_windows = True

    def _element_of(self, leaves: list[Tensor]) -> Any:
        return _pack(self._structure, [Dataset.from_tensor_slices(t) for t in leaves])

    def _then(self, stage: list[Any], shapes: list[list[int | None] | None] | None = None) -> Dataset:
        return _as_windows(super()._then(stage, shapes))

    def _maps_as_stages(self) -> Dataset:
        return self   # window() applied the pending maps

    def shard(self, num_shards: Any, index: Any) -> Dataset:
        return _as_windows(super().shard(num_shards, index))


def _as_windows(dataset: Dataset) -> WindowDataset:
    return WindowDataset(dataset._structure, dataset._sources, dataset._stages, dataset._shapes,
                         (), dataset._types, dataset._captures)


def _refused(name: str) -> Callable[..., Any]:
    def refused(self: WindowDataset, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"Dataset.window(...).{name} is not built in zmtf: its elements are datasets, which "
            f"zmtf does not carry as values. Take the windows apart with flat_map or interleave, "
            f"e.g. .flat_map(lambda w: w.batch(size)) (zip them there for a tuple: "
            f"lambda a, b: tf.data.Dataset.zip((a.batch(size), b.batch(size))))")

    refused.__name__ = name
    return refused


for _name in ("map", "filter", "batch", "padded_batch", "unbatch", "reduce", "window",
              "make_one_shot_iterator", "make_initializable_iterator"):
    setattr(WindowDataset, _name, _refused(_name))
for _name in ("output_types", "output_shapes"):
    setattr(WindowDataset, _name, property(_refused(_name)))


def _count(value: Any, what: str) -> int:
    """A window argument as a Python int (TF's run-time check that it is positive is the
    iterator's, see runtime/dataset_stages.window)."""
    if isinstance(value, Tensor):
        raise NotImplementedError(f"Dataset.window: {what} given as a tensor is not built in "
                                  f"zmtf; give a Python int")
    if isinstance(value, bool) or not float(value).is_integer():
        raise TypeError(f"Dataset.window: {what} must be an integer, got {value!r}")
    return int(value)


@register_extension
def window(dataset: Dataset, size: Any, shift: Any = None, stride: Any = 1,
           drop_remainder: bool = False) -> WindowDataset:
    """Windows of ``size`` elements starting every ``shift`` (default ``size``) elements,
    each taking every ``stride``-th element; the last, shorter ones are kept unless
    ``drop_remainder``. Each element's components are stacked along a new first dimension,
    which is what flat_map's function slices back into datasets."""
    dataset = dataset._maps_as_stages()
    if _sparse_starts(dataset._structure):
        raise NotImplementedError("Dataset.window of SparseTensor elements is not built in zmtf")
    counts = [_count(size, "size"), _count(size if shift is None else shift, "shift"),
              _count(stride, "stride")]
    shapes = [None if s is None else [None, *s] for s in dataset._shapes]
    return WindowDataset(dataset._structure, dataset._sources,
                         dataset._stages + [["window", *counts, bool(drop_remainder)]], shapes,
                         (), dataset._types, dataset._captures)
