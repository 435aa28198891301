"""``tf.nn.rnn_cell``: TF1's RNN cells, with TF1's variable names and math.

A cell maps ``(inputs, state) -> (output, new_state)`` for one time step. On its first call
it enters a variable scope of its own ("basic_lstm_cell", "gru_cell", ..., made unique in
the caller's scope, or the ``scope`` passed to the call) and creates its variables there
with tf.get_variable, e.g. "rnn/basic_lstm_cell/kernel" and "rnn/basic_lstm_cell/bias";
later calls re-enter that scope and use the same variables, so an unrolled RNN has one set
of weights and a TF1 checkpoint's names line up.
"""

from __future__ import annotations

import re
from collections import namedtuple
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.nest import assert_same_structure, flatten, map_structure
from zmtf.framework.nest import is_nested as _is_sequence
from zmtf.ops import array_ops, composite_ops, math_ops, nn_ops, selection_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.init_ops import Constant, Zeros
from zmtf.ops.variable_scope import VariableScope, get_variable, variable_scope

LSTMStateTuple = namedtuple("LSTMStateTuple", ("c", "h"))
LSTMStateTuple.__doc__ = "An LSTM's state: the cell state ``c`` and the output ``h``, each [batch, units]."


def _snake_case(name: str) -> str:
    """TF's layer naming: "BasicLSTMCell" -> "basic_lstm_cell"."""
    words = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", words).lower()


def zero_state_part(batch_size: Any, size: int, dtype: Any) -> Tensor:
    if isinstance(batch_size, Tensor):
        zeros = array_ops.fill(array_ops.stack([batch_size, size]),
                               convert_to_tensor(0, dtype=dtype))
        zeros.set_shape([None, int(size)])
        return zeros
    return array_ops.zeros([int(batch_size), int(size)], dtype=dtype)


def _input_depth(inputs: Tensor, cell: "RNNCell") -> int:
    depth = inputs.shape.as_list()[-1] if inputs.shape.ndims is not None else None
    if depth is None:
        raise ValueError(f"{type(cell).__name__}: expected inputs.shape[-1] to be known, saw "
                         f"shape {inputs.shape} ({inputs.name})")
    return int(depth)


def _linear(args: Sequence[Tensor], kernel: Any, bias: Any) -> Tensor:
    """``concat(args, 1) @ kernel + bias``: TF1's one matmul over [inputs, state]."""
    return nn_ops.bias_add(math_ops.matmul(array_ops.concat(list(args), 1), kernel), bias)


def assert_like_rnncell(cell_name: str, cell: Any) -> None:
    """TypeError unless ``cell`` quacks like an RNNCell (what TF's RNN functions accept: any
    callable with ``output_size``, ``state_size`` and ``zero_state``), worded as TF's."""
    conditions = [hasattr(cell, "output_size"), hasattr(cell, "state_size"),
                  hasattr(cell, "get_initial_state") or hasattr(cell, "zero_state"),
                  callable(cell)]
    errors = ["'output_size' property is missing", "'state_size' property is missing",
              "either 'zero_state' or 'get_initial_state' method is required", "is not callable"]
    missing = [error for error, ok in zip(errors, conditions) if not ok]
    if missing:
        raise TypeError(f"The argument {cell_name!r} ({cell}) is not an RNNCell: "
                        f"{', '.join(missing)}.")


