"""The tf.data stages beyond slicing, batching and reordering (see dataset_iterator.py):
sources that make their elements (range, from_tensors, a Python generator), padded_batch and
unbatch, and interleave / flat_map, whose inner pipelines are made per input element.

Each spec field arrives from the graph, perhaps over the wire, so each is checked here and a
bad one is an InvalidArgumentError naming the iterator node, never a crash.
"""

from __future__ import annotations

import collections
import itertools
import os
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from zmtf.framework import py_funcs
from zmtf.framework.dtypes import as_dtype
from zmtf.framework.errors import (
    DataLossError, InvalidArgumentError, OpError, ResourceExhaustedError, UnknownError,
)
from zmtf.kernels.cpu.common import MAX_OUTPUT_BYTES, check_output_size

Element = list[np.ndarray]
Make = Callable[[], Iterator[Element]]


def check(ok: bool, node: str, what: str) -> None:
    """An InvalidArgumentError naming the iterator when a spec field is not as it must be."""
    if not ok:
        raise InvalidArgumentError(f"iterator '{node}': malformed pipeline: {what}")


#: what one pending element's component costs besides its data (the array object): batches
#: are gathered in Python lists before they are stacked
ELEMENT_OVERHEAD_BYTES = 112


def check_batch_bytes(size: int, element: Element, where: str) -> None:
    """ResourceExhaustedError once the first element shows that ``size`` of them would take
    more than MAX_OUTPUT_BYTES: refused at once instead of gathering for hours."""
    per_element = sum(np.asarray(c).nbytes + ELEMENT_OVERHEAD_BYTES for c in element)
    if size * per_element > MAX_OUTPUT_BYTES:
        raise ResourceExhaustedError(
            None, None, f"{where}: a batch of {size} elements of about {per_element} bytes each "
            f"would take past the limit of {MAX_OUTPUT_BYTES} bytes for one tensor; use a "
            f"smaller batch size (or raise ZMTF_MAX_OUTPUT_BYTES)")


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def dtype_of(name: Any, node: str) -> Any:
    """The numpy type of the dtype ``name`` from the spec (InvalidArgumentError if unknown)."""
    try:
        return as_dtype(name).np
    except (TypeError, ValueError, KeyError):
        raise InvalidArgumentError(f"iterator '{node}': malformed pipeline: dtype {name!r}") from None


def tensors(sources: list[np.ndarray], node: str) -> Make:
    """from_tensors: one element, the sources whole."""
    def single() -> Iterator[Element]:
        yield list(sources)

    return single


def range_source(sources: list[np.ndarray], node: str, dtype: str) -> Make:
    check(len(sources) == 3 and all(np.ndim(s) == 0 for s in sources), node,
          "range takes three scalar bounds")
    start, stop, step = (int(s) for s in sources)
    if step == 0:
        raise InvalidArgumentError(f"step must be a non-zero integer. (iterator '{node}')")
    np_type = dtype_of(dtype, node)

    def counted() -> Iterator[Element]:
        for value in range(start, stop, step):
            yield [np.asarray(value, np_type)]

    return counted


