"""``tf.custom_gradient`` (graph mode), built as TF builds it: the decorated function's results
and inputs pass through one IdentityN op whose gradient, registered under a fresh name and
chosen by ``gradient_override_map``, calls the user's ``grad_fn`` on the results' gradients
and hands them to the inputs. Nothing flows back through the ops inside ``f``."""

from __future__ import annotations

import functools
import itertools
from typing import Any, Callable

from zmtf.framework.gradient_registry import RegisterGradient
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor

STRING_INPUT_OPS.add("IdentityN")
_NAMES = itertools.count()


@op_def("IdentityN")
def _identity_n_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(t.dtype, t.shape) for t in inputs]


def custom_gradient(f: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: ``f(*xs) -> (y, grad_fn)`` with ``grad_fn(dy) -> dx`` (one per x, or a
    list); ``y`` may be a Tensor or a list of Tensors (then grad_fn gets one dy per y)."""

    @functools.wraps(f)
    def decorated(*args: Any) -> Any:
        xs = [convert_to_tensor(x) for x in args]
        result, grad_fn = f(*xs)
        single = not isinstance(result, (list, tuple))
        ys = [convert_to_tensor(y) for y in ([result] if single else result)]
        name = f"CustomGradient-{next(_NAMES)}"

        @RegisterGradient(name)
        def _grad(op: Operation, *grads: Any) -> list:
            dxs = grad_fn(*grads[:len(ys)])
            dxs = list(dxs) if isinstance(dxs, (list, tuple)) else [dxs]
            if len(dxs) != len(xs):
                raise ValueError(f"custom_gradient: the gradient function of {f.__name__} "
                                 f"returned {len(dxs)} gradients for {len(xs)} inputs")
            return [None] * len(ys) + dxs

        with get_default_graph().gradient_override_map({"IdentityN": name}):
            outputs = apply_op("IdentityN", ys + xs, name="IdentityN").outputs[:len(ys)]
        return outputs[0] if single else list(outputs)

    return decorated


__all__ = ["custom_gradient"]
