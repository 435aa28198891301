"""The shape of the house (STYLE.md part 2; issue 22 item 8), read from the source with ``ast``.

Every file of zmtf/ sits in a package (or top-level module) named in ALLOWED; imports point down
the package DAG that ALLOWED writes; no two files import each other, directly or around a circle
(STYLE rule 20: a circle is a missing registry); zmq stays in the transport layer and the CLIs;
no package imports another package's ``_private`` names; and the low layers load without numba,
zmq or the TF1 face. Every import counts, at module level or inside a function, except those
under ``if TYPE_CHECKING:`` (they never run).
"""

from __future__ import annotations

import ast
import functools
import pathlib
import subprocess
import sys
from typing import NamedTuple

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "zmtf"

#: third-party and stdlib modules whose use is a layering decision (what a package may hold:
#: an event loop, threads, compiled kernels, a wire codec); ``pickle`` is in no package. zmq has
#: a rule per file (ZMQ_HOMES below).
WATCHED = {"asyncio", "concurrent", "threading", "numba", "llvmlite", "msgpack", "pickle"}


class Rules(NamedTuple):
    imports: frozenset[str]   # the zmtf packages (or top-level modules) it may import
    uses: frozenset[str]      # the WATCHED modules it may import; the rest it must never import


def rules(imports: str = "", uses: str = "") -> Rules:
    return Rules(frozenset(imports.split()), frozenset(uses.split()))


# package (a folder of zmtf/) or top-level module (``__init__`` is the lazy face ``zmtf``) -> Rules.
# From the bottom up; a package may import only packages written above it (test_table_is_a_dag).
ALLOWED = {
    # the graph core: Graph, Operation, Tensor, dtypes, shapes, the op and gradient tables
    "framework": rules("", "threading"),               # threading.local: default graph stacks
    "formats": rules("framework"),                     # protobuf, text protos, TFRecord, PNG, WAV
    "ops": rules("framework formats"),                 # op builders (TF's python/ops)
    "interop": rules("framework formats ops"),         # GraphDef / MetaGraph import and export
    "platform": rules("framework"),                    # tf.app, tf.logging, tf.gfile
    "placement": rules("framework ops"),               # placer, partition, plan
    "kernels": rules("framework formats", "numba"),    # Numba kernels and their registry
    "runtime": rules("framework formats placement kernels", "concurrent threading numba"),
    "training": rules("framework formats ops interop platform", "threading"),
    "wire": rules("framework", "msgpack"),             # messages and their codec: no sockets
    "distributed": rules("framework formats placement kernels runtime wire",
                         "asyncio concurrent threading"),       # zmq: the files in ZMQ_HOMES
    "client": rules("framework formats ops interop placement kernels runtime wire distributed "
                    "training", "asyncio concurrent threading"),
    # libraries built on the runtime; none imports the TF1 face (zmtf.tf1) or another's face
    "saved_model": rules("framework formats ops interop training"),
    "feature_column": rules("framework ops platform training"),
    "distribute": rules("framework client"),
    "keras": rules("framework formats ops training client"),
    "estimator": rules("framework formats ops training client distributed saved_model"),
    "contrib": rules("framework formats ops training distribute"),
    "testing": rules("framework formats ops training runtime distributed client", "threading asyncio"),
    # the TF1 face. ``zmtf`` (__init__) imports no module by statement: PEP 562 loads zmtf.tf1
    # or a library on first use, by name. compat.v1 *is* the module ``zmtf``; tf1 holds the
    # public namespaces (tf.compat among them).
    "__init__": rules(),
    "compat": rules("__init__"),
    "tf1": rules("framework formats ops interop platform runtime training distributed client "
                 "saved_model feature_column distribute keras estimator contrib testing compat"),
    # the command lines
    "server": rules("framework formats distributed platform"),
    "keys": rules("framework distributed platform"),
    "status": rules("framework formats distributed platform"),
    "devices": rules("framework runtime distributed platform"),
    # TF1's tensorflow.python.client paths (timeline, device_lib)
    "python": rules("framework formats training runtime"),
}

#: files of distributed/ that open sockets (the transport layer); the CLIs server and keys too
ZMQ_HOMES = {"sockets.py", "reactor.py", "listener.py", "channel.py", "blocking.py", "inproc.py",
             "security.py", "server.py"}

#: import circles that remain (sorted module names); it may only shrink, and is empty
CIRCLES_ALLOWED: list[list[str]] = []

