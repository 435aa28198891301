"""tf.variable_scope, tf.get_variable and partitioned variables, as TF1 has them.

Each graph keeps a variable store (full name -> Variable or PartitionedVariable) and a
stack of variable scopes. ``get_variable`` names variables by the variable scopes only
(name scopes do not prefix them, as in TF1), refuses to create a variable that exists
unless the scope reuses, and refuses to reuse one that does not exist; the errors are
TF's, word for word where a user would search for them. A scope's ``custom_getter`` is
called in place of the variable store (``custom_getter(getter, name, **kwargs)``, the inner
scope's getter around the outer's, as TF1 nests them). A ``partitioner`` (e.g.
``tf.fixed_size_partitioner(2)``) makes one Variable per shard, "<name>/part_<i>", so a
replica_device_setter spreads the shards over the ps tasks.
"""

from __future__ import annotations

import functools
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.dtypes import as_dtype
from zmtf.framework.graph import Graph, GraphKeys, Tensor, get_default_graph
from zmtf.ops import array_ops
from zmtf.ops.init_ops import GlorotUniform, Zeros
from zmtf.framework.tensor_shape import TensorShape, as_shape
from zmtf.ops.variables import Variable

AUTO_REUSE = "AUTO_REUSE"


@dataclass(frozen=True)
class VariableScope:
    """A variable scope: its name and what get_variable inside it defaults to."""

    name: str = ""
    reuse: Any = False            # False, True or AUTO_REUSE
    initializer: Any = None
    regularizer: Any = None       # called on each variable made here; its loss is collected
    partitioner: Any = None
    dtype: Any = dtypes.float32
    name_scope: str = ""          # the name scope its ops went into when it was entered
    custom_getter: Any = None     # called by get_variable in place of the store (TF1's hook)

    @property
    def original_name_scope(self) -> str:
        return self.name_scope

    def reuse_variables(self) -> None:
        """TF1's ``tf.get_variable_scope().reuse_variables()``: reuse from here on."""
        state = _state(get_default_graph())
        if state.stack and state.stack[-1].name == self.name:
            state.stack[-1] = replace(state.stack[-1], reuse=True)


class _GraphState:
    def __init__(self) -> None:
        self.store: dict[str, Any] = {}
        self.stack: list[VariableScope] = [VariableScope()]
        self.scope_uses: dict[str, int] = {}


_states: "weakref.WeakKeyDictionary[Graph, _GraphState]" = weakref.WeakKeyDictionary()


def _state(graph: Graph) -> _GraphState:
    state = _states.get(graph)
    if state is None:
        state = _states[graph] = _GraphState()
    return state


def get_variable_scope() -> VariableScope:
    return _state(get_default_graph()).stack[-1]