def generator_source(sources: list[np.ndarray], node: str, token: str, types: list[str],
                     shapes: list[Any], expected: str, template: Any) -> Make:
    """from_generator: the Python generator filed under ``token`` in this process, called
    with the sources; each value it yields is checked as TF checks it."""
    check(isinstance(token, str) and isinstance(types, list) and isinstance(shapes, list)
          and len(types) == len(shapes) and isinstance(expected, str) and all(
              s is None or (isinstance(s, list) and all(d is None or is_int(d) for d in s))
              for s in shapes), node, "generator source")
    entry = py_funcs.registered_function(token)
    if entry is None:
        raise InvalidArgumentError(
            f"iterator '{node}': the generator of Dataset.from_generator ({token}) is not in "
            f"this process: it lives only in the process that built the graph. Pin the "
            f"iterator with tf.device(...) to the client's own task (a tf.train.Server started "
            f"in that process with allow_ops=('PyFunc',)), or run it in a local tf.Session")
    np_types = [dtype_of(t, node) for t in types]

    def generated() -> Iterator[Element]:
        try:
            values = iter(entry.func(*[s.item() if s.dtype == object and s.ndim == 0 else s
                                       for s in sources]))
        except TypeError as error:
            raise InvalidArgumentError(f"`generator` must be a callable returning an "
                                       f"iterable: {error} (iterator '{node}')") from None
        while True:
            try:
                value = next(values)
            except StopIteration:
                return
            except OpError:
                raise
            except Exception as error:  # noqa: BLE001 - the generator's failure is the step's
                raise UnknownError(None, None, f"{type(error).__name__}: {error} "
                                   f"(the generator of iterator '{node}')") from error
            leaves = _leaves(value, template, expected, node)
            yield [_checked(v, t, n, s, node) for v, t, n, s in zip(leaves, types, np_types, shapes)]

    return generated


def _leaves(value: Any, template: Any, expected: str, node: str) -> list[Any]:
    def walk(v: Any, t: Any) -> list[Any]:
        if isinstance(t, dict):
            if not isinstance(v, dict) or sorted(map(str, v)) != sorted(t):
                raise ValueError
            keyed = {str(k): item for k, item in v.items()}
            return [leaf for k in sorted(t) for leaf in walk(keyed[k], t[k])]
        if isinstance(t, list):
            if not isinstance(v, (tuple, list)) or len(v) != len(t):
                raise ValueError
            return [leaf for item, sub in zip(v, t) for leaf in walk(item, sub)]
        return [v]

    try:
        return walk(value, template)
    except ValueError:
        raise InvalidArgumentError(
            f"TypeError: `generator` yielded an element that did not match the expected "
            f"structure. The expected structure was {expected}, "
            f"but the yielded element was {value}. (iterator '{node}')") from None


def _checked(value: Any, dtype: str, np_type: Any, shape: Any, node: str) -> np.ndarray:
    try:
        if np_type is object:
            array = np.asarray(value, dtype=object)
            array = np.vectorize(lambda x: x.encode() if isinstance(x, str) else x,
                                 otypes=[object])(array) if array.size else array
            if array.size and not all(isinstance(x, bytes) for x in array.reshape(-1)):
                raise TypeError
        else:
            raw = np.asarray(value)
            if raw.dtype == object or raw.dtype.kind in "SU":
                raise TypeError
            array = raw.astype(np_type)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"TypeError: `generator` yielded an element that could not be converted to the "
            f"expected type. The expected type was {dtype}, but the yielded element was "
            f"{value}. (iterator '{node}')") from None
    if shape is not None and (array.ndim != len(shape) or any(
            d is not None and d != a for d, a in zip(shape, array.shape))):
        raise InvalidArgumentError(
            f"TypeError: `generator` yielded an element of shape {_shape_text(array.shape)} where an "
            f"element of shape {_shape_text(shape)} was expected. (iterator '{node}')")
    return array


def _shape_text(shape: Sequence[Any]) -> str:
    dims = ", ".join("None" if d is None else str(d) for d in shape)
    return f"({dims},)" if len(shape) == 1 else f"({dims})"


