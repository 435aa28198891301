"""The state of one tf.data iterator on a device: where its pipeline stands between steps.

A pipeline is the plain-data spec the graph carries (``ops/dataset_ops.py``) over
the source arrays (the components ``from_tensor_slices`` cuts into elements, or the names of
the TFRecord files whose records are the elements, read here, on the iterator's device). Each stage is
a Python generator over elements (lists of arrays); ``next_element`` pulls one, raising
OutOfRangeError at the end, as TF's IteratorGetNext does. It lives in the device's
ResourceContainer, so steps (and sessions, on a worker) continue where the last one stopped;
``start`` begins again (an initializable iterator's initializer).

``map`` and ``filter`` stages carry their function as a serialized subgraph (see
``Dataset.map``); each element runs it to completion on the thread that pulls the element
(``functional.run_now``), fed the element's components and the function's captured
tensors, which the iterator op receives after its sources. The spec is compiled once per
start (``_compile``): zip/concatenate parts and interleave's inner pipeline become builders
over their arrays, the newer stages living in dataset_stages.py.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from zmtf.framework.errors import FailedPreconditionError, InvalidArgumentError, OutOfRangeError
from zmtf.runtime.dataset_stages import (
    cache, check, check_batch_bytes, concatenated, generator_source, interleave, is_int, padded_batch, range_source, shard,
    tensors, unbatch, window, zipped,
)
from zmtf.runtime.dataset_tolerance import Tolerate, applied, tolerated_errors
from zmtf.runtime.file_access import UNLIMITED, FileAccess
from zmtf.runtime.file_datasets import RecordSource, fixed_length_records, text_lines, tfrecords
from zmtf.runtime.functional import run_now

Element = list[np.ndarray]
Stage = Callable[[Callable[[], Iterator[Element]]], Callable[[], Iterator[Element]]]


class DatasetIterator:
    """One iterator's pipeline position; its ops may run from several steps at once."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._elements: Iterator[Element] | None = None

    @property
    def started(self) -> bool:
        return self._elements is not None

    def start(self, spec: Sequence[Sequence[Any]], sources: Sequence[np.ndarray], node: str,
              num_sources: int | None = None, ctx: Any = None, device: str = "") -> None:
        """(Re)build the pipeline over ``sources`` (then the captured tensors of its
        functions, past ``num_sources``): the next element is its first."""
        count = len(sources) if num_sources is None else num_sources
        arrays = [np.asarray(s) for s in sources]

        def call(fn: dict[str, Any], values: list[Any]) -> list[Any]:
            return run_now(ctx, fn, values)

        files = UNLIMITED if ctx is None else ctx.resources.files
        make = _pipeline(spec, arrays[:count], node, arrays[count:], call, device, files)
        with self._lock:
            self._elements = make()

    def next_element(self, node: str) -> Element:
        with self._lock:
            if self._elements is None:
                raise FailedPreconditionError(
                    None, None, f"GetNext() failed because the iterator has not been initialized. "
                    f"Ensure that you have run the initializer operation for this iterator "
                    f"before getting the next element (node '{node}').")
            try:
                return next(self._elements)
            except StopIteration:
                raise OutOfRangeError(None, None, "End of sequence") from None

    def cancel_all(self, error: BaseException) -> None:
        """Nothing waits on an iterator (the container's reset calls this on every resource)."""


def _pipeline(spec: Sequence[Sequence[Any]], sources: list[np.ndarray], node: str,
              captures: Sequence[np.ndarray] = (), call: Any = None,
              device: str = "", files: FileAccess = UNLIMITED) -> Callable[[], Iterator[Element]]:
    return _compile(spec, node, call, device, files)(sources, list(captures))


Build = Callable[[list[np.ndarray], list[np.ndarray]], Callable[[], Iterator[Element]]]