@contextmanager
def variable_scope(name_or_scope: Any = None, default_name: str | None = None, values: Any = None,
                   initializer: Any = None, regularizer: Any = None, reuse: Any = None,
                   partitioner: Any = None, custom_getter: Any = None, dtype: Any = None,
                   auxiliary_name_scope: bool = True, **_unused: Any) -> Iterator[VariableScope]:
    """Enter a variable scope, and a name scope for the ops inside named by its last part
    (made unique under the current name scope, also when a VariableScope object is
    re-entered, as in TF1); ``auxiliary_name_scope=False`` keeps the current name scope."""
    if custom_getter is not None and not callable(custom_getter):
        raise ValueError(f"The custom_getter must be callable. Received: {custom_getter!r}")
    graph = get_default_graph()
    state = _state(graph)
    parent = state.stack[-1]
    if isinstance(name_or_scope, VariableScope):
        base = name_or_scope
        full = base.name
    else:
        if name_or_scope is None:
            if default_name is None:
                raise ValueError("variable_scope: give a name_or_scope or a default_name")
            name = _unique_scope(state, parent, default_name)
        else:
            name = str(name_or_scope)
        full = f"{parent.name}/{name}" if parent.name else name
        base = parent
    if parent.reuse is True:                       # reuse cannot be turned off below a reusing scope
        reusing: Any = True
    elif reuse is not None and reuse is not False:
        reusing = reuse
    elif parent.reuse == AUTO_REUSE:
        reusing = AUTO_REUSE
    else:
        reusing = base.reuse if isinstance(name_or_scope, VariableScope) else False
    scope = VariableScope(
        name=full,
        reuse=reusing,
        initializer=initializer if initializer is not None else base.initializer,
        regularizer=regularizer if regularizer is not None else base.regularizer,
        partitioner=partitioner if partitioner is not None else base.partitioner,
        dtype=as_dtype(dtype) if dtype is not None else base.dtype,
        custom_getter=_nest_getters(custom_getter, base.custom_getter),
    )
    state.scope_uses[full] = state.scope_uses.get(full, 0) + 1
    current = graph.get_name_scope()
    if not auxiliary_name_scope:
        op_scope = f"{current}/" if current else ""
    else:   # TF1: a default name's name scope is made unique on its own, not from the scope's
        op_scope = default_name if name_or_scope is None else full.rsplit("/", 1)[-1]
    with graph.name_scope(op_scope) as entered:
        kept = name_or_scope.name_scope if isinstance(name_or_scope, VariableScope) else entered
        state.stack.append(replace(scope, name_scope=kept))   # TF keeps the first name scope
        try:
            yield state.stack[-1]
        finally:
            state.stack.pop()


def _nest_getters(inner: Any, outer: Any) -> Any:
    """TF1's _maybe_wrap_custom_getter: ``inner`` runs first; its ``getter`` is ``outer``
    wrapped around the real one."""
    if inner is None or outer is None:
        return inner if inner is not None else outer

    def nested(getter: Any, *args: Any, **kwargs: Any) -> Any:
        return inner(functools.partial(outer, getter), *args, **kwargs)

    return nested


def _unique_scope(state: _GraphState, parent: VariableScope, base: str) -> str:
    name, i = base, 0
    while (f"{parent.name}/{name}" if parent.name else name) in state.scope_uses:
        i += 1
        name = f"{base}_{i}"
    return name


def get_variable(name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
                 regularizer: Any = None, trainable: bool = True, collections: Any = None,
                 caching_device: Any = None, partitioner: Any = None, validate_shape: bool = True,
                 **_unused: Any) -> Any:
    """Get an existing variable of the current variable scope, or create it (TF1 rules)."""
    scope = _state(get_default_graph()).stack[-1]
    full = f"{scope.name}/{name}" if scope.name else name
    if scope.custom_getter is not None:   # TF1 passes every argument by keyword
        return scope.custom_getter(
            getter=_true_getter, name=full, shape=shape, dtype=dtype, initializer=initializer,
            regularizer=regularizer, reuse=scope.reuse, trainable=trainable,
            collections=collections, caching_device=caching_device, partitioner=partitioner,
            validate_shape=validate_shape, use_resource=_unused.get("use_resource"),
            constraint=_unused.get("constraint"), synchronization=_unused.get("synchronization"),
            aggregation=_unused.get("aggregation"))
    return get_variable_at(full, shape, dtype, initializer, regularizer, trainable, collections,
                           partitioner, validate_shape)


def _true_getter(name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
                 regularizer: Any = None, reuse: Any = None, trainable: Any = None,
                 collections: Any = None, caching_device: Any = None, partitioner: Any = None,
                 validate_shape: bool = True, **_unused: Any) -> Any:
    """The getter a custom getter is handed: get_variable at the full ``name`` it got."""
    return get_variable_at(name, shape, dtype, initializer, regularizer,
                           True if trainable is None else trainable, collections, partitioner,
                           validate_shape, reuse=reuse)


