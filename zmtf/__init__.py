"""zmtf: the TensorFlow 1.x graph-and-cluster runtime, rebuilt over ZeroMQ.

``import zmtf as tf`` and write TF1 code. The TF1 surface lives in ``zmtf.tf1`` and loads on
first use (PEP 562), so ``import zmtf.wire.codec`` or ``python -m zmtf.server --help`` do not
pay for it. Importing zmtf starts no threads, opens no sockets and compiles no kernels.
"""

import importlib as _importlib
import os as _os
import sys as _sys

if "numpy" not in _sys.modules:  # OpenBLAS reads it once, when numpy loads it (see kernels/cpu/blas.py)
    _os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

#: packages whose ``__init__`` is their own public namespace (tf.keras, tf.estimator, ...)
_LIBRARIES = frozenset({"keras", "estimator", "contrib", "feature_column", "saved_model", "compat",
                        "distribute", "testing", "tf1", "python"})


#: names ``zmtf.framework.versions`` answers without loading the TF1 face (``zmtf.__version__``)
_VERSIONS = frozenset({"__version__", "VERSION", "GIT_VERSION", "COMPILER_VERSION", "ZMTF_VERSION"})


def __getattr__(name: str) -> object:
    """``tf.<name>``: a library package, or a name of the TF1 face (``zmtf.tf1``); cached."""
    if name in _LIBRARIES:
        value = _importlib.import_module(f"zmtf.{name}")
    elif name in _VERSIONS:
        value = getattr(_importlib.import_module("zmtf.framework.versions"), name)
    elif name.startswith("__") and name != "__all__":
        raise AttributeError(f"module 'zmtf' has no attribute {name!r}")
    else:
        # zmtf.tf1 binds its namespace modules (tf.nn, tf.train, ...) and raises the TF-like
        # AttributeError for a name zmtf lacks.
        value = getattr(_importlib.import_module("zmtf.tf1"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LIBRARIES | set(dir(_importlib.import_module("zmtf.tf1"))))
