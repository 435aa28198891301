"""tf.data: Dataset sources (from_tensor_slices, from_tensors, range, from_generator, the
file datasets, zip, concatenate) and stages (shuffle, repeat, batch, padded_batch, unbatch,
take, skip, shard, cache, map, filter, flat_map, interleave, ignore_errors), and one-shot,
initializable, reinitializable (``Iterator.from_structure``) and feedable
(``from_string_handle``) iterators whose get_next() feeds the graph.

A Dataset is a plain description (its source tensors, the element structure, and a list of
stages such as ``["batch", 32, False]``) that the iterator ops carry as an attribute, so it
crosses to a remote worker inside the graph like any attribute. The state, the pipeline's
position, lives on the iterator op's device (runtime/dataset_iterator.py) and survives
between steps: the TF1 loop ``while True: sess.run(next_element)`` ends with
``tf.errors.OutOfRangeError``. zip and concatenate are a source stage holding their parts'
pipelines, each naming its sources and captures among the combined dataset's.

Functions: a ``map`` after the last ``batch`` is applied as graph ops to get_next()'s
element (one vectorized run per step; the other stages only reorder elements, so this is
exact). A map that a ``batch`` follows stays pending past it when it acts element by element
(only ELEMENTWISE_OPS, scalar constants, one element shape: ``map(f).batch(n)`` is then
``batch(n).map(f)``, the same values, one run per batch). Any other map that a ``batch``
follows, and every ``filter``, becomes a pipeline stage: the
function is traced once on placeholders for one element, its ops are cut out as a
subgraph (as tf.while_loop's body is, ``while_ops.Subgraph``) and the iterator runs it per
element. Tensors the function reads from outside are captured: the iterator op takes them
after its sources, so their values are those of the moment the iterator starts.
``flat_map``/``interleave`` trace their function the same way: its subgraph computes the
sources (and captures) of the dataset it returns, whose pipeline the stage carries and
starts per input element. ``from_generator``'s generator stays in this process (the graph
carries a py_func token), so its iterator must run here.
``TFRecordDataset(filenames)`` is a source like ``from_tensor_slices``: its one source tensor
holds the file names and its elements are the records (0-d tf.string), read by the iterator
on its own device; ``TextLineDataset`` and ``FixedLengthRecordDataset`` likewise (their
lines or records).
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any, Callable

from zmtf.framework import dtypes
from zmtf.framework.dtypes import as_dtype
from zmtf.framework.graph import Graph, Operation, Tensor, get_default_graph
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.ops.array_ops import identity, placeholder
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.while_ops import Subgraph, WhileContext
from zmtf.framework.sparse_tensor import SparseTensor
from zmtf.framework.tensor_shape import TensorShape


@op_def("IteratorInit", stateful=True)
def _init_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return []


@op_def("IteratorGetNext", stateful=True)
def _get_next_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(as_dtype(d), TensorShape(s)) for d, s in zip(attrs["output_types"], attrs["output_shapes"])]


# ---- element structures: a tensor, a SparseTensor, or tuples/lists/dicts of them -------------
def _flatten(structure: Any) -> list[Any]:
    """The components of an element; a SparseTensor is three (indices, values, dense_shape)."""
    if isinstance(structure, SparseTensor):
        return [structure.indices, structure.values, structure.dense_shape]
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in _flatten(structure[key])]
    if isinstance(structure, (tuple, list)):
        return [leaf for item in structure for leaf in _flatten(item)]
    return [structure]


def _pack(structure: Any, leaves: list[Any],
          sparse: Callable[[Any, Any, Any], Any] = SparseTensor) -> Any:
    """``leaves`` put back into ``structure``'s shape (the inverse of _flatten); the three
    leaves of a SparseTensor go to ``sparse`` (by default they make a SparseTensor again)."""
    it = iter(leaves)

    def build(item: Any) -> Any:
        if isinstance(item, SparseTensor):
            return sparse(next(it), next(it), next(it))
        if isinstance(item, dict):
            return {key: build(item[key]) for key in sorted(item)}
        if isinstance(item, tuple):
            return type(item)(*[build(i) for i in item]) if hasattr(item, "_fields") \
                else tuple(build(i) for i in item)
        if isinstance(item, list):
            return [build(i) for i in item]
        return next(it)

    return build(structure)


#: ops whose output element i depends on input element i alone, with no state and no
#: error of their own: a map made of them is the same on a batch (Dataset.batch)
ELEMENTWISE_OPS = frozenset({
    "Identity", "Add", "AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Neg", "Abs",
    "Square", "Cast", "Floor", "Ceil", "Relu"})


def _acts_elementwise(operations: list[Operation], outputs: list[Tensor]) -> bool:
    """Whether a traced map (``operations``, from its Placeholders) works element by element:
    see Dataset._maps_are_elementwise."""
    varies: set[Tensor] = set()   # tensors that depend on the element
    for op in operations:
        if op.type == "Placeholder":
            varies.update(op.outputs)
            continue
        if op.type == "Const":
            if any(t.shape.ndims != 0 for t in op.outputs):
                return False
            continue
        if op.type not in ELEMENTWISE_OPS or op.control_inputs:
            return False
        if any(t.shape.ndims is None for t in op.inputs):
            return False
        shapes = {tuple(t.shape.as_list()) for t in op.inputs if t in varies}
        if len(shapes) > 1 or any(None in shape for shape in shapes):
            return False
        if any(t not in varies and t.shape.ndims != 0 for t in op.inputs):
            return False
        if shapes:
            varies.update(op.outputs)
    return all(t in varies for t in outputs)


def _sparse_starts(structure: Any) -> list[int]:
    """Where each SparseTensor's three components start among the element's components."""
    starts, position = [], 0

    def walk(item: Any) -> None:
        nonlocal position
        if isinstance(item, SparseTensor):
            starts.append(position)
            position += 3
        elif isinstance(item, dict):
            for key in sorted(item):
                walk(item[key])
        elif isinstance(item, (tuple, list)):
            for i in item:
                walk(i)
        else:
            position += 1

    walk(structure)
    return starts


def _structure_template(structure: Any) -> Any:
    """The nesting of ``structure`` as plain data (a leaf is None, a SparseTensor "sparse"):
    what two elements must share, and what a generator's values are checked against."""
    if isinstance(structure, SparseTensor):
        return "sparse"
    if isinstance(structure, dict):
        return {str(key): _structure_template(structure[key]) for key in sorted(structure)}
    if isinstance(structure, (tuple, list)):
        return [_structure_template(item) for item in structure]
    return None


