"""tf.Variable: a Variable node plus its initializer (Assign) and read (Identity) ops."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from zmtf.framework.graph import GraphKeys, Operation, Tensor, get_default_graph
from zmtf.framework.indexed_slices import IndexedSlices
from zmtf.framework.op_def import apply_op
from zmtf.ops import state_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.control_flow_ops import group, no_op


class Variable:
    """A TF1 variable: ``Variable(3.0, name="a")`` makes nodes a, a/initial_value, a/Assign, a/read.

    ``op.type == "Variable"``, as device functions written for TF1 test; its dtype is
    inferred from the initial value (``Variable(3)`` is int32).
    """

    def __init__(self, initial_value: Any = None, trainable: bool = True, collections: Any = None,
                 validate_shape: bool = True, name: str | None = None, dtype: Any = None,
                 **_unused: Any) -> None:
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        graph = get_default_graph()
        with graph.outside_loops(), graph.name_scope(name or "Variable") as scope:
            if callable(initial_value):
                with graph.colocate_with(None), graph.name_scope("Initializer"), graph.device(None):
                    initial_value = initial_value()
            init = convert_to_tensor(initial_value, dtype=dtype, name="initial_value")
            shape = init.shape if validate_shape else init.shape.__class__(None)
            self._ref = state_ops.variable_op(shape, init.dtype, name=scope)
            with graph.colocate_with(self._ref.op):
                self._initializer = state_ops.assign(self._ref, init, validate_shape=validate_shape).op
                self._snapshot = apply_op("Identity", [self._ref], name="read").outputs[0]
        self._initial_value = init
        self._trainable = trainable
        for key in collections or [GraphKeys.GLOBAL_VARIABLES]:
            graph.add_to_collection(key, self)
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in (collections or []):
            graph.add_to_collection(GraphKeys.TRAINABLE_VARIABLES, self)

    @classmethod
    def _from_graph(cls, ref: Tensor, initializer: Operation, snapshot: Tensor,
                    initial_value: Tensor, trainable: bool) -> Variable:
        """A Variable over ops already in the graph (import_meta_graph rebuilt them); adds
        it to no collection, since the importer restores the collections as they were."""
        variable = cls.__new__(cls)
        variable._ref, variable._initializer, variable._snapshot = ref, initializer, snapshot
        variable._initial_value, variable._trainable = initial_value, trainable
        return variable

    # ---- identity ---------------------------------------------------------------
    name = property(lambda self: self._ref.name)
    op = property(lambda self: self._ref.op)
    dtype = property(lambda self: self._ref.dtype)
    device = property(lambda self: self._ref.device)
    graph = property(lambda self: self._ref.graph)
    shape = property(lambda self: self._ref.shape)
    initializer = property(lambda self: self._initializer)
    initial_value = property(lambda self: self._initial_value)
    trainable = property(lambda self: self._trainable)

    def get_shape(self) -> Any:
        return self._ref.shape

    def value(self) -> Tensor:
        """The read tensor ("name/read"), what expressions on the variable consume."""
        return self._snapshot

    def read_value(self) -> Tensor:
        return self._snapshot

    def _ref_tensor(self) -> Tensor:
        return self._ref

    def _as_graph_element(self) -> Tensor:
        return self._snapshot

    # ---- updates ----------------------------------------------------------------
    def assign(self, value: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
        with self.graph.colocate_with(self._ref.op):
            return state_ops.assign(self._ref, value, name=name)

    def assign_add(self, delta: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
        with self.graph.colocate_with(self._ref.op):
            return state_ops.assign_add(self._ref, delta, name=name)

    def assign_sub(self, delta: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
        with self.graph.colocate_with(self._ref.op):
            return state_ops.assign_sub(self._ref, delta, name=name)

    def count_up_to(self, limit: int) -> Tensor:
        """The value before incrementing; OutOfRangeError once it has reached ``limit``."""
        with self.graph.colocate_with(self._ref.op):
            return state_ops.count_up_to(self._ref, limit)

    def is_initialized(self) -> Tensor:
        with self.graph.colocate_with(self._ref.op):
            return state_ops.is_variable_initialized(self._ref)

    def eval(self, session: Any = None) -> Any:
        return self._snapshot.eval(session=session)

    def load(self, value: Any, session: Any = None) -> None:
        from zmtf.framework.graph import session_for

        session_for(self.graph, session).run(self._initializer, feed_dict={self._initial_value: value})

    def __repr__(self) -> str:
        return f"<zmtf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"


def _to_tensor(fn: Callable[..., Tensor]) -> Callable[..., Any]:
    return lambda self, *args: fn(self._snapshot, *args)


for _dunder in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
                "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__",
                "__rpow__", "__matmul__", "__rmatmul__", "__lt__", "__le__", "__gt__", "__ge__",
                "__neg__", "__abs__", "__getitem__"):
    setattr(Variable, _dunder, (lambda d: lambda self, *args: getattr(self._snapshot, d)(*args))(_dunder))


def global_variables(scope: str | None = None) -> list[Variable]:
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


all_variables = global_variables


def trainable_variables(scope: str | None = None) -> list[Variable]:
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def moving_average_variables(scope: str | None = None) -> list[Variable]:
    """The variables an ExponentialMovingAverage was applied to (MOVING_AVERAGE_VARIABLES)."""
    return get_default_graph().get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def local_variables(scope: str | None = None) -> list[Variable]:
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def variables_initializer(var_list: list[Variable], name: str = "init") -> Operation:
    """One op that runs every variable's initializer."""
    if not var_list:
        return no_op(name=name)
    return group(*[v.initializer for v in var_list], name=name)