def _compile(spec: Any, node: str, call: Any, device: str, files: FileAccess) -> Build:
    """The pipeline ``spec`` as a function of its source arrays and captured tensors. Its
    function stages' dicts are made here once, so their plans are cached across the inner
    pipelines an interleave makes per element."""
    check(isinstance(spec, (list, tuple)) and len(spec) > 0
          and all(isinstance(s, (list, tuple)) and s and isinstance(s[0], str) for s in spec),
          node, "a pipeline is a list of stages")
    make_source = _compile_source(spec[0], node, call, device, files)
    # the stages before the last ignore_errors drop an element whose function fails
    cut = max((k for k, stage in enumerate(spec) if stage[0] == "ignore_errors"), default=0)
    tolerate = tolerated_errors(spec[cut][1:], node) if cut else None
    steps = [_compile_stage(stage, node, call, device, files, tolerate if k < cut else None)
             for k, stage in enumerate(spec[1:], 1)]

    def build(sources: list[np.ndarray], captures: list[np.ndarray]) -> Callable[[], Iterator[Element]]:
        make = make_source(sources, captures)
        for step in steps:
            make = step(make, captures)
        return make

    return build


def _compile_source(source: Sequence[Any], node: str, call: Any, device: str,
                    files: FileAccess) -> Build:
    kind = source[0]
    if kind in _COMBINED_SOURCES:
        parts = source[1] if len(source) == 2 else []   # [] fails the check below
        check(isinstance(parts, list) and len(parts) > 0 and all(
            isinstance(p, list) and len(p) == 3 and all(isinstance(i, list) and all(map(is_int, i))
                                                         for i in p[1:]) for p in parts),
              node, f"{kind} parts")
        builds = [(_compile(sub, node, call, device, files), si, ci) for sub, si, ci in parts]

        def combined(sources: list[np.ndarray], captures: list[np.ndarray]) -> Callable[[], Iterator[Element]]:
            check(all(0 <= i < len(sources) for _, si, _ in builds for i in si)
                  and all(0 <= i < len(captures) for _, _, ci in builds for i in ci),
                  node, f"{kind} indices")
            return _COMBINED_SOURCES[kind]([b([sources[i] for i in si], [captures[i] for i in ci])
                                            for b, si, ci in builds])

        return combined
    if kind not in _SOURCES:
        raise InvalidArgumentError(f"iterator '{node}': a pipeline starts from tensor slices, "
                                   f"tensors, a range, a generator, zip/concatenate or files "
                                   f"(TFRecord, text lines, fixed-length records), not {kind!r}")
    if kind in _FILE_SOURCES and files.root is not None:
        return lambda sources, captures: _SOURCES[kind](_confined(sources, files, node), node,
                                                        *source[1:])
    return lambda sources, captures: _SOURCES[kind](sources, node, *source[1:])


def _confined(sources: list[np.ndarray], files: FileAccess, node: str) -> list[np.ndarray]:
    """A file source's names, each resolved and allowed by ``files`` (PermissionDeniedError
    otherwise); names that are not strings are left to the source's own check."""
    names = sources[0] if sources else None
    if names is None or names.dtype != object or names.ndim > 1 or not all(
            isinstance(name, bytes) for name in names.reshape(-1)):
        return sources
    real = np.empty(names.shape, dtype=object)
    for index, name in np.ndenumerate(names):
        real[index] = os.fsencode(files.check(name, node))
    return [real, *sources[1:]]

def _compile_stage(stage: Sequence[Any], node: str, call: Any, device: str, files: FileAccess,
                   tolerate: Tolerate | None = None) -> Callable[..., Any]:
    kind = stage[0]
    if kind in _FUNCTION_STAGES or kind == "interleave":
        check(isinstance(stage[1], dict) and isinstance(stage[1].get("captures"), list),
              node, f"{kind} function")
        fn = {**stage[1], "_device": device}   # one dict per pipeline: its plan is cached by it

        def run(values: list[Any], captures: list[np.ndarray]) -> list[Any]:
            check(all(is_int(i) and 0 <= i < len(captures) for i in fn["captures"]), node,
                  f"{kind} captures")
            return call(fn, values + [captures[i] for i in fn["captures"]])

        if kind != "interleave":
            return lambda make, captures: _FUNCTION_STAGES[kind](
                make, lambda v: run(v, captures), tolerate)
        check(len(stage) == 6 and is_int(stage[3]) and stage[3] >= 0, node, "interleave stage")
        inner, count = _compile(stage[2], node, call, device, files), stage[3]

        def inner_for(element: Element, captures: list[np.ndarray]) -> Callable[[], Iterator[Element]]:
            made = [np.asarray(v) for v in run(element, captures)]
            return inner(made[:count], made[count:])

        return lambda make, captures: interleave(
            make, lambda element: inner_for(element, captures), stage[4], stage[5], node)
    if kind == "padded_batch":
        check(len(stage) == 5, node, "padded_batch stage")
        size, drop_remainder, shapes, slots = stage[1:]
        return lambda make, captures: padded_batch(make, size, drop_remainder, shapes, slots,
                                                   captures, node)
    if kind == "unbatch":
        return lambda make, captures: unbatch(make, node)
    if kind == "window":
        check(len(stage) == 5, node, "window stage")
        size, shift, stride, drop_remainder = stage[1:]
        return lambda make, captures: window(make, size, shift, stride, drop_remainder, node)
    if kind == "shard":
        return lambda make, captures: shard(make, stage[1:], captures, node)
    if kind == "ignore_errors":   # the stages before it drop what fails (see _compile)
        return lambda make, captures: make
    if kind not in _STAGES:
        raise InvalidArgumentError(f"iterator '{node}': unknown pipeline stage {kind!r}")
    return lambda make, captures: _STAGES[kind](make, *stage[1:])