def _shape_leaves(shapes: Any, structure: Any) -> list[Any]:
    """``shapes`` (or padding values) given per component of ``structure``, one per leaf: a
    leaf's shape is taken whole, even when it is written as a list."""
    if isinstance(structure, dict):
        if not isinstance(shapes, dict) or sorted(shapes) != sorted(structure):
            raise ValueError(f"{shapes!r} does not match the element's structure {structure!r}")
        return [leaf for key in sorted(structure) for leaf in _shape_leaves(shapes[key], structure[key])]
    if isinstance(structure, (tuple, list)):
        if not isinstance(shapes, (tuple, list)) or len(shapes) != len(structure):
            raise ValueError(f"{shapes!r} does not match the element's structure {structure!r}")
        return [leaf for s, item in zip(shapes, structure) for leaf in _shape_leaves(s, item)]
    return [shapes]


def _list_as_tensor(tensors: Any) -> Any:
    """A Python list is one tensor to a source, at any depth, as in TF's tf.data (tuples and
    dicts are structures): ``from_tensor_slices(([1, 2], [3., 4.]))`` has two components."""
    if isinstance(tensors, list):
        return convert_to_tensor(tensors)
    if isinstance(tensors, tuple):
        items = [_list_as_tensor(t) for t in tensors]
        return type(tensors)(*items) if hasattr(tensors, "_fields") else tuple(items)
    if isinstance(tensors, dict):
        return {k: _list_as_tensor(v) for k, v in tensors.items()}
    return tensors


def _dense_leaves(kind: str, tensors: Any) -> list[Tensor]:
    """The tensors of a source's element (at least one; SparseTensors are not built)."""
    if _sparse_starts(tensors):
        raise NotImplementedError(f"{kind} of a SparseTensor is not built in zmtf; give dense "
                                  f"tensors, or make sparse elements in a map")
    leaves = [convert_to_tensor(t) for t in _flatten(tensors)]
    if not leaves:
        raise ValueError(f"{kind}: give at least one tensor")
    return leaves


def _shape_list(shape: TensorShape) -> list[int | None] | None:
    return shape.as_list() if shape.ndims is not None else None


def _as_padded_shape(shape: Any) -> TensorShape:
    """A padded shape as TF takes it: a TensorShape or a list with None or -1 for "the
    longest in the batch"."""
    if isinstance(shape, Tensor):
        raise NotImplementedError("padded_shapes given as tensors are not built in zmtf; give "
                                  "them as lists or TensorShapes")
    if isinstance(shape, (list, tuple)):
        return TensorShape([None if d is None or int(d) == -1 else int(d) for d in shape])
    return TensorShape(shape)


def _most_specific(a: list[int | None] | None, b: list[int | None] | None) -> list[int | None] | None:
    """The shape both ``a`` and ``b`` have (a dimension they disagree on is unknown)."""
    if a is None or b is None or len(a) != len(b):
        return None
    return [x if x == y else None for x, y in zip(a, b)]


def _combined(kind: str, datasets: list[Dataset], structure: Any, types: list[str],
              shapes: list[list[int | None] | None]) -> Dataset:
    """One source stage over several pipelines (zip, concatenate): each part names its
    sources and captures among the combined dataset's."""
    sources: list[Tensor] = []
    captures: list[Tensor] = []
    parts = []
    for d in datasets:
        parts.append([d._stages, list(range(len(sources), len(sources) + len(d._sources))),
                      list(range(len(captures), len(captures) + len(d._captures)))])
        sources += d._sources
        captures += d._captures
    return Dataset(structure, sources, [[kind, parts]], shapes, types=types, captures=tuple(captures))



# ---- Dataset methods whose bodies live in the modules built on Dataset ---------------------------
#: name -> the module that registers it. Those modules import this one, so it may not import them
#: (STYLE rule 20); zmtf.tf1.data and zmtf.ops.all_ops import every one of them.
_EXTENSION_HOMES = {"list_files": "zmtf.ops.dataset_readers", "shard": "zmtf.ops.dataset_transforms",
                    "ignore_errors": "zmtf.ops.dataset_transforms",
                    "reduce": "zmtf.ops.dataset_reduce", "window": "zmtf.ops.dataset_window"}
_EXTENSIONS: dict[str, Callable[..., Any]] = {}


