"""tf.map_fn, tf.scan, tf.foldl and tf.foldr: loops over the first axis of tensors, as one
tf.while_loop each. The per-element results are the loop's history (while_ops.py), so
nothing is accumulated by hand and the gradient flows back through the loop.

``map_fn``'s result travels as a loop variable whose shape is left open (its initial
value is a placeholder zero of the output dtype that no result ever includes), so ``fn``
may return any shape, the same for every element. ``scan`` without an initializer starts
from the first element and returns it first, as TF does.
"""

from __future__ import annotations

from typing import Any, Callable

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.ops import array_ops, math_ops
from zmtf.ops.cond_ops import _flatten, cond
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.image_ops import reverse as reverse_along
from zmtf.ops.selection_ops import gather
from zmtf.ops.while_ops import build_loop, loop_history
from zmtf.framework.tensor_shape import TensorShape


def _elements(elems: Any, caller: str) -> tuple[list[Tensor], Callable[[list[Any]], Any], Tensor]:
    flat, pack = _flatten(elems)
    if not flat:
        raise ValueError(f"{caller}: elems must hold at least one tensor")
    flat = [convert_to_tensor(e) for e in flat]
    for e in flat:
        if e.shape.ndims == 0:
            raise ValueError(f"{caller}: elems must have a first axis to loop over, got the scalar "
                             f"{e.name}")
    return flat, pack, array_ops.shape(flat[0])[0]


def _at(flat: list[Tensor], index: Any) -> list[Tensor]:
    return [gather(e, index) for e in flat]


def map_fn(fn: Callable[[Any], Any], elems: Any, dtype: Any = None, parallel_iterations: Any = None,
           back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True,
           name: str | None = None) -> Any:
    """``[fn(elems[0]), fn(elems[1]), ...]`` stacked; ``dtype`` (a dtype or a nest of them)
    when fn's output structure or dtypes differ from elems'."""
    graph = get_default_graph()
    with graph.name_scope(name or "map"):
        flat, pack, n = _elements(elems, "map_fn")
        out_dtypes, pack_out = _flatten(dtype) if dtype is not None else ([e.dtype for e in flat], pack)
        starts = [array_ops.zeros([], dtypes.as_dtype(d)) for d in out_dtypes]

        def body(i: Tensor, *results: Any) -> tuple[Any, ...]:
            produced, _ = _flatten(fn(pack(_at(flat, i))))
            if len(produced) != len(starts):
                raise ValueError(f"map_fn: fn returned {len(produced)} tensors, and dtype (or "
                                 f"elems) has {len(starts)}; pass dtype= with fn's output structure")
            return (i + 1, *produced)

        loop, _ = build_loop(lambda i, *_: i < n, body, [0, *starts],
                             shape_invariants=[TensorShape([])] + [TensorShape(None)] * len(starts),
                             name="while")
        body_outputs = loop._while_parts[2]
        stacked = []
        for k in range(len(starts)):
            history = loop_history(loop, 1 + k)
            produced = body_outputs[1 + k].shape
            if produced.ndims is not None:
                history.set_shape([flat[0].shape.dims[0] if flat[0].shape.ndims else None]
                                  + list(produced.dims))
            stacked.append(history if back_prop else array_ops.stop_gradient(history))
        return pack_out(stacked)


def _fold(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any, reverse: bool, caller: str,
          name: str) -> tuple[Any, Any, Callable[[list[Any]], Any], int]:
    """The loop of scan/foldl/foldr: returns (the While op, initial accumulator nest, its
    packer, number of accumulator leaves)."""
    flat, pack_elems, n = _elements(elems, caller)

    def index(i: Tensor) -> Tensor:
        return n - 1 - i if reverse else i

    if initializer is None:
        acc0, pack_acc = _at(flat, index(convert_to_tensor(0))), pack_elems
    else:
        acc0, pack_acc = _flatten(initializer)
        acc0 = [convert_to_tensor(a) for a in acc0]

    def body(i: Tensor, *acc: Any) -> tuple[Any, ...]:
        x = _at(flat, index(i))

        def step() -> Any:
            out, _ = _flatten(fn(pack_acc(list(acc)), pack_elems(x)))
            if len(out) != len(acc):
                raise ValueError(f"{caller}: fn returned {len(out)} tensors for an accumulator of "
                                 f"{len(acc)}; it must return the accumulator's structure")
            return out

        if initializer is not None:
            return (i + 1, *step())
        # no initializer: the first element is the first accumulator, returned as it is
        return (i + 1, *cond(math_ops.equal(i, 0), lambda: list(x), step))

    loop, _ = build_loop(lambda i, *_: i < n, body, [0, *acc0], name="while")
    return loop, acc0, pack_acc, len(acc0)


def scan(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None,
         parallel_iterations: Any = None, back_prop: bool = True, swap_memory: bool = False,
         infer_shape: bool = True, reverse: bool = False, name: str | None = None) -> Any:
    """Every accumulator of ``acc = fn(acc, x)`` over elems, stacked (TF1's tf.scan)."""
    with get_default_graph().name_scope(name or "scan"):
        loop, acc0, pack_acc, count = _fold(fn, elems, initializer, reverse, "scan", "scan")
        steps = convert_to_tensor(_flatten(elems)[0][0]).shape
        stacked = []
        for k in range(count):
            history = loop_history(loop, 1 + k)
            if acc0[k].shape.ndims is not None:
                history.set_shape([steps.dims[0] if steps.ndims else None] + list(acc0[k].shape.dims))
            stacked.append(history)
        if reverse:   # TF: results in the order of elems
            stacked = [reverse_along(s, [0]) for s in stacked]
        if not back_prop:
            stacked = [array_ops.stop_gradient(s) for s in stacked]
        return pack_acc(stacked)


def _folded(caller: str, reverse: bool) -> Callable[..., Any]:
    def fold(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None,
             parallel_iterations: Any = None, back_prop: bool = True, swap_memory: bool = False,
             name: str | None = None) -> Any:
        with get_default_graph().name_scope(name or caller):
            loop, _, pack_acc, count = _fold(fn, elems, initializer, reverse, caller, caller)
            finals = list(loop.outputs[1:1 + count])
            return pack_acc(finals if back_prop else [array_ops.stop_gradient(f) for f in finals])

    fold.__name__ = caller
    fold.__doc__ = (f"The last accumulator of ``acc = fn(acc, x)`` over elems, "
                    f"{'last to first' if reverse else 'first to last'} (TF1's tf.{caller}).")
    return fold


foldl = _folded("foldl", reverse=False)
foldr = _folded("foldr", reverse=True)


__all__ = ["foldl", "foldr", "map_fn", "scan"]