def get_variable_at(full: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
                    regularizer: Any = None, trainable: bool = True, collections: Any = None,
                    partitioner: Any = None, validate_shape: bool = True, reuse: Any = None) -> Any:
    """get_variable of the variable named ``full`` (not prefixed by the current variable scope,
    whose reuse, initializer and partitioner still apply): create_partitioned_variables names
    its variable after the scope it opens, as TF's _get_partitioned_variable(name=None)."""
    graph = get_default_graph()
    state = _state(graph)
    scope = state.stack[-1]
    if reuse is not None:          # a custom getter's own choice
        scope = replace(scope, reuse=reuse)
    dt = as_dtype(dtype) if dtype is not None else as_dtype(scope.dtype)
    wanted = as_shape(shape) if shape is not None else None
    existing = state.store.get(full)
    if existing is not None:
        if scope.reuse is False:
            raise ValueError(f"Variable {full} already exists, disallowed. Did you mean to set "
                             f"reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
        if wanted is not None and not wanted.is_compatible_with(existing.get_shape()):
            raise ValueError(f"Trying to share variable {full}, but specified shape {wanted} and "
                             f"found shape {existing.get_shape()}.")
        if dtype is not None and existing.dtype != dt:
            raise ValueError(f"Trying to share variable {full}, but specified dtype {dt.name} and "
                             f"found dtype {existing.dtype.name}.")
        return existing
    if scope.reuse is True:
        raise ValueError(f"Variable {full} does not exist, or was not created with "
                         f"tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in VarScope?")
    init = initializer if initializer is not None else scope.initializer
    if init is None:
        init = GlorotUniform() if dt.is_floating else Zeros()
    partitioner = partitioner if partitioner is not None else scope.partitioner
    with graph.name_scope(None):   # variables are named by variable scopes only
        if partitioner is not None:
            created: Any = _partitioned(full, wanted, dt, init, partitioner, trainable, collections)
        else:
            created = Variable(_initial(init, wanted, dt, full), trainable=trainable,
                               collections=collections, name=full + "/", dtype=dt,
                               validate_shape=validate_shape)
    state.store[full] = created
    _regularize(graph, full, created, regularizer if regularizer is not None else scope.regularizer)
    return created


def get_local_variable(name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
                       collections: Any = None, **kwargs: Any) -> Any:
    """``get_variable`` for a LOCAL_VARIABLES, non-trainable variable (metric counters): not
    saved, initialized by ``tf.local_variables_initializer()``."""
    collections = list(collections or []) + [GraphKeys.LOCAL_VARIABLES]
    kwargs["trainable"] = False
    return get_variable(name, shape, dtype, initializer, collections=collections, **kwargs)


def _regularize(graph: Graph, full: str, created: Any, regularizer: Any) -> None:
    """TF1: ``regularizer(variable)`` (each shard of a partitioned one) goes into
    REGULARIZATION_LOSSES, built in the name scope "<variable>/Regularizer"."""
    if regularizer is None:
        return
    parts = created._get_variable_list() if hasattr(created, "_get_variable_list") else [created]
    for part in parts:
        with graph.name_scope(None), graph.name_scope(part.op.name + "/Regularizer"):
            loss = regularizer(part)
        if loss is not None:
            graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)


def _initial(init: Any, shape: TensorShape | None, dt: dtypes.DType, full: str) -> Any:
    """What Variable() gets: a callable building the initial value, or the value itself."""
    if callable(init) and not isinstance(init, (Tensor, np.ndarray)):
        if shape is None or not shape.is_fully_defined():
            raise ValueError(f"Shape of a new variable ({full}) must be fully defined, but instead "
                             f"was {shape}.")
        return lambda: init(shape.as_list(), dtype=dt)
    if shape is not None and isinstance(init, (Tensor, np.ndarray)):
        raise ValueError(f"If initializer is a constant, do not specify shape ({full}).")
    return init