def register_extension(function: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator of a module built on Dataset: ``Dataset.<function's name>`` calls it."""
    _EXTENSIONS[function.__name__] = function
    return function


def _extension(name: str) -> Callable[..., Any]:
    try:
        return _EXTENSIONS[name]
    except KeyError:
        raise RuntimeError(f"Dataset.{name} is built by {_EXTENSION_HOMES[name]}: import it "
                           f"(zmtf.tf1.data does)") from None


class Dataset:
    """A pipeline over the rows of in-memory tensors (TF's tf.data.Dataset)."""

    #: whether the elements are windows (Dataset.window), which only flat_map and interleave
    #: take apart (dataset_window.py)
    _holds_windows = False

    def __init__(self, structure: Any, sources: list[Tensor], stages: list[list[Any]],
                 shapes: list[list[int | None] | None],
                 maps: tuple[Callable[..., Any], ...] = (), types: list[str] | None = None,
                 captures: tuple[Tensor, ...] = ()) -> None:
        self._structure, self._sources, self._stages, self._shapes = structure, sources, stages, shapes
        self._maps = maps   # functions applied to get_next()'s element, in order (see map)
        #: dtype names of the element's components (the sources', until a map stage)
        self._types = types if types is not None else [t.dtype.name for t in sources]
        self._captures = captures   # outside tensors read by the pipeline's functions

    @staticmethod
    def from_tensor_slices(tensors: Any) -> Dataset:
        """Elements are the rows (first-dimension slices) of ``tensors``: one tensor, or a
        tuple/dict of tensors with the same number of rows."""
        tensors = _list_as_tensor(tensors)
        leaves = _dense_leaves("from_tensor_slices", tensors)
        for t in leaves:
            if t.shape.ndims == 0:
                raise ValueError(f"from_tensor_slices: {t.name} is a scalar; slices need rank >= 1")
        rows = {t.shape.as_list()[0] for t in leaves if t.shape.ndims is not None} - {None}
        if len(rows) > 1:
            raise ValueError(f"from_tensor_slices: the components have different numbers of rows "
                             f"{sorted(rows)}; they must agree")
        shapes = [t.shape.as_list()[1:] if t.shape.ndims is not None else None for t in leaves]
        return Dataset(tensors, leaves, [["slices"]], shapes)

    @staticmethod
    def from_tensors(tensors: Any) -> Dataset:
        """One element: ``tensors`` whole (a tensor, or a tuple/dict of them)."""
        tensors = _list_as_tensor(tensors)
        leaves = _dense_leaves("from_tensors", tensors)
        return Dataset(tensors, leaves, [["tensors"]], [_shape_list(t.shape) for t in leaves])

    @staticmethod
    def range(*args: Any, output_type: Any = dtypes.int64) -> Dataset:
        """``range(stop)``, ``range(start, stop)`` or ``range(start, stop, step)`` as Python's
        range, each element a scalar of ``output_type`` (int64 by default)."""
        if not 1 <= len(args) <= 3:
            raise ValueError(f"Invalid arguments to RangeDataset: {args}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else \
            (args[0], args[1], args[2] if len(args) == 3 else 1)
        bounds = [convert_to_tensor(v, dtype=dtypes.int64, name=n)
                  for v, n in zip((start, stop, step), ("start", "stop", "step"))]
        dtype = as_dtype(output_type)
        return Dataset(None, bounds, [["range", dtype.name]], [[]], types=[dtype.name])

    @staticmethod
    def list_files(file_pattern: Any, shuffle: bool | None = None, seed: int | None = None,
                   name: str | None = None) -> Dataset:
        """The files matching a glob, shuffled unless ``shuffle=False`` (dataset_readers.py)."""
        return _extension("list_files")(file_pattern, shuffle, seed, name)

    @staticmethod
    def zip(datasets: Any) -> Dataset:
        """Elements of ``datasets`` (a tuple or dict of datasets, nested) side by side, until
        the shortest ends."""
        flat = _flatten(datasets)
        if not flat or not all(isinstance(d, Dataset) for d in flat):
            raise TypeError(f"Dataset.zip: give a (nested) tuple or dict of datasets, got {datasets!r}")
        if any(d._holds_windows for d in flat):
            raise NotImplementedError("Dataset.zip of windowed datasets is not built in zmtf; "
                                      "zip the windows' parts inside the flat_map function")
        flat = [d._maps_as_stages() for d in flat]
        structure = _pack(datasets, [d._structure for d in flat])
        return _combined("zip", flat, structure, [t for d in flat for t in d._types],
                         [s for d in flat for s in d._shapes])

    def concatenate(self, dataset: Dataset) -> Dataset:
        """This dataset's elements, then ``dataset``'s (the same structure and dtypes)."""
        if self._holds_windows or dataset._holds_windows:
            raise NotImplementedError("Dataset.concatenate of windowed datasets is not built in "
                                      "zmtf; concatenate before window()")
        a, b = self._maps_as_stages(), dataset._maps_as_stages()
        if a._types != b._types or \
                _structure_template(a._structure) != _structure_template(b._structure):
            raise TypeError(f"Incompatible dataset elements:\n  {a.output_types} vs. "
                            f"\n  {b.output_types}")
        shapes = [_most_specific(x, y) for x, y in zip(a._shapes, b._shapes)]
        return _combined("concatenate", [a, b], a._structure, a._types, shapes)

    @staticmethod
    def from_generator(generator: Callable[..., Any], output_types: Any, output_shapes: Any = None,
                       args: Any = None) -> Dataset:
        """The elements ``generator(*args)`` yields, checked against ``output_types`` and
        ``output_shapes`` as TF does. The generator runs in this process only (the graph
        carries a token, as py_func's): pin the iterator to the client's task."""
        from zmtf.framework import py_funcs

        if not callable(generator):
            raise TypeError("`generator` must be callable.")
        types = [as_dtype(t) for t in _flatten(output_types)]
        if output_shapes is None:
            shapes: list[list[int | None] | None] = [None] * len(types)
        else:
            shapes = [_shape_list(TensorShape(s)) for s in _shape_leaves(output_shapes, output_types)]
        if len(shapes) != len(types):
            raise TypeError(f"from_generator: output_shapes {output_shapes!r} do not match the "
                            f"structure of output_types {output_types!r}")
        sources = [convert_to_tensor(a) for a in (args or ())]
        entry = py_funcs.register(generator, [t.name for t in types])
        get_default_graph().__dict__.setdefault("_py_funcs_used_in_graph", []).append(entry)
        structure = _pack(output_types, [None] * len(types))
        return Dataset(structure, sources,
                       [["generator", entry.token, [t.name for t in types], shapes,
                         str(output_types), _structure_template(output_types)]],
                       shapes, types=[t.name for t in types])

    @staticmethod
    def _records(kind: str, source: list[Any], filenames: Any, compression_type: Any) -> Dataset:
        """A dataset of the 0-d string records the iterator reads from ``filenames``; a
        ``compression_type`` ("ZLIB", "GZIP", or a string tensor) is a second source, checked
        when the iterator reads, as in TF."""
        names = convert_to_tensor(filenames, dtype=dtypes.string, name="filenames")
        if names.shape.ndims not in (None, 0, 1):
            raise ValueError(f"{kind}: filenames must be a string scalar or vector, got "
                             f"shape {names.shape}")
        sources = [names]
        if not (compression_type is None or isinstance(compression_type, str)
                and compression_type == ""):
            compression = convert_to_tensor(compression_type, dtype=dtypes.string,
                                            name="compression_type")
            if compression.shape.ndims not in (None, 0):
                raise ValueError(f"{kind}: compression_type must be a string scalar, got shape "
                                 f"{compression.shape}")
            sources.append(compression)
        return Dataset(names, sources, [source], [[]], types=["string"])

    def _then(self, stage: list[Any], shapes: list[list[int | None] | None] | None = None) -> Dataset:
        return Dataset(self._structure, self._sources, self._stages + [stage],
                       self._shapes if shapes is None else shapes, self._maps, self._types,
                       self._captures)

    def _traced(self, kind: str, body: Callable[[Any], list[Any]]) -> tuple[dict, tuple[Tensor, ...]]:
        """``body`` traced on placeholders for one element and cut out as a subgraph: the
        stage's function (feeds, fetches, and which of the pipeline's captures it reads) and
        the pipeline's captures after it."""
        graph = get_default_graph()
        context = WhileContext()
        outer, graph._while_context = graph._while_context, context
        try:
            with graph.name_scope(f"Dataset_{kind}"):
                leaves = [placeholder(d, s, name="component") for d, s in zip(self._types, self._shapes)]
                outputs = [identity(convert_to_tensor(v), name="component_out")
                           for v in body(self._element_of(leaves))]
        finally:
            graph._while_context = outer
        sub = Subgraph(context.ops)
        captures = list(self._captures)
        for t in sub.captures:
            if t not in captures:
                captures.append(t)
        fn = {**sub.serialize(graph),
              "feeds": [t.name for t in leaves] + [sub.capture_name(t) for t in sub.captures],
              "fetches": [t.name for t in outputs],
              "captures": [captures.index(t) for t in sub.captures]}
        return fn, tuple(captures)

    def _element_of(self, leaves: list[Tensor]) -> Any:
        """What a traced function receives for one element made of ``leaves``."""
        return _pack(self._structure, leaves)

    def _with_function(self, kind: str, fn: Callable[..., Any]) -> Dataset:
        """A map or filter stage: ``fn`` traced on one element, cut out as a subgraph."""
        results: list[Any] = []

        def body(element: Any) -> list[Any]:
            results.append(fn(*element) if isinstance(element, tuple) else fn(element))
            if kind != "filter":
                return _flatten(results[0])
            kept = convert_to_tensor(results[0])
            if kept.dtype != dtypes.bool_ or kept.shape.ndims not in (None, 0):
                raise TypeError(f"Dataset.filter: the predicate must return a scalar bool "
                                f"tensor, got {kept.dtype.name} {kept.shape}")
            return [kept]

        function, captures = self._traced(kind, body)
        if kind == "filter":
            return Dataset(self._structure, self._sources, self._stages + [[kind, function]],
                           self._shapes, (), self._types, captures)
        outputs = get_default_graph()
        fetched = [outputs.get_tensor_by_name(name) for name in function["fetches"]]
        return Dataset(results[0], self._sources, self._stages + [[kind, function]],
                       [_shape_list(t.shape) for t in fetched], (), [t.dtype.name for t in fetched],
                       captures)

    def _maps_are_elementwise(self) -> bool:
        """Whether the pending maps give the same values on a batch of elements as on each
        element: traced in a scratch graph on one element's placeholders, they use only
        elementwise ops (ELEMENTWISE_OPS), every constant they combine with an element is a
        scalar, the element tensors they combine have one fully known shape, and every
        result depends on the element. Anything else (captured tensors, state, random ops,
        a reduction, unknown shapes, a SparseTensor) keeps the maps per element."""
        if _sparse_starts(self._structure) or any(s is None for s in self._shapes):
            return False
        scratch = Graph()
        try:
            with scratch.as_default():
                leaves = [placeholder(d, s) for d, s in zip(self._types, self._shapes)]
                element = self._element_of(leaves)
                for fn in self._maps:
                    element = fn(*element) if isinstance(element, tuple) else fn(element)
                outputs = [convert_to_tensor(v) for v in _flatten(element)]
        except Exception:  # noqa: BLE001 - e.g. a captured tensor of the user's graph
            return False
        return _acts_elementwise(scratch.get_operations(), outputs)

    def _maps_as_stages(self) -> Dataset:
        """The pending maps (see map) as pipeline stages: a stage that follows needs their
        output element by element."""
        dataset = Dataset(self._structure, self._sources, self._stages, self._shapes, (),
                          self._types, self._captures)
        for fn in self._maps:
            dataset = dataset._with_function("map", fn)
        return dataset

    def shuffle(self, buffer_size: int, seed: int | None = None,
                reshuffle_each_iteration: bool = True) -> Dataset:
        """Random order within a window of ``buffer_size`` elements (TF's buffer); seeded by
        tf.set_random_seed and ``seed`` as TF1's random ops are."""
        size = int(buffer_size)
        if size <= 0:
            raise ValueError(f"shuffle: buffer_size must be positive, got {buffer_size}")
        graph_seed, op_seed = get_default_graph().seeds_for_op(seed)
        return self._then(["shuffle", size, graph_seed, op_seed, bool(reshuffle_each_iteration)])

    def repeat(self, count: int | None = None) -> Dataset:
        """The dataset ``count`` times (forever when None or -1)."""
        return self._then(["repeat", -1 if count is None else int(count)])

    def batch(self, batch_size: int, drop_remainder: bool = False) -> Dataset:
        """Consecutive elements stacked ``batch_size`` at a time; the last batch may be smaller
        unless ``drop_remainder``."""
        size = int(batch_size)
        if size <= 0:
            raise ValueError(f"batch: batch_size must be positive, got {batch_size}")
        if self._maps and self._maps_are_elementwise():
            # map(f).batch(n) is batch(n).map(f) when f acts element by element: f stays
            # pending and runs once per batch as graph ops on get_next()'s batch
            unmapped = Dataset(self._structure, self._sources, self._stages, self._shapes, (),
                               self._types, self._captures).batch(batch_size, drop_remainder)
            return Dataset(unmapped._structure, unmapped._sources, unmapped._stages,
                           unmapped._shapes, self._maps, unmapped._types, unmapped._captures)
        if self._maps:
            return self._maps_as_stages().batch(batch_size, drop_remainder)
        first = size if drop_remainder else None
        shapes = [None if s is None else [first, *s] for s in self._shapes]
        starts = _sparse_starts(self._structure)
        for start in starts:   # a batch of SparseTensors is one SparseTensor of rank + 1
            rank = (self._shapes[start + 2] or [None])[0]
            rank = None if rank is None else rank + 1
            shapes[start:start + 3] = [[None, rank], [None], [rank]]
        return self._then(["batch", size, bool(drop_remainder), starts], shapes)

    def take(self, count: int) -> Dataset:
        return self._then(["take", int(count)])

    def skip(self, count: int) -> Dataset:
        return self._then(["skip", int(count)])

    def shard(self, num_shards: Any, index: Any) -> Dataset:
        """Element i when i % num_shards == index: one worker's part (dataset_transforms.py)."""
        return _extension("shard")(self, num_shards, index)

    def ignore_errors(self, log_warning: bool = False) -> Dataset:
        """The elements whose map or filter raised no error (dataset_transforms.py)."""
        return _extension("ignore_errors")(self, log_warning)

    def prefetch(self, buffer_size: int) -> Dataset:
        """Accepted for compatibility: elements are produced when a step asks for them."""
        return self

    def cache(self, filename: str = "") -> Dataset:
        """The elements of the first pass kept in memory and replayed by later passes (a
        repeat after a shuffle repeats one order, as in TF)."""
        if filename:
            raise NotImplementedError("Dataset.cache(filename) is not built in zmtf; cache() in "
                                      "memory is")
        return self._maps_as_stages()._then(["cache"])

    def map(self, map_func: Callable[..., Any], num_parallel_calls: Any = None) -> Dataset:
        """``map_func`` applied to each element (tuples are passed as separate arguments, as
        in TF): as graph ops on what get_next() returns unless a batch or filter follows,
        then per element inside the pipeline (see the module docstring).
        ``num_parallel_calls`` is accepted; elements are mapped one at a time."""
        return Dataset(self._structure, self._sources, self._stages, self._shapes,
                       self._maps + (map_func,), self._types, self._captures)

    def filter(self, predicate: Callable[..., Any]) -> Dataset:
        """The elements for which ``predicate`` (a scalar bool tensor) is true."""
        return self._maps_as_stages()._with_function("filter", predicate)

    def padded_batch(self, batch_size: int, padded_shapes: Any = None, padding_values: Any = None,
                     drop_remainder: bool = False) -> Dataset:
        """Like batch, each component padded to ``padded_shapes`` (a None or -1 dimension:
        to the longest in the batch) with ``padding_values`` (0, False or b"" by default)."""
        size = int(batch_size)
        if size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        dataset = self._maps_as_stages()
        if _sparse_starts(dataset._structure):
            raise TypeError("Dataset.padded_batch is not supported for SparseTensor components; "
                            "use Dataset.batch")
        count = len(dataset._types)
        if padded_shapes is None:
            targets = [s for s in dataset._shapes]
            if any(s is None for s in targets):
                raise ValueError("You must provide `padded_shapes` argument because component "
                                 "has unknown rank.")
        else:
            targets = [_shape_list(_as_padded_shape(s)) for s in
                       _shape_leaves(padded_shapes, dataset._structure)]
        if len(targets) != count:
            raise ValueError(f"padded_shapes {padded_shapes!r} do not match the element's structure")
        for have, want in zip(dataset._shapes, targets):
            if want is None:
                raise ValueError("padded_shapes must give every component's rank")
            if have is not None and (len(have) != len(want) or any(
                    h is not None and w is not None and h > w for h, w in zip(have, want))):
                raise ValueError(f"The padded shape {TensorShape(want)} is not compatible with "
                                 f"the shape {TensorShape(have)} of the corresponding input "
                                 f"component.")
        values = [None] * count if padding_values is None else \
            [None if v is None else convert_to_tensor(v, dtype=as_dtype(d), name="padding_value")
             for v, d in zip(_shape_leaves(padding_values, dataset._structure), dataset._types)]
        captures = list(dataset._captures)
        slots = []
        for v in values:
            if v is not None and v.shape.ndims not in (None, 0):
                raise ValueError(f"padding_values must be scalars, got shape {v.shape}")
            slots.append(-1 if v is None else len(captures))
            if v is not None:
                captures.append(v)
        first = size if drop_remainder else None
        shapes = [[first, *want] for want in targets]
        stage = ["padded_batch", size, bool(drop_remainder),
                 [[-1 if d is None else int(d) for d in want] for want in targets], slots]
        return Dataset(dataset._structure, dataset._sources, dataset._stages + [stage], shapes,
                       (), dataset._types, tuple(captures))

    def unbatch(self) -> Dataset:
        """Each element split along its first dimension into that many elements."""
        dataset = self._maps_as_stages()
        if _sparse_starts(dataset._structure):
            raise NotImplementedError("unbatch of SparseTensor elements is not built in zmtf")
        if any(s is not None and len(s) == 0 for s in dataset._shapes):
            raise ValueError("Cannot unbatch an input with scalar components.")
        return dataset._then(["unbatch"], [None if s is None else s[1:] for s in dataset._shapes])

    def apply(self, transformation_func: Callable[[Dataset], Dataset]) -> Dataset:
        """``transformation_func(self)``, which must return a Dataset."""
        result = transformation_func(self)
        if not isinstance(result, Dataset):
            raise TypeError("`transformation_func` must return a Dataset object.")
        return result

    def reduce(self, initial_state: Any, reduce_func: Callable[..., Any]) -> Any:
        """The fold of ``reduce_func(state, element)`` over the elements, from
        ``initial_state``: a graph op that runs the whole pipeline (dataset_reduce.py)."""
        return _extension("reduce")(self, initial_state, reduce_func)

    def window(self, size: Any, shift: Any = None, stride: Any = 1,
               drop_remainder: bool = False) -> Dataset:
        """Windows of ``size`` elements, ``shift`` apart, taking every ``stride``-th: each
        element is (a structure of) datasets, for flat_map or interleave to take apart
        (dataset_window.py)."""
        return _extension("window")(self, size, shift, stride, drop_remainder)

    def flat_map(self, map_func: Callable[..., Any]) -> Dataset:
        """The elements of the datasets ``map_func`` returns for each element, one after the
        other. ``map_func`` builds its dataset from its argument (from_tensor_slices,
        from_tensors, range, a file dataset, and stages of theirs)."""
        return self._interleaved(map_func, 1, 1)

    def interleave(self, map_func: Callable[..., Any], cycle_length: Any = None,
                   block_length: int = 1, num_parallel_calls: Any = None,
                   deterministic: Any = None) -> Dataset:
        """``map_func``'s datasets of ``cycle_length`` input elements at once, taking
        ``block_length`` elements from each in turn (TF's order exactly). A cycle_length of
        None or AUTOTUNE is the iterator device's CPU count, as in TF."""
        cycle = -1 if cycle_length is None else int(cycle_length)
        if cycle == 0 or cycle < -1:
            raise ValueError(f"cycle_length must be positive or AUTOTUNE, got {cycle_length}")
        if int(block_length) <= 0:
            raise ValueError(f"block_length must be positive, got {block_length}")
        return self._interleaved(map_func, cycle, int(block_length))

    def _interleaved(self, fn: Callable[..., Any], cycle: int, block: int) -> Dataset:
        """The stage runs ``fn``'s ops per element to make its inner dataset's sources (and
        captures), then the inner pipeline over them."""
        outer = self._maps_as_stages()
        inner: list[Dataset] = []

        def trace(element: Any) -> list[Tensor]:
            made = fn(*element) if isinstance(element, tuple) else fn(element)
            if not isinstance(made, Dataset):
                raise TypeError(f"`map_func` must return a `Dataset` object. Got "
                                f"{type(made).__name__}")
            if made._holds_windows:
                raise NotImplementedError("a flat_map/interleave function that returns windows "
                                          "(Dataset.window) is not built in zmtf; take the "
                                          "windows apart in a flat_map of their own")
            inner.append(made._maps_as_stages())
            return list(inner[0]._sources) + list(inner[0]._captures)

        function, captures = outer._traced("interleave", trace)
        made = inner[0]
        stage = ["interleave", function, made._stages, len(made._sources), cycle, block]
        return Dataset(made._structure, outer._sources, outer._stages + [stage], made._shapes,
                       (), made._types, captures)

    @property
    def output_types(self) -> Any:
        """The element's dtypes (pending maps are traced once to find them)."""
        if self._maps:
            return self._maps_as_stages().output_types
        return _pack(self._structure, [as_dtype(d) for d in self._types],
                     sparse=lambda _indices, values, _shape: values)   # TF: the values' dtype

    @property
    def output_shapes(self) -> Any:
        if self._maps:
            return self._maps_as_stages().output_shapes
        return _pack(self._structure, [TensorShape(s) for s in self._shapes],
                     sparse=lambda _indices, _values, shape: TensorShape(
                         [None] * shape.as_list()[0] if shape.is_fully_defined() else None))

    def make_one_shot_iterator(self) -> Iterator:
        """An iterator that starts itself on its first get_next (its sources are constants
        or variables read then)."""
        return Iterator(self, one_shot=True)

    def make_initializable_iterator(self, shared_name: str | None = None) -> Iterator:
        """An iterator started (and restarted) by running ``iterator.initializer``, which
        reads the sources then: placeholders may be fed to it."""
        return Iterator(self, one_shot=False, shared_name=shared_name)


def TFRecordDataset(filenames: Any, compression_type: Any = None, buffer_size: Any = None,  # noqa: N802
                    num_parallel_reads: Any = None) -> Dataset:
    """``tf.data.TFRecordDataset``: the records of ``filenames`` (a str, a list of them or a
    string tensor), file after file, each a scalar tf.string (usually a serialized Example:
    ``.map(lambda r: tf.parse_single_example(r, features))``); ``compression_type`` is "",
    "ZLIB" or "GZIP" (or a string tensor). ``buffer_size`` and
    ``num_parallel_reads`` are accepted; files are read one after the other."""
    return Dataset._records("TFRecordDataset", ["tfrecord"], filenames, compression_type)


def TextLineDataset(filenames: Any, compression_type: Any = None, buffer_size: Any = None,  # noqa: N802
                    num_parallel_reads: Any = None) -> Dataset:
    """``tf.data.TextLineDataset``: each line of ``filenames``, file after file, as a scalar
    tf.string without its line ending; ``compression_type`` as TFRecordDataset's.
    ``buffer_size`` and ``num_parallel_reads`` are accepted; files are read one after the
    other."""
    return Dataset._records("TextLineDataset", ["textline"], filenames, compression_type)


def FixedLengthRecordDataset(filenames: Any, record_bytes: int, header_bytes: int | None = None,  # noqa: N802
                             footer_bytes: int | None = None, buffer_size: Any = None,
                             compression_type: Any = None,
                             num_parallel_reads: Any = None) -> Dataset:
    """``tf.data.FixedLengthRecordDataset``: the ``record_bytes``-long records of each file
    after ``header_bytes`` and before ``footer_bytes`` (what lies between must be a multiple
    of ``record_bytes``), as scalar tf.strings (``tf.decode_raw`` them); a compressed file
    ("ZLIB", "GZIP") is decompressed first."""
    sizes = {"record_bytes": record_bytes, "header_bytes": header_bytes or 0,
             "footer_bytes": footer_bytes or 0}
    for what, value in sizes.items():
        if int(value) < (1 if what == "record_bytes" else 0):
            raise ValueError(f"FixedLengthRecordDataset: {what} must be "
                             f"{'positive' if what == 'record_bytes' else 'non-negative'}, got {value}")
    source = ["fixed_length", *(int(v) for v in sizes.values())]
    return Dataset._records("FixedLengthRecordDataset", source, filenames, compression_type)


STRING_INPUT_OPS.add("IteratorGetNextFromStringHandle")


@op_def("Iterator", stateful=True)
def _handle_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.string, TensorShape([]))]


