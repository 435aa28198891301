"""The kernel registry, and the rules of the kernels package (imports, lazy compilation)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import zmtf.kernels as kernels
from zmtf.framework.errors import AlreadyExistsError, NotFoundError
from zmtf.kernels import registry

KERNELS_DIR = Path(kernels.__file__).parent


@pytest.fixture
def empty_registry(monkeypatch):
    """A fresh table for tests that register kernels; the real one is left untouched."""
    monkeypatch.setattr(registry, "_KERNELS", {})


def _kernel(ctx, inputs, attrs):
    return []


def test_register_lookup_by_dtype(empty_registry):
    registry.register("Foo", dtypes=["float32", "int32"])(_kernel)
    assert registry.lookup("Foo", "CPU", "float32") is _kernel
    assert registry.supports("Foo", "CPU", "int32")
    assert not registry.supports("Foo", "CPU", "float64")
    assert not registry.supports("Foo", "GPU", "float32")


def test_register_accepts_dtype_objects(empty_registry):
    from zmtf.framework import dtypes

    registry.register("Foo", "GPU", dtypes=[dtypes.float32])(_kernel)
    assert registry.supports("Foo", "GPU", "float32")


def test_any_dtype_registration(empty_registry):
    registry.register("Bar")(_kernel)
    assert registry.lookup("Bar", "CPU", "bool") is _kernel
    assert registry.lookup("Bar", "CPU", None) is _kernel


def test_exact_dtype_wins_over_any(empty_registry):
    def special(ctx, inputs, attrs):
        return []

    registry.register("Baz")(_kernel)
    registry.register("Baz", dtypes=["int32"])(special)
    assert registry.lookup("Baz", "CPU", "int32") is special
    assert registry.lookup("Baz", "CPU", "float32") is _kernel


def test_registered_device_types(empty_registry):
    registry.register("Foo", "CPU", ["float32"])(_kernel)
    registry.register("Foo", "GPU", ["float32"])(_kernel)
    assert registry.registered_device_types("Foo") == {"CPU", "GPU"}
    assert registry.registered_device_types("Nope") == set()


def test_double_registration_is_an_error(empty_registry):
    registry.register("Foo", dtypes=["float32"])(_kernel)
    with pytest.raises(AlreadyExistsError, match="Foo on CPU with dtype float32"):
        registry.register("Foo", dtypes=["float32"])(_kernel)


def test_not_found_lists_registered_dtypes(empty_registry):
    registry.register("Foo", dtypes=["float64", "float32"])(_kernel)
    message = (
        "No kernel registered for op 'Foo' on device type 'CPU' with dtype int32. "
        "Registered dtypes for Foo on CPU: float32, float64"
    )
    with pytest.raises(NotFoundError, match=message):
        registry.lookup("Foo", "CPU", "int32")


def test_not_found_names_other_devices(empty_registry):
    registry.register("Foo", "CPU", ["float32"])(_kernel)
    with pytest.raises(NotFoundError, match="it is registered on: CPU"):
        registry.lookup("Foo", "GPU", "float32")
    with pytest.raises(NotFoundError, match="is the op type spelled right"):
        registry.lookup("Fooo", "CPU", "float32")


SPEC_OPS = """Add AddV2 Sub Mul RealDiv FloorDiv FloorMod Maximum Minimum Pow SquaredDifference
Equal NotEqual Less LessEqual Greater GreaterEqual LogicalAnd LogicalOr LogicalNot Neg Abs
Relu Relu6 Sigmoid Tanh Exp Log Square Sqrt Rsqrt Reciprocal Sign Softplus ReluGrad
SigmoidGrad TanhGrad SumToShape BroadcastTo AddN MatMul Sum Mean Max Min Prod All Any ArgMax
ArgMin Identity Reshape Shape Size Rank Transpose Cast Fill ZerosLike OnesLike ExpandDims
Squeeze ConcatV2 Pack Const Softmax LogSoftmax SoftmaxCrossEntropyWithLogits
SparseSoftmaxCrossEntropyWithLogits OneHot BiasAdd RandomStandardNormal RandomUniform
TruncatedNormal Variable Assign AssignAdd AssignSub IsVariableInitialized ApplyGradientDescent
ApplyMomentum ApplyAdam NoOp Conv2D Conv2DBackpropInput Conv2DBackpropFilter MaxPool MaxPoolGrad
AvgPool AvgPoolGrad TopKV2 InTopKV2 ApplyAdadelta SparseApplyAdadelta ApplyFtrl ApplyFtrlV2
SparseApplyFtrl SparseApplyFtrlV2""".split()


@pytest.mark.parametrize("op_type", SPEC_OPS)
def test_every_op_has_a_cpu_kernel(op_type):
    assert "CPU" in kernels.registered_device_types(op_type)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted(KERNELS_DIR.rglob("*.py")), ids=lambda p: p.name)
def test_kernels_import_only_what_the_layering_allows(path):
    # summary_proto, images and wav are bytes codecs (Summary protobufs, PNG and JPEG over Pillow, WAV), shared with FileWriter,
    # and example_proto (tf.train.Example) with the tf.train.Example classes;
    # window_geometry is TF's SAME/VALID integer arithmetic, shared with conv shape inference;
    # py_funcs is the table of tf.py_func functions (token -> callable) the PyFunc kernel reads;
    # memory_budget is the account a server's step charges before a big output is allocated;
    # handed_over is the table of arrays Saver.restore gives its Assigns to keep (no 2nd copy)
    allowed_zmtf = ("zmtf.framework.errors", "zmtf.framework.dtypes", "zmtf.formats.summary_proto",
                    "zmtf.formats.example_proto", "zmtf.formats.images", "zmtf.framework.window_geometry",
                    "zmtf.framework.py_funcs", "zmtf.formats.wav", "zmtf.framework.memory_budget",
                    "zmtf.framework.handed_over", "zmtf.kernels")
    for name in _imports(path):
        top = name.split(".")[0]
        if top == "zmtf":
            assert name.startswith(allowed_zmtf), f"{path.name} imports {name}"
        else:
            allowed = top in sys.stdlib_module_names or top in ("numpy", "numba")
            assert allowed and top not in ("asyncio", "threading"), f"{path.name} imports {name}"


def test_registry_module_does_not_import_numba():
    assert not any(name.split(".")[0] == "numba" for name in _imports(KERNELS_DIR / "registry.py"))


def test_import_compiles_nothing():
    code = (
        "import sys, zmtf.kernels\n"
        "from numba.core.registry import CPUDispatcher\n"
        "modules = [m for k, m in list(sys.modules.items()) if k.startswith('zmtf.kernels')]\n"
        "jitted = {n: f for m in modules for n, f in vars(m).items()\n"
        "          if isinstance(f, CPUDispatcher)}\n"
        "assert len(jitted) > 20, sorted(jitted)\n"
        "assert not [n for n, f in jitted.items() if f.signatures], 'compiled at import'\n"
    )
    subprocess.run([sys.executable, "-W", "error", "-c", code], check=True, timeout=120)