# ---- partitioned variables ---------------------------------------------------------------
def fixed_size_partitioner(num_shards: int, axis: int = 0) -> Callable[..., list[int]]:
    """A partitioner: ``num_shards`` shards along ``axis`` (fewer if the axis is shorter)."""

    def partitioner(shape: Any, dtype: Any = None) -> list[int]:
        dims = as_shape(shape).as_list()
        parts = [1] * len(dims)
        parts[axis] = max(1, min(int(num_shards), int(dims[axis])))
        return parts

    return partitioner


def _shard_sizes(total: int, shards: int) -> list[int]:
    """TF's split: the first total % shards shards get one row more."""
    base, extra = divmod(total, shards)
    return [base + (1 if i < extra else 0) for i in range(shards)]


def _partitioned(full: str, shape: TensorShape | None, dt: dtypes.DType, init: Any,
                 partitioner: Callable[..., list[int]], trainable: bool, collections: Any) -> Any:
    if isinstance(init, Tensor):
        raise ValueError(f"a partitioned variable ({full}) takes an initializer or an array, not a "
                         f"tensor: it is cut into shards at graph time")
    if shape is None and not callable(init):
        shape = as_shape(np.shape(init))
    if shape is None or not shape.is_fully_defined():
        raise ValueError(f"Shape of a new partitioned variable ({full}) must be fully defined, "
                         f"but instead was {shape}.")
    dims = shape.as_list()
    parts = list(partitioner(shape=shape, dtype=dt))
    axes = [i for i, p in enumerate(parts) if p > 1]
    if len(parts) != len(dims) or len(axes) > 1:
        raise ValueError(f"partitioner returned {parts} for {full} of shape {dims}: one entry per "
                         f"dimension, and only one may be > 1")
    axis = axes[0] if axes else 0
    sizes = _shard_sizes(dims[axis], parts[axis]) if axes else [dims[axis]]
    constant_value = None if callable(init) else np.asarray(init, dt.np)
    variables, offset = [], 0
    for i, size in enumerate(sizes):
        part_shape = dims[:axis] + [size] + dims[axis + 1:]
        if constant_value is not None:
            index = [slice(None)] * len(dims)
            index[axis] = slice(offset, offset + size)
            initial: Any = constant_value[tuple(index)]
        else:
            def initial(s: Any = part_shape, init: Any = init, dt: Any = dt) -> Any:
                return init(s, dtype=dt)
        variables.append(Variable(initial, trainable=trainable, collections=collections,
                                  name=f"{full}/part_{i}/", dtype=dt))
        offset += size
    return register_partitioned(PartitionedVariable._of_shards(full, dims, dt, variables, axis))


#: id(shard's Variable op) -> its PartitionedVariable (the Saver saves the whole)
_owners: "weakref.WeakValueDictionary[int, PartitionedVariable]" = weakref.WeakValueDictionary()


def register_partitioned(whole: "PartitionedVariable") -> "PartitionedVariable":
    """Note ``whole`` as the owner of its shards (the Saver saves the whole); returns it."""
    for part in whole:
        _owners[id(part.op)] = whole
    return whole


def partitioned_owner(variable: Any) -> "PartitionedVariable | None":
    """The partitioned variable ``variable`` is a shard of, if any."""
    op = getattr(variable, "op", None)
    return _owners.get(id(op)) if op is not None else None


