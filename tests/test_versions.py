"""tf.__version__ is the TF1 release zmtf follows (scripts compare it); zmtf's own version is
ZMTF_VERSION, pyproject's; asking for either does not load the TF1 face."""

import pathlib
import subprocess
import sys
import tomllib

import zmtf as tf

PYPROJECT = pathlib.Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_tf_version_is_the_tf1_release_zmtf_follows():
    assert tf.__version__ == tf.VERSION == tf.version.VERSION == tf.compat.v1.__version__ == "1.15.5"
    assert tf.__version__.startswith("1.")   # what TF1 scripts check before choosing an API
    assert tf.GIT_VERSION == f"v1.15.5-zmtf-{tf.ZMTF_VERSION}"


def test_zmtf_version_is_the_package_version():
    assert tf.ZMTF_VERSION == tomllib.loads(PYPROJECT.read_text())["project"]["version"]


def test_versions_answer_without_loading_the_tf1_face():
    code = ("import sys, zmtf; print(zmtf.__version__, zmtf.ZMTF_VERSION); "
            "print(sorted(m for m in ('zmtf.tf1', 'numpy', 'numba') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"1.15.5 {tf.ZMTF_VERSION}", "[]"]