def _slices(sources: list[np.ndarray], node: str) -> Callable[[], Iterator[Element]]:
    rows = {len(s) if s.ndim else -1 for s in sources}
    if len(rows) != 1 or -1 in rows:
        raise InvalidArgumentError(
            f"iterator '{node}': from_tensor_slices needs components with the same first "
            f"dimension, got shapes {[list(s.shape) for s in sources]}")

    def slices() -> Iterator[Element]:
        for i in range(len(sources[0])):
            # s[i, ...]: a string row stays a 0-d object array, not a bare bytes object
            yield [s[i, ...] if s.dtype == object else s[i] for s in sources]

    return slices


def _map(upstream: Callable[[], Iterator[Element]], apply: Callable[[Element], Element],
         tolerate: Tolerate | None = None) -> Callable[[], Iterator[Element]]:
    def mapped() -> Iterator[Element]:
        for element in upstream():
            result = applied(apply, element, tolerate)
            if result is not None:
                yield list(result)

    return mapped


def _filter(upstream: Callable[[], Iterator[Element]], keep: Callable[[Element], Element],
            tolerate: Tolerate | None = None) -> Callable[[], Iterator[Element]]:
    def filtered() -> Iterator[Element]:
        for element in upstream():
            result = applied(keep, element, tolerate)
            if result is not None and bool(np.asarray(result[0])):
                yield element

    return filtered


def _shuffle(upstream: Callable[[], Iterator[Element]], buffer_size: int, seed: int, seed2: int,
             reshuffle: bool) -> Callable[[], Iterator[Element]]:
    """TF's buffer: fill ``buffer_size`` elements, yield a random one, refill its slot."""
    seeded = seed != 0 or seed2 != 0
    epochs = iter(range(1 << 62))

    def shuffled() -> Iterator[Element]:
        epoch = next(epochs) if reshuffle else 0
        rng = np.random.default_rng([seed, seed2, epoch] if seeded else None)
        buffer: list[Element] = []
        for element in upstream():
            if len(buffer) < buffer_size:
                buffer.append(element)
                continue
            j = int(rng.integers(len(buffer)))
            yield buffer[j]
            buffer[j] = element
        while buffer:
            yield buffer.pop(int(rng.integers(len(buffer))))

    return shuffled


def _repeat(upstream: Callable[[], Iterator[Element]], count: int) -> Callable[[], Iterator[Element]]:
    if isinstance(upstream, RecordSource):   # still a record source: a batch after it cuts blocks
        return RecordSource(_repeated(upstream.blocks, count))
    return _repeated(upstream, count)


def _repeated(upstream: Callable[[], Iterator[Any]], count: int) -> Callable[[], Iterator[Any]]:
    """``upstream``'s items ``count`` times over (forever if < 0)."""
    def repeated() -> Iterator[Any]:
        done = 0
        while count < 0 or done < count:
            empty = True
            for item in upstream():
                empty = False
                yield item
            done += 1
            if empty:   # an empty dataset repeated forever is still empty
                return

    return repeated