class PartitionedVariable:
    """A variable kept as shards ("<name>/part_<i>"): iterate for the shards; used as a tensor
    it is their concatenation along the partitioned axis.

    TF's constructor: ``PartitionedVariable(name, shape, dtype, variable_list, partitions)``;
    every shard carries its ``Variable.SaveSliceInfo`` and the shards are ordered by offset."""

    def __init__(self, name: str, shape: Any, dtype: dtypes.DType, variable_list: list[Variable],
                 partitions: list[int]) -> None:
        if not variable_list:
            raise ValueError(f"Expected a non-empty list of variables, but received: {variable_list}")
        shape, partitions = list(TensorShape(shape).as_list()), list(partitions)
        if len(shape) != len(partitions):
            raise ValueError(f"len(shape) != len(partitions): {shape} vs. {partitions}")
        if not all(p >= 1 for p in partitions):
            raise ValueError(f"All partitions must be positive: {partitions}")
        infos = [v._get_save_slice_info() for v in variable_list]
        missing = [v.name for v, info in zip(variable_list, infos) if info is None]
        if missing:
            raise ValueError(f"All variables must have a save_slice_info available: {missing}")
        if any(info.full_shape != shape for info in infos):
            raise ValueError(f"All variables' full shapes must match shape: {shape}; but full shapes "
                             f"were: {[info.full_shape for info in infos]}")
        axes = [i for i, p in enumerate(partitions) if p > 1]
        self.name = name
        self._shape = TensorShape(shape)
        self.dtype = dtype
        self._variables = sorted(variable_list, key=lambda v: v._get_save_slice_info().var_offset)
        self._partitions = partitions
        self.axis = axes[0] if axes else 0
        self._concat: Tensor | None = None

    @classmethod
    def _of_shards(cls, name: str, shape: list[int], dtype: dtypes.DType, variables: list[Variable],
                   axis: int) -> PartitionedVariable:
        """The whole of ``variables``, in order, cut along ``axis``: gives each its SaveSliceInfo."""
        offset = 0
        for v in variables:
            part_shape = v.shape.as_list()
            start = [0] * len(shape)
            start[axis] = offset
            v._set_save_slice_info(Variable.SaveSliceInfo(name, list(shape), start, part_shape))
            offset += part_shape[axis]
        partitions = [1] * len(shape)
        partitions[axis] = len(variables)
        return cls(name, shape, dtype, variables, partitions)

    def _apply_assign(self, update: Callable[[Variable, Any], Any], value: Any) -> list[Any]:
        """``update(shard, its part of value)`` for every shard: value is a list (one per
        shard), a PartitionedVariable, or a tensor split along the partitioned axis."""
        if isinstance(value, (list, tuple)):
            if len(value) != len(self._variables):
                raise ValueError(f"{len(value)} values for {len(self._variables)} partitions of {self.name}")
            parts = list(value)
        elif isinstance(value, PartitionedVariable):
            parts = [v.value() for v in value]
        else:
            from zmtf.ops.selection_ops import split

            sizes = [v.shape.as_list()[self.axis] for v in self._variables]
            parts = split(value, sizes, axis=self.axis)
        return [update(v, part) for v, part in zip(self._variables, parts)]

    def assign(self, value: Any, use_locking: bool = False, name: str | None = None,
               read_value: bool = True) -> list[Any]:
        return self._apply_assign(
            lambda v, x: v.assign(x, use_locking=use_locking, name=name, read_value=read_value), value)

    def assign_add(self, value: Any, use_locking: bool = False, name: str | None = None) -> list[Any]:
        return self._apply_assign(lambda v, x: v.assign_add(x, use_locking=use_locking, name=name), value)

    def assign_sub(self, value: Any, use_locking: bool = False, name: str | None = None) -> list[Any]:
        return self._apply_assign(lambda v, x: v.assign_sub(x, use_locking=use_locking, name=name), value)

    def __iter__(self) -> Iterator[Variable]:
        return iter(self._variables)

    def __len__(self) -> int:
        return len(self._variables)

    def get_shape(self) -> TensorShape:
        return self._shape

    shape = property(get_shape)

    def _get_variable_list(self) -> list[Variable]:
        return list(self._variables)

    def as_tensor(self) -> Tensor:
        if self._concat is None:
            graph = self._variables[0].graph
            with graph.name_scope(None), graph.name_scope(self.name + "/"):
                self._concat = array_ops.concat([v.value() for v in self._variables], self.axis,
                                                name="ConcatPartitions")
        return self._concat

    def _as_graph_element(self) -> Tensor:
        return self.as_tensor()

    def __repr__(self) -> str:
        return (f"<zmtf.PartitionedVariable '{self.name}' shape={self._shape} "
                f"dtype={self.dtype.name} shards={len(self._variables)}>")
