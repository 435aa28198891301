"""Functions the graph core calls but that live in the layers above it.

framework/ is the bottom of the import graph: the op builders (zmtf/ops) and TensorFlow interop
(zmtf/interop) import it, so it may not import them back (STYLE rule 20: a circle is a missing
registry). Each module that owns one of these functions registers it here when it is imported;
the core looks it up when it runs. Every entry point (``zmtf.tf1``, the local session, the
worker of ``python -m zmtf.server``) has imported the owners by then.
"""

from __future__ import annotations

from typing import Any, Callable

#: name -> the module that registers it (named in the error when it has not been imported)
OWNERS = {
    "convert_to_tensor": "zmtf.ops.constant_op",
    "scatter_rows": "zmtf.ops.selection_ops",
    "load_all_op_defs": "zmtf.ops",
    "graph_to_graph_def": "zmtf.interop.graph_def_io",
}

_REGISTERED: dict[str, Callable[..., Any]] = {}


def register(name: str, function: Callable[..., Any]) -> None:
    """Called by the owning module at import: ``register("scatter_rows", scatter_rows)``."""
    if name not in OWNERS:
        raise KeyError(f"{name!r} is not a late-bound function of the graph core ({sorted(OWNERS)})")
    _REGISTERED[name] = function


def lookup(name: str) -> Callable[..., Any]:
    """The registered function; a RuntimeError naming the module to import when there is none."""
    try:
        return _REGISTERED[name]
    except KeyError:
        raise RuntimeError(f"the graph core needs {name}, which {OWNERS[name]} registers: "
                           f"import {OWNERS[name]} (zmtf and zmtf.tf1 do)") from None


__all__ = ["OWNERS", "lookup", "register"]