def _batch(upstream: Callable[[], Iterator[Element]], size: int, drop_remainder: bool,
           sparse_starts: Sequence[int] = ()) -> Callable[[], Iterator[Element]]:
    if isinstance(upstream, RecordSource):
        return _batched_records(upstream, size, drop_remainder)

    def stacked(pending: list[Element]) -> Element:
        columns = list(zip(*pending))
        out: Element = []
        i = 0
        while i < len(columns):
            if i in sparse_starts:   # indices, values, dense_shape of one SparseTensor
                out.extend(_batched_sparse(*columns[i:i + 3]))
                i += 3
            else:
                out.append(_stacked_column(columns[i]))
                i += 1
        return out

    def batched() -> Iterator[Element]:
        pending: list[Element] = []
        for element in upstream():
            if not pending:
                check_batch_bytes(size, element, "Dataset.batch")
            pending.append(element)
            if len(pending) == size:
                yield stacked(pending)
                pending = []
        if pending and not drop_remainder:
            yield stacked(pending)

    return batched


def _batched_records(source: RecordSource, size: int, drop_remainder: bool
                     ) -> Callable[[], Iterator[Element]]:
    """batch over a record source: each batch is cut from the lists of records it reads.
    The batches, the size check and when an error arrives are the element path's."""
    def vector(records: list[bytes]) -> Element:
        return [np.fromiter(records, object, len(records))]

    def batched() -> Iterator[Element]:
        pending: list[bytes] = []
        for block in source.blocks():
            at = 0
            while at < len(block):
                if not pending:
                    check_batch_bytes(size, [np.array(block[at], dtype=object)], "Dataset.batch")
                take = block[at:at + size - len(pending)]
                at += len(take)
                if not pending and len(take) == size:
                    yield vector(take)
                    continue
                pending.extend(take)
                if len(pending) == size:
                    yield vector(pending)
                    pending = []
        if pending and not drop_remainder:
            yield vector(pending)

    return batched


def _stacked_column(column: Sequence[np.ndarray]) -> np.ndarray:
    """np.stack of one component of a batch's elements; scalars of one dtype (a record, a
    label: the common case) are gathered into a vector directly, several times faster."""
    first = column[0]
    if type(first) is np.ndarray and first.ndim == 0 and first.dtype.kind in "biufcO":
        dtype = first.dtype
        if all(type(a) is np.ndarray and a.ndim == 0 and a.dtype == dtype for a in column):
            # fromiter, not assignment: an object that is a sequence stays one item
            return np.fromiter((a[()] for a in column), dtype, len(column))
    return np.stack(column)


def _batched_sparse(indices: Sequence[np.ndarray], values: Sequence[np.ndarray],
                    shapes: Sequence[np.ndarray]) -> list[np.ndarray]:
    """SparseTensors of one rank as one of rank + 1, as TF batches them: each index gets its
    element's position in front, and the dense shape is the largest of each dimension."""
    rank = len(shapes[0])
    rows = [np.concatenate([np.full((len(idx), 1), b, np.int64), np.asarray(idx, np.int64).reshape(-1, rank)], 1)
            for b, idx in enumerate(indices)]
    dense = np.max(np.stack([np.asarray(s, np.int64) for s in shapes]), axis=0) if rank else np.zeros(0, np.int64)
    return [np.concatenate(rows).reshape(-1, rank + 1), np.concatenate(values),
            np.concatenate([[len(shapes)], dense]).astype(np.int64)]


def _take(upstream: Callable[[], Iterator[Element]], count: int) -> Callable[[], Iterator[Element]]:
    def taken() -> Iterator[Element]:
        if count == 0:
            return
        for n, element in enumerate(upstream(), 1):
            yield element
            if n == count:
                return

    return taken if count >= 0 else upstream


def _skip(upstream: Callable[[], Iterator[Element]], count: int) -> Callable[[], Iterator[Element]]:
    def skipped() -> Iterator[Element]:
        for n, element in enumerate(upstream()):
            if count < 0:
                return
            if n >= count:
                yield element

    return skipped


_STAGES: dict[str, Callable[..., Callable[[], Iterator[Element]]]] = {
    "shuffle": _shuffle, "repeat": _repeat, "cache": cache, "batch": _batch, "take": _take, "skip": _skip,
}
_FUNCTION_STAGES = {"map": _map, "filter": _filter}
_SOURCES: dict[str, Callable[..., Callable[[], Iterator[Element]]]] = {
    "slices": _slices, "tfrecord": tfrecords, "textline": text_lines,
    "fixed_length": fixed_length_records, "tensors": tensors, "range": range_source,
    "generator": generator_source,
}
_COMBINED_SOURCES = {"zip": zipped, "concatenate": concatenated}
_FILE_SOURCES = {"tfrecord", "textline", "fixed_length"}