# ---- the cells -----------------------------------------------------------------------------
class RNNCell:
    """The base of every cell: scope handling, ``zero_state``; subclasses give ``build``,
    ``call``, ``state_size`` and ``output_size``."""

    def __init__(self, reuse: Any = None, name: str | None = None, dtype: Any = None) -> None:
        self._reuse = reuse
        self._base_name = name or _snake_case(type(self).__name__)
        self._scope: VariableScope | None = None
        self._dtype = dtype
        self.built = False

    @property
    def state_size(self) -> Any:
        raise NotImplementedError

    @property
    def output_size(self) -> Any:
        raise NotImplementedError

    def build(self, inputs: Tensor) -> None:
        """Create the variables (in the cell's scope) for inputs like ``inputs``."""

    def call(self, inputs: Tensor, state: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        """One time step: ``(output, new_state)``."""
        with self._entered(scope):
            x = convert_to_tensor(inputs)
            if not self.built:
                self.build(x)
                self.built = True
            return self.call(x, map_structure(convert_to_tensor, state))

    @contextmanager
    def _entered(self, scope: Any) -> Iterator[None]:
        if self._scope is None:    # first call: find (and keep) the scope, as TF1's layers do
            if self._reuse:
                entering = variable_scope(scope if scope is not None else self._base_name,
                                          reuse=self._reuse)
            else:
                entering = variable_scope(scope, default_name=self._base_name)
            with entering as captured:
                self._scope = captured
                yield
            return
        # later calls: TF1's Layer re-enters its scope and its ops' first name scope
        with variable_scope(self._scope, reuse=True, auxiliary_name_scope=False):
            with get_default_graph().name_scope(self._scope.original_name_scope):
                yield

    @property
    def variables(self) -> list[Any]:
        """The cell's variables, in creation order (empty before the first call)."""
        return list(getattr(self, "_variables", []))

    trainable_variables = variables
    weights = variables

    def _variable(self, name: str, shape: list[int], dtype: Any, initializer: Any = None) -> Any:
        var = get_variable(name, shape, dtype=dtype, initializer=initializer)
        self.__dict__.setdefault("_variables", []).append(var)
        return var

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        """Zeros shaped like the state: [batch_size, size] for each size in ``state_size``."""
        with get_default_graph().name_scope(type(self).__name__ + "ZeroState"):
            return map_structure(lambda size: zero_state_part(batch_size, size, dtype), self.state_size)


class _UnitsCell(RNNCell):
    """A cell whose output and state are both ``num_units`` wide (basic RNN, GRU)."""

    _num_units: int

    @property
    def state_size(self) -> int:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units


class BasicRNNCell(_UnitsCell):
    """``output = new_state = activation(concat([inputs, state]) @ kernel + bias)``."""

    def __init__(self, num_units: int, activation: Callable[[Any], Any] | None = None,
                 reuse: Any = None, name: str | None = None, dtype: Any = None) -> None:
        super().__init__(reuse=reuse, name=name, dtype=dtype)
        self._num_units = int(num_units)
        self._activation = activation or math_ops.tanh

    def build(self, inputs: Tensor) -> None:
        depth = _input_depth(inputs, self)
        self._kernel = self._variable("kernel", [depth + self._num_units, self._num_units], inputs.dtype)
        self._bias = self._variable("bias", [self._num_units], inputs.dtype, Zeros())

    def call(self, inputs: Tensor, state: Any) -> tuple[Any, Any]:
        output = self._activation(_linear([inputs, state], self._kernel, self._bias))
        return output, output


class BasicLSTMCell(RNNCell):
    """TF1's LSTM without peepholes: one kernel [input_depth + units, 4 * units] whose columns
    are the gates i, j, f, o; ``c' = c * sigmoid(f + forget_bias) + sigmoid(i) * act(j)``,
    ``h' = act(c') * sigmoid(o)``."""

    def __init__(self, num_units: int, forget_bias: float = 1.0, state_is_tuple: bool = True,
                 activation: Callable[[Any], Any] | None = None, reuse: Any = None,
                 name: str | None = None, dtype: Any = None) -> None:
        super().__init__(reuse=reuse, name=name, dtype=dtype)
        self._num_units = int(num_units)
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = activation or math_ops.tanh

    @property
    def state_size(self) -> Any:
        units = self._num_units
        return LSTMStateTuple(units, units) if self._state_is_tuple else 2 * units

    @property
    def output_size(self) -> int:
        return self._num_units

    def build(self, inputs: Tensor) -> None:
        depth = _input_depth(inputs, self)
        units = self._num_units
        self._kernel = self._variable("kernel", [depth + units, 4 * units], inputs.dtype)
        self._bias = self._variable("bias", [4 * units], inputs.dtype, Zeros())

    def _split_state(self, state: Any) -> tuple[Any, Any]:
        if self._state_is_tuple:
            return state
        return tuple(selection_ops.split(state, 2, axis=1))

    def _join_state(self, c: Tensor, h: Tensor) -> Any:
        return LSTMStateTuple(c, h) if self._state_is_tuple else array_ops.concat([c, h], 1)

    def call(self, inputs: Tensor, state: Any) -> tuple[Any, Any]:
        c, h = self._split_state(state)
        i, j, f, o = selection_ops.split(_linear([inputs, h], self._kernel, self._bias), 4, axis=1)
        forget = math_ops.sigmoid(f + convert_to_tensor(self._forget_bias, dtype=f.dtype))
        new_c = c * forget + math_ops.sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * math_ops.sigmoid(o)
        return new_h, self._join_state(new_c, new_h)


class LSTMCell(BasicLSTMCell):
    """TF1's full LSTM cell: BasicLSTMCell's math plus optional peepholes ("w_i_diag",
    "w_f_diag", "w_o_diag"), ``cell_clip`` on c, and a projection of h to ``num_proj``
    ("projection/kernel", clipped to ``proj_clip``)."""

    def __init__(self, num_units: int, use_peepholes: bool = False, cell_clip: float | None = None,
                 initializer: Any = None, num_proj: int | None = None, proj_clip: float | None = None,
                 num_unit_shards: Any = None, num_proj_shards: Any = None, forget_bias: float = 1.0,
                 state_is_tuple: bool = True, activation: Callable[[Any], Any] | None = None,
                 reuse: Any = None, name: str | None = None, dtype: Any = None) -> None:
        if num_unit_shards is not None or num_proj_shards is not None:
            raise NotImplementedError("LSTMCell: num_unit_shards / num_proj_shards (deprecated in "
                                      "TF1) are not built in zmtf; use a partitioner in the "
                                      "variable scope instead")
        super().__init__(num_units, forget_bias=forget_bias, state_is_tuple=state_is_tuple,
                         activation=activation, reuse=reuse, name=name, dtype=dtype)
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = int(num_proj) if num_proj is not None else None
        self._proj_clip = proj_clip

    @property
    def state_size(self) -> Any:
        units, out = self._num_units, self.output_size
        return LSTMStateTuple(units, out) if self._state_is_tuple else units + out

    @property
    def output_size(self) -> int:
        return self._num_proj if self._num_proj is not None else self._num_units

    def build(self, inputs: Tensor) -> None:
        depth, units, dt = _input_depth(inputs, self), self._num_units, inputs.dtype
        self._kernel = self._variable("kernel", [depth + self.output_size, 4 * units], dt,
                                      self._initializer)
        self._bias = self._variable("bias", [4 * units], dt, Zeros())
        if self._use_peepholes:
            self._w_f_diag = self._variable("w_f_diag", [units], dt, self._initializer)
            self._w_i_diag = self._variable("w_i_diag", [units], dt, self._initializer)
            self._w_o_diag = self._variable("w_o_diag", [units], dt, self._initializer)
        if self._num_proj is not None:
            self._proj_kernel = self._variable("projection/kernel", [units, self._num_proj], dt,
                                               self._initializer)

    def _split_state(self, state: Any) -> tuple[Any, Any]:
        if self._state_is_tuple:
            return state
        return tuple(selection_ops.split(state, [self._num_units, self.output_size], axis=1))

    def call(self, inputs: Tensor, state: Any) -> tuple[Any, Any]:
        c_prev, m_prev = self._split_state(state)
        i, j, f, o = selection_ops.split(_linear([inputs, m_prev], self._kernel, self._bias), 4,
                                         axis=1)
        f = f + convert_to_tensor(self._forget_bias, dtype=f.dtype)
        if self._use_peepholes:
            i = i + self._w_i_diag * c_prev
            f = f + self._w_f_diag * c_prev
        c = math_ops.sigmoid(f) * c_prev + math_ops.sigmoid(i) * self._activation(j)
        if self._cell_clip is not None:
            c = composite_ops.clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            o = o + self._w_o_diag * c
        m = math_ops.sigmoid(o) * self._activation(c)
        if self._num_proj is not None:
            m = math_ops.matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = composite_ops.clip_by_value(m, -self._proj_clip, self._proj_clip)
        return m, self._join_state(c, m)


class GRUCell(_UnitsCell):
    """TF1's GRU: ``r, u = sigmoid([x, h] @ gates/kernel + gates/bias)`` (bias starts at 1.0),
    ``c = act([x, r * h] @ candidate/kernel + candidate/bias)``, ``h' = u * h + (1 - u) * c``."""

    def __init__(self, num_units: int, activation: Callable[[Any], Any] | None = None,
                 reuse: Any = None, kernel_initializer: Any = None, bias_initializer: Any = None,
                 name: str | None = None, dtype: Any = None) -> None:
        super().__init__(reuse=reuse, name=name, dtype=dtype)
        self._num_units = int(num_units)
        self._activation = activation or math_ops.tanh
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    def build(self, inputs: Tensor) -> None:
        depth, units, dt = _input_depth(inputs, self), self._num_units, inputs.dtype
        self._gate_kernel = self._variable("gates/kernel", [depth + units, 2 * units], dt,
                                           self._kernel_initializer)
        self._gate_bias = self._variable("gates/bias", [2 * units], dt,
                                         self._bias_initializer or Constant(1.0))
        self._candidate_kernel = self._variable("candidate/kernel", [depth + units, units], dt,
                                                self._kernel_initializer)
        self._candidate_bias = self._variable("candidate/bias", [units], dt,
                                              self._bias_initializer or Zeros())

    def call(self, inputs: Tensor, state: Any) -> tuple[Any, Any]:
        gates = math_ops.sigmoid(_linear([inputs, state], self._gate_kernel, self._gate_bias))
        r, u = selection_ops.split(gates, 2, axis=1)
        candidate = self._activation(
            _linear([inputs, r * state], self._candidate_kernel, self._candidate_bias))
        new_h = u * state + (1 - u) * candidate
        return new_h, new_h


class MultiRNNCell(RNNCell):
    """Cells stacked: cell i runs in scope "cell_<i>" and feeds its output to cell i + 1; the
    state is the tuple of the cells' states."""

    def __init__(self, cells: Sequence[RNNCell], state_is_tuple: bool = True) -> None:
        super().__init__()
        if not cells:
            raise ValueError("MultiRNNCell: must specify at least one cell")
        self._cells = list(cells)
        self._state_is_tuple = state_is_tuple

    @property
    def state_size(self) -> Any:
        sizes = tuple(cell.state_size for cell in self._cells)
        return sizes if self._state_is_tuple else sum(sum(flatten(s)) for s in sizes)

    @property
    def output_size(self) -> Any:
        return self._cells[-1].output_size

    @property
    def variables(self) -> list[Any]:
        return [v for cell in self._cells for v in cell.variables]

    trainable_variables = variables
    weights = variables

    def _cell_states(self, state: Any) -> list[Any]:
        if self._state_is_tuple:
            if not _is_sequence(state) or len(state) != len(self._cells):
                raise ValueError(f"MultiRNNCell: expected state to be a tuple of length "
                                 f"{len(self._cells)}, but received: {state!r}")
            return list(state)
        sizes = [sum(flatten(cell.state_size)) for cell in self._cells]
        return selection_ops.split(state, sizes, axis=1)

    def call(self, inputs: Tensor, state: Any) -> tuple[Any, Any]:
        current, new_states = inputs, []
        for i, (cell, cell_state) in enumerate(zip(self._cells, self._cell_states(state))):
            with variable_scope(f"cell_{i}"):
                current, new_state = cell(current, cell_state)
            new_states.append(new_state)
        if self._state_is_tuple:
            return current, tuple(new_states)
        return current, array_ops.concat(new_states, 1)


class _CellWrapper(RNNCell):
    """A cell around another: same sizes, variables and zero state; adds no variable scope,
    so the wrapped cell's variables keep their names (TF1's wrappers)."""

    def __init__(self, cell: RNNCell) -> None:
        super().__init__()
        assert_like_rnncell("cell", cell)
        self._cell = cell

    @property
    def state_size(self) -> Any:
        return self._cell.state_size

    @property
    def output_size(self) -> Any:
        return self._cell.output_size

    @property
    def variables(self) -> list[Any]:
        return self._cell.variables

    trainable_variables = variables
    weights = variables

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        return self._cell.zero_state(batch_size, dtype)


class ResidualWrapper(_CellWrapper):
    """The wrapped cell's output plus its input (``residual_fn(inputs, outputs)`` if given),
    leaf by leaf; the input must be shaped as the output."""

    def __init__(self, cell: RNNCell, residual_fn: Callable[[Any, Any], Any] | None = None) -> None:
        super().__init__(cell)
        self._residual_fn = residual_fn

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        outputs, new_state = self._cell(inputs, state, scope=scope)
        if self._residual_fn is not None:
            return self._residual_fn(inputs, outputs), new_state
        assert_same_structure(inputs, outputs)
        return map_structure(lambda x, y: convert_to_tensor(x) + y, inputs, outputs), new_state


class DeviceWrapper(_CellWrapper):
    """The wrapped cell's ops (and its zero state) placed on ``device``."""

    def __init__(self, cell: RNNCell, device: str) -> None:
        super().__init__(cell)
        self._device = device

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with get_default_graph().device(self._device):
            return self._cell.zero_state(batch_size, dtype)

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        with get_default_graph().device(self._device):
            return self._cell(inputs, state, scope=scope)


class DropoutWrapper(_CellWrapper):
    """Dropout on a cell's inputs, outputs and (the h part of an LSTM's) new state."""

    def __init__(self, cell: RNNCell, input_keep_prob: Any = 1.0, output_keep_prob: Any = 1.0,
                 state_keep_prob: Any = 1.0, variational_recurrent: bool = False,
                 input_size: Any = None, dtype: Any = None, seed: int | None = None,
                 dropout_state_filter_visitor: Any = None) -> None:
        super().__init__(cell)
        if variational_recurrent or dropout_state_filter_visitor is not None:
            raise NotImplementedError("DropoutWrapper: variational_recurrent and "
                                      "dropout_state_filter_visitor are not built in zmtf")
        self._input_keep_prob = input_keep_prob
        self._output_keep_prob = output_keep_prob
        self._state_keep_prob = state_keep_prob
        self._seed = seed

    def _dropout(self, value: Any, keep_prob: Any) -> Any:
        if isinstance(keep_prob, (int, float)) and float(keep_prob) == 1.0:
            return value
        return composite_ops.dropout(value, keep_prob=keep_prob, seed=self._seed)

    def _dropout_state(self, state: Any) -> Any:
        if isinstance(state, LSTMStateTuple):   # as TF1's default filter: never drop c
            return LSTMStateTuple(state.c, self._dropout(state.h, self._state_keep_prob))
        if _is_sequence(state):
            return type(state)(self._dropout_state(s) for s in state)
        return self._dropout(state, self._state_keep_prob)

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        output, new_state = self._cell(self._dropout(inputs, self._input_keep_prob), state,
                                       scope=scope)
        return (self._dropout(output, self._output_keep_prob), self._dropout_state(new_state))


__all__ = ["BasicLSTMCell", "BasicRNNCell", "DeviceWrapper", "DropoutWrapper", "GRUCell",
           "LSTMCell", "LSTMStateTuple", "MultiRNNCell", "RNNCell", "ResidualWrapper"]