@op_def("IteratorGetNextFromStringHandle", stateful=True)
def _get_next_from_handle_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return _get_next_outputs(inputs, attrs)


class Iterator:
    """``get_next()`` gives the next element's tensors, in the dataset's structure. Made from
    a dataset (one-shot or initializable), or from a structure alone (``from_structure``:
    ``make_initializer(dataset)`` points it at any dataset of that structure; or
    ``from_string_handle``: the iterator whose ``string_handle()`` is fed)."""

    def __init__(self, dataset: Dataset | None, one_shot: bool, shared_name: str | None = None,
                 structure: Any = None, types: list[str] | None = None,
                 shapes: list[list[int | None] | None] | None = None) -> None:
        self._dataset = dataset
        self._one_shot = one_shot
        # a fresh name per iterator made: a rerun of a script starts from the beginning even
        # on a long-running worker (whose resources outlive sessions)
        self._shared_name = shared_name or f"iterator_{uuid.uuid4().hex}"
        self._initializer: Operation | None = None
        self._handle_op: Operation | None = None
        self._handle_input: Tensor | None = None
        if dataset is not None:
            structure, types, shapes = dataset._structure, dataset._types, dataset._shapes
        self._structure, self._types, self._shapes = structure, list(types or []), shapes or []
        if dataset is not None and not one_shot:
            self._initializer = apply_op("IteratorInit", self._inputs(dataset),
                                         self._attrs(dataset), name="MakeIterator")

    @staticmethod
    def from_structure(output_types: Any, output_shapes: Any = None, shared_name: str | None = None,
                       output_classes: Any = None) -> Iterator:
        """A reinitializable iterator: ``make_initializer(dataset)`` (re)starts it on
        ``dataset``, which must have these types and compatible shapes."""
        types, shapes = _structure_components(output_types, output_shapes)
        iterator = Iterator(None, one_shot=False, shared_name=shared_name,
                            structure=_pack(output_types, [None] * len(types)), types=types,
                            shapes=shapes)
        iterator._handle_op = apply_op("Iterator", [], {"shared_name": iterator._shared_name,
                                                        "output_types": types,
                                                        "output_shapes": shapes},
                                       name="Iterator")
        return iterator

    @staticmethod
    def from_string_handle(string_handle: Any, output_types: Any, output_shapes: Any = None,
                           output_classes: Any = None) -> Iterator:
        """A feedable iterator: get_next() reads the iterator whose ``string_handle()`` value
        ``string_handle`` (usually a placeholder) holds; it must live on get_next()'s device."""
        handle = convert_to_tensor(string_handle, dtype=dtypes.string, name="string_handle")
        if handle.shape.ndims not in (None, 0):
            raise ValueError(f"from_string_handle: string_handle must be a scalar, got {handle.shape}")
        types, shapes = _structure_components(output_types, output_shapes)
        iterator = Iterator(None, one_shot=False, structure=_pack(output_types, [None] * len(types)),
                            types=types, shapes=shapes)
        iterator._handle_input = handle
        return iterator

    def _attrs(self, dataset: Dataset | None = None) -> dict[str, Any]:
        dataset = dataset or self._dataset
        attrs: dict[str, Any] = {"shared_name": self._shared_name,
                                 "output_types": list(self._types), "output_shapes": self._shapes}
        if dataset is not None:
            attrs.update(pipeline=dataset._stages, num_sources=len(dataset._sources),
                         one_shot=self._one_shot)
        return attrs

    @staticmethod
    def _inputs(dataset: Dataset) -> list[Tensor]:
        return list(dataset._sources) + list(dataset._captures)

    @property
    def initializer(self) -> Operation:
        if self._initializer is None:
            if self._dataset is None:
                raise ValueError("Iterator does not have an initializer: make one with "
                                 "make_initializer(dataset)")
            raise ValueError("a one-shot iterator has no initializer: it starts on its first "
                             "get_next(); use make_initializable_iterator() to restart it")
        return self._initializer

    def make_initializer(self, dataset: Dataset, name: str | None = None) -> Operation:
        """An op that (re)starts this iterator on ``dataset`` (TF's reinitializable iterator)."""
        if self._handle_op is None:
            raise ValueError("make_initializer is for iterators made by Iterator.from_structure")
        if dataset._holds_windows:
            raise NotImplementedError("iterators over windows (Dataset.window) are not built in "
                                      "zmtf; flat_map the windows into tensors first")
        dataset = dataset._maps_as_stages()
        if dataset._types != self._types or \
                _structure_template(dataset._structure) != _structure_template(self._structure):
            raise TypeError(f"Expected output types {self.output_types!r} but got dataset with "
                            f"output types {dataset.output_types!r}.")
        for mine, theirs in zip(self._shapes, dataset._shapes):
            if not TensorShape(mine).is_compatible_with(TensorShape(theirs)):
                raise TypeError(f"Expected output shapes compatible with {self.output_shapes!r} "
                                f"but got dataset with output shapes {dataset.output_shapes!r}.")
        with get_default_graph().colocate_with(self._handle_op):
            return apply_op("IteratorInit", self._inputs(dataset),
                            {**self._attrs(dataset), "one_shot": False},
                            name=name or "make_initializer")

    def string_handle(self, name: str | None = None) -> Tensor:
        """A scalar string naming this iterator (on its device), to feed a
        ``from_string_handle`` iterator's handle."""
        if self._handle_op is None:
            if self._handle_input is not None:
                return self._handle_input
            # a one-shot iterator's handle op starts it, as its get_next does
            inputs = self._inputs(self._dataset) if self._one_shot and self._dataset else []
            with get_default_graph().colocate_with(self._initializer) \
                    if self._initializer is not None else contextlib.nullcontext():
                self._handle_op = apply_op("Iterator", inputs, self._attrs(), name=name or "Iterator")
        return self._handle_op.outputs[0]

    def get_next(self, name: str | None = None) -> Any:
        graph = get_default_graph()
        if self._handle_input is not None:
            op = apply_op("IteratorGetNextFromStringHandle", [self._handle_input], self._attrs(),
                          name=name or "IteratorGetNext")
            return _pack(self._structure, list(op.outputs))
        inputs = self._inputs(self._dataset) if self._one_shot and self._dataset is not None else []
        anchor = self._initializer if self._initializer is not None else self._handle_op
        with graph.colocate_with(anchor) if anchor is not None else contextlib.nullcontext():
            op = apply_op("IteratorGetNext", inputs, self._attrs(), name=name or "IteratorGetNext")
        element = _pack(self._structure, list(op.outputs))
        for fn in self._dataset._maps if self._dataset is not None else ():
            element = fn(*element) if isinstance(element, tuple) else fn(element)
        return element

    @property
    def output_types(self) -> Any:
        if self._dataset is not None:
            return self._dataset.output_types
        return _pack(self._structure, [as_dtype(d) for d in self._types])

    @property
    def output_shapes(self) -> Any:
        if self._dataset is not None:
            return self._dataset.output_shapes
        return _pack(self._structure, [TensorShape(s) for s in self._shapes])


def _structure_components(output_types: Any, output_shapes: Any) -> tuple[list[str], list]:
    """The dtype names and shapes (as lists) of a structure given by its types and shapes."""
    if _sparse_starts(output_types):
        raise NotImplementedError("iterators of SparseTensor structures from types are not built")
    types = [as_dtype(t).name for t in _flatten(output_types)]
    if output_shapes is None:
        return types, [None] * len(types)
    return types, [_shape_list(TensorShape(s)) for s in _shape_leaves(output_shapes, output_types)]


__all__ = ["Dataset", "FixedLengthRecordDataset", "Iterator", "TFRecordDataset", "TextLineDataset"]


def make_one_shot_iterator(dataset: Dataset) -> Iterator:
    """``tf.data.make_one_shot_iterator(dataset)`` (TF 1.13+ spelling)."""
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset: Dataset, shared_name: str | None = None) -> Iterator:
    """``tf.data.make_initializable_iterator(dataset)`` (TF 1.13+ spelling)."""
    return dataset.make_initializable_iterator(shared_name)