def global_variables_initializer() -> Operation:
    return variables_initializer(global_variables(), name="init")


initialize_all_variables = global_variables_initializer


def local_variables_initializer() -> Operation:
    return variables_initializer(local_variables(), name="init")


initialize_local_variables = local_variables_initializer
initialize_variables = variables_initializer


def model_variables(scope: str | None = None) -> list[Variable]:
    """The variables a layer library put in MODEL_VARIABLES (tf.contrib's model_variable)."""
    return get_default_graph().get_collection(GraphKeys.MODEL_VARIABLES, scope)


def tables_initializer(name: str = "init_all_tables") -> Operation:
    """One op running every lookup table's initializer (GraphKeys.TABLE_INITIALIZERS, which
    each table adds its initializer to); a no_op when the graph has no tables."""
    initializers = get_default_graph().get_collection(GraphKeys.TABLE_INITIALIZERS)
    return group(*initializers, name=name) if initializers else no_op(name=name)


initialize_all_tables = tables_initializer


def is_tensor(x: Any) -> bool:
    """True for graph values: a Tensor, a Variable or IndexedSlices (not numpy arrays)."""
    return isinstance(x, (Tensor, Variable, IndexedSlices))




def report_uninitialized_variables(var_list: Any = None,
                                   name: str = "report_uninitialized_variables") -> Tensor:
    """The names (a 1-D tf.string tensor) of the variables of ``var_list`` (default: global
    and local) that are not initialized yet; empty once they all are. TF1's ready op."""
    from zmtf.ops import array_ops, math_ops
    from zmtf.ops.constant_op import constant
    from zmtf.ops.selection_ops import boolean_mask

    if var_list is None:
        var_list = global_variables() + local_variables()
    graph = get_default_graph()
    with graph.name_scope(name):
        if not var_list:
            return array_ops.reshape(constant([], dtype="string"), [0])
        names = constant(np.array([v.op.name.encode() for v in var_list], dtype=object))
        missing = math_ops.logical_not(array_ops.stack([v.is_initialized() for v in var_list]))
        return boolean_mask(names, missing)