#: ``importlib.import_module`` with a literal zmtf name: allowed only where a plain import cannot
#: be written (anywhere else it hides an edge from the circle check)
IMPORT_MODULE_HOMES = {
    "__init__.py",          # the lazy face: imports the namespace asked for, on first use
    "compat/__init__.py",   # compat.v1 replaces itself by zmtf; ``from zmtf.compat import v1``
                            # would ask hasattr(zmtf.compat, "v1") first and recurse
}


# ---- reading the source ---------------------------------------------------------------------
class Import(NamedTuple):
    line: int
    module: str                  # as written, absolute (``zmtf.ops.math_ops``, ``numpy``)
    names: tuple[str, ...]       # the names of ``from module import names``; () for ``import``


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST):
    """ast.walk, minus the bodies of ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child):
            yield from (n for stmt in child.orelse for n in _walk_self(stmt))
            continue
        yield child
        yield from _walk(child)


def _walk_self(node: ast.AST):
    yield node
    yield from _walk(node)


@functools.lru_cache(maxsize=None)
def _tree(path: pathlib.Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


@functools.lru_cache(maxsize=None)
def imports_of(path: pathlib.Path) -> tuple[Import, ...]:
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = []
    for node in _walk(_tree(path)):
        if isinstance(node, ast.Import):
            found += [Import(node.lineno, alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.append(Import(node.lineno, module, tuple(a.name for a in node.names)))
    return tuple(found)


FILES = sorted(ROOT.rglob("*.py"))
MODULES = {_module_name(path): path for path in FILES}


def rel(path: pathlib.Path) -> str:
    return str(path.relative_to(ROOT))


def package_of(module: str) -> str:
    """``zmtf.ops.math_ops`` -> ``ops``; ``zmtf.server`` -> ``server``; ``zmtf`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _resolve(name: str) -> str | None:
    parts = name.split(".")
    while parts and ".".join(parts) not in MODULES:
        parts.pop()
    return ".".join(parts) or None


def targets(imp: Import) -> set[str]:
    """The zmtf modules an import loads: ``from zmtf.ops import math_ops`` -> zmtf.ops.math_ops."""
    if not (imp.module == "zmtf" or imp.module.startswith("zmtf.")):
        return set()
    found = set()
    for name in imp.names or ("",):
        module = f"{imp.module}.{name}" if name not in ("", "*") else imp.module
        found.add(module if module in MODULES else _resolve(imp.module))
    return found - {None}


@functools.lru_cache(maxsize=None)
def import_graph() -> dict[str, set[str]]:
    """module -> the zmtf modules it imports (a package's ``__init__`` counts only when named)."""
    return {module: set().union(*(targets(imp) for imp in imports_of(path))) - {module}
            for module, path in MODULES.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def _ids(path: pathlib.Path) -> str:
    return rel(path)


# ---- the table ------------------------------------------------------------------------------
@pytest.mark.parametrize("path", FILES, ids=_ids)
def test_every_file_sits_in_a_named_package(path):
    assert package_of(_module_name(path)) in ALLOWED, (
        f"{rel(path)}: its package {package_of(_module_name(path))!r} is not in ALLOWED of "
        f"tests/test_layering.py; add it there with what it may import (or move the file)")


def test_table_names_only_real_packages_and_is_a_dag():
    present = {package_of(module) for module in MODULES}
    assert set(ALLOWED) == present, f"ALLOWED names {set(ALLOWED) - present} that zmtf/ lacks"
    placed: list[str] = []
    for package, rule in ALLOWED.items():   # written from the bottom up
        later = rule.imports - set(placed) - {package}
        assert not later, (f"ALLOWED[{package!r}] may import {sorted(later)}, which are not "
                           f"written above it: the package graph would have a circle")
        assert rule.uses <= WATCHED, f"ALLOWED[{package!r}].uses {rule.uses - WATCHED} unwatched"
        placed.append(package)


# ---- imports point down ---------------------------------------------------------------------
@pytest.mark.parametrize("path", FILES, ids=_ids)
def test_imports_point_down(path):
    package = package_of(_module_name(path))
    rule = ALLOWED[package]
    for imp in imports_of(path):
        for target in targets(imp):
            other = package_of(target)
            assert other == package or other in rule.imports, (
                f"{rel(path)}:{imp.line} imports {target}: {package} may import only "
                f"{sorted(rule.imports)}. Import the implementation module below it instead, or "
                f"let the lower module keep a registry the higher one fills (STYLE rule 20)")


@pytest.mark.parametrize("path", FILES, ids=_ids)
def test_third_party_modules_stay_in_their_layers(path):
    package = package_of(_module_name(path))
    for imp in imports_of(path):
        top = imp.module.split(".")[0]
        if top not in WATCHED:
            continue
        assert top in ALLOWED[package].uses, (
            f"{rel(path)}:{imp.line} imports {imp.module}, which {package} must not use "
            f"(it may use {sorted(ALLOWED[package].uses) or 'none'} of {sorted(WATCHED)})")


@pytest.mark.parametrize("path", FILES, ids=_ids)
def test_zmq_only_in_the_transport_layer_and_the_clis(path):
    uses_zmq = any(imp.module.split(".")[0] == "zmq" for imp in imports_of(path))
    home = (rel(path).startswith("distributed/") and path.name in ZMQ_HOMES) or \
        rel(path) in ("server.py", "keys.py")
    assert home or not uses_zmq, (
        f"{rel(path)} imports zmq: sockets live in the files of distributed/ named in ZMQ_HOMES "
        f"(the transport layer); call the channel there instead")


@pytest.mark.parametrize("path", FILES, ids=_ids)
def test_no_private_names_of_another_package(path):
    package = package_of(_module_name(path))
    for imp in imports_of(path):
        if not imp.module.startswith("zmtf.") or package_of(imp.module) == package:
            continue
        private = [name for name in (*imp.module.split(".")[1:], *imp.names)
                   if name.startswith("_") and not name.startswith("__")]
        assert not private, (
            f"{rel(path)}:{imp.line} imports {private} from {imp.module}, private to "
            f"{package_of(imp.module)}: give it a public name there (without the underscore)")


# ---- no circles -----------------------------------------------------------------------------
def test_no_import_circle_outside_the_allowlist():
    new = [c for c in circles(import_graph()) if c not in CIRCLES_ALLOWED]
    assert not new, (
        "import circles (every module imports the next, module level or in a function): "
        + "; ".join(" <-> ".join(c) for c in new)
        + ". Cut each: a registry the lower module keeps and the higher fills when imported "
          "(STYLE rule 20), or move the shared piece down into its own module")


@pytest.mark.parametrize("circle", CIRCLES_ALLOWED, ids=lambda c: c[0])
def test_allowlisted_circle_still_exists_exactly(circle):
    assert circle in circles(import_graph()), (
        f"the allowlisted circle {circle} changed or is gone: shrink CIRCLES_ALLOWED to match")


def test_allowlist_holds_at_most_one_circle():
    assert len(CIRCLES_ALLOWED) <= 1


def test_circle_finder_finds_circles():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("path", FILES, ids=_ids)
def test_no_import_module_with_a_literal_zmtf_name(path):
    """``importlib.import_module("zmtf.x")`` is an import the circle check cannot see."""
    if rel(path) in IMPORT_MODULE_HOMES:
        return
    for node in _walk(_tree(path)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) \
                in ("import_module", "__import__") and node.args:
            first = node.args[0]
            literal = first.value if isinstance(first, ast.Constant) else \
                first.values[0].value if isinstance(first, ast.JoinedStr) and first.values and \
                isinstance(first.values[0], ast.Constant) else ""
            assert not str(literal).startswith("zmtf"), (
                f"{rel(path)}:{node.lineno} imports {literal!r} by name: write a plain import (if "
                f"it makes a circle, cut the circle with a registry) or justify it in "
                f"IMPORT_MODULE_HOMES")


# ---- what importing loads -------------------------------------------------------------------
def _loaded_after(statement: str) -> set[str]:
    code = (f"import sys; {statement}; "
            "print(' '.join(m for m in sys.modules if m.split('.')[0] in "
            "('numba', 'zmq', 'llvmlite') or m == 'zmtf.tf1' or m.startswith('zmtf.tf1.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


@pytest.mark.parametrize("statement", ["import zmtf", "import zmtf.framework.graph",
                                       "import zmtf.wire.codec"])
def test_low_layers_load_neither_numba_nor_zmq_nor_the_face(statement):
    loaded = _loaded_after(statement)
    assert not loaded, (f"`{statement}` loads {sorted(loaded)}: an import above its layer "
                        f"(find it with python -X importtime)")


def test_import_zmtf_starts_no_threads():
    code = ("import threading; import zmtf as tf; tf.Session; "
            "assert threading.active_count() == 1, threading.enumerate(); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_the_tf1_face_loads_neither_pytest_nor_pytest_asyncio():
    """tf.test loads zmtf.testing, the pytest plugin: its fixture module (which imports
    pytest-asyncio, and so pytest: ~0.1 s of every process's start) is loaded by pytest only."""
    code = ("import sys; import zmtf as tf; tf.Session; tf.test.TestCase; "
            "tf.test.compute_gradient; "
            "print(' '.join(m for m in sys.modules if m.split('.')[0] in "
            "('pytest', '_pytest', 'pytest_asyncio')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [], out.stdout