def padded_batch(upstream: Make, size: int, drop_remainder: bool, shapes: list[list[int]],
                 slots: list[int], captures: Sequence[np.ndarray], node: str) -> Make:
    """Each component padded to its shape (-1: the batch's longest) with its padding value
    (a capture, or the dtype's zero), then stacked; an element longer than its padded shape is
    TF's InvalidArgumentError."""
    check(is_int(size) and size > 0 and isinstance(shapes, list) and isinstance(slots, list)
          and len(shapes) == len(slots)
          and all(isinstance(s, list) and all(is_int(d) and d >= -1 for d in s) for s in shapes)
          and all(is_int(i) and -1 <= i < len(captures) for i in slots), node, "padded_batch")
    fills = [None if i < 0 else captures[i] for i in slots]

    def padded(column: Sequence[np.ndarray], shape: list[int], fill: Any) -> np.ndarray:
        arrays = [np.asarray(a) for a in column]
        for a in arrays:
            if a.ndim != len(shape):
                raise InvalidArgumentError(f"iterator '{node}': padded_batch: an element has "
                                           f"rank {a.ndim}, its padded shape {shape} rank {len(shape)}")
        target = [max(a.shape[k] for a in arrays) if d == -1 else d for k, d in enumerate(shape)]
        if any(a.shape[k] > d for a in arrays for k, d in enumerate(target)):
            raise DataLossError(None, None, f"Attempted to pad to a smaller size than the "
                                f"input element. (iterator '{node}')")   # TF's class
        dtype = arrays[0].dtype
        check_output_size([len(arrays), *target], dtype, f"iterator '{node}': padded_batch")
        out = np.empty([len(arrays), *target], dtype=dtype)
        out[...] = (b"" if dtype == object else 0) if fill is None else np.asarray(fill).astype(dtype)
        for b, a in enumerate(arrays):
            corner: tuple[int | slice, ...] = (b, *(slice(0, n) for n in a.shape))
            out[corner] = a
        return out

    def batched() -> Iterator[Element]:
        pending: list[Element] = []
        for element in upstream():
            check(len(element) == len(shapes), node, "padded_batch components")
            if not pending:
                check_batch_bytes(size, element, f"iterator '{node}': padded_batch")
            pending.append(element)
            if len(pending) == size:
                yield [padded(c, s, f) for c, s, f in zip(zip(*pending), shapes, fills)]
                pending = []
        if pending and not drop_remainder:
            yield [padded(c, s, f) for c, s, f in zip(zip(*pending), shapes, fills)]

    return batched


def unbatch(upstream: Make, node: str) -> Make:
    """Each element's rows as elements; its components must have as many rows."""
    def rows() -> Iterator[Element]:
        for element in upstream():
            arrays = [np.asarray(a) for a in element]
            counts = {a.shape[0] if a.ndim else -1 for a in arrays}
            if len(counts) != 1 or -1 in counts:
                raise InvalidArgumentError(
                    f"Input element must have the same batch size in each component. "
                    f"Component 0 had size {arrays[0].shape[:1]} but component has sizes "
                    f"{[a.shape[:1] for a in arrays]}. (iterator '{node}')")
            for i in range(counts.pop()):
                yield [a[i, ...] for a in arrays]

    return rows


def zipped(parts: list[Make]) -> Make:
    def together() -> Iterator[Element]:
        iterators = [part() for part in parts]
        while True:
            element: Element = []
            for it in iterators:
                try:
                    element.extend(next(it))
                except StopIteration:
                    return
            yield element

    return together


def concatenated(parts: list[Make]) -> Make:
    def chained() -> Iterator[Element]:
        for part in parts:
            yield from part()

    return chained


def interleave(upstream: Make, inner: Callable[[Element], Make], cycle_length: int,
               block_length: int, node: str) -> Make:
    """TF's InterleaveDataset order: ``cycle_length`` open inner iterators, ``block_length``
    elements from each in turn; an ended one is replaced by the next input element's."""
    check(is_int(cycle_length) and (cycle_length > 0 or cycle_length == -1)
          and is_int(block_length) and block_length > 0, node, "interleave lengths")
    cycle = cycle_length if cycle_length > 0 else max(1, os.cpu_count() or 1)

    def interleaved() -> Iterator[Element]:
        inputs = upstream()
        slots: list[Iterator[Element] | None] = [None] * cycle
        index = block = 0
        open_count, end_of_input = 0, False
        while not end_of_input or open_count > 0:
            current = slots[index]
            if current is not None:
                element = next(current, None)
                if element is not None:
                    block += 1
                    if block == block_length:
                        index, block = (index + 1) % cycle, 0
                    yield element
                    continue
                slots[index] = None
                open_count -= 1
                index, block = (index + 1) % cycle, 0
            elif not end_of_input:
                argument = next(inputs, None)
                if argument is None:
                    end_of_input = True
                else:
                    slots[index] = inner(list(argument))()
                    open_count += 1
            else:
                index, block = (index + 1) % cycle, 0

    return interleaved


def cache(upstream: Make) -> Make:
    """The first complete pass's elements, replayed by every later pass."""
    stored: list[Element] | None = None

    def cached() -> Iterator[Element]:
        nonlocal stored
        if stored is not None:
            yield from stored
            return
        seen = []
        for element in upstream():
            seen.append(element)
            yield element
        stored = seen

    return cached


def shard(upstream: Make, slots: Sequence[Any], captures: Sequence[np.ndarray], node: str) -> Make:
    """Element i when i % num_shards == index; the two are captured int64 scalars, checked
    as TF checks them when the iterator starts."""
    check(len(slots) == 2 and all(is_int(i) and 0 <= i < len(captures) for i in slots)
          and all(np.ndim(captures[i]) == 0 and np.asarray(captures[i]).dtype.kind in "iu"
                  for i in slots), node, "shard takes two integer scalars")
    count, index = (int(captures[i]) for i in slots)
    if count <= 0:
        raise InvalidArgumentError(f"Number of shards must be greater than zero (currently "
                                   f"num_shards = {count}). (iterator '{node}')")
    if not 0 <= index < count:
        raise InvalidArgumentError(f"Index must be between 0 and {count - 1} (currently index "
                                   f"= {index}). (iterator '{node}')")

    def sharded() -> Iterator[Element]:
        for n, element in enumerate(upstream()):
            if n % count == index:
                yield element

    return sharded


def window(upstream: Make, size: int, shift: int, stride: int, drop_remainder: bool,
           node: str) -> Make:
    """TF's WindowDataset: a window every ``shift`` elements, of ``size`` elements
    ``stride`` apart, the shorter last ones kept unless ``drop_remainder``. A window is
    yielded stacked (each component with the window's length in front), which flat_map's
    function slices back into a dataset."""
    check(all(is_int(v) for v in (size, shift, stride)) and isinstance(drop_remainder, bool),
          node, "window stage")
    for what, value in (("size", size), ("shift", shift), ("stride", stride)):
        if value <= 0:
            raise InvalidArgumentError(f"Window {what} must be greater than zero. "
                                       f"(iterator '{node}')")
    span = (size - 1) * stride + 1   # the elements one window reaches over

    def stacked(picked: list[Element]) -> Element:
        try:
            return [np.stack(column) for column in zip(*picked)]
        except ValueError:
            raise InvalidArgumentError(
                f"iterator '{node}': Dataset.window in zmtf needs the elements of one window "
                f"to have the same shape, got {[[np.shape(c) for c in e] for e in picked]}; "
                f"pad them first (padded_batch then unbatch)") from None

    def windows() -> Iterator[Element]:
        elements = upstream()
        buffer: collections.deque[Element] = collections.deque()
        ended, skip = False, 0
        while True:
            while not ended and len(buffer) < span:
                element = next(elements, None)
                if element is None:
                    ended = True
                elif skip:
                    skip -= 1
                else:
                    if not buffer:
                        check_batch_bytes(size, element, f"iterator '{node}': window")
                    buffer.append(element)
            if not buffer:
                return
            picked = list(itertools.islice(buffer, 0, span, stride))
            if len(picked) < size and drop_remainder:
                return
            yield stacked(picked)
            dropped = min(shift, len(buffer))
            for _ in range(dropped):
                buffer.popleft()
            skip = shift - dropped

    return windows
