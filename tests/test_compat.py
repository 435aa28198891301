"""tf.compat: ``import zmtf.compat.v1 as tf`` is zmtf, TF's byte/text helpers, and the TF 2.x
switches back to TF1 behaviour (no-ops) or to eager mode (refused)."""

import pathlib
import subprocess
import sys

import numpy as np
import pytest

import zmtf
import zmtf as tf


def test_a_tf2_compat_v1_script_runs_with_only_its_import_changed():
    script = ("import zmtf.compat.v1 as tf\n"
              "tf.disable_v2_behavior()\n"
              "x = tf.compat.v1.placeholder(tf.float32, [2])\n"
              "with tf.Session() as sess:\n"
              "    print(sess.run(x * 2, {x: [1, 2]}).tolist(), tf.executing_eagerly())\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[2.0, 4.0] False"


def test_compat_v1_is_zmtf_itself():
    import zmtf.compat.v1 as v1
    assert v1 is zmtf and tf.compat.v1 is zmtf


def test_there_is_no_v2_and_eager_mode_is_refused():
    with pytest.raises(AttributeError, match="tf.compat.v2 is not in zmtf"):
        tf.compat.v2
    with pytest.raises(ValueError, match="no eager mode"):
        tf.enable_eager_execution()
    with pytest.raises(ValueError, match="no eager mode"):
        tf.enable_v2_behavior()


def test_byte_and_text_helpers_behave_as_tf():
    assert tf.compat.as_bytes("héllo") == "héllo".encode()
    assert tf.compat.as_bytes(bytearray(b"ab")) == b"ab"
    assert tf.compat.as_text(b"\xc3\xa9") == "é" and tf.compat.as_str("x") == "x"
    assert tf.compat.as_str_any(3) == "3" and tf.compat.as_str_any(b"b") == "b"
    assert tf.compat.path_to_str(pathlib.Path("/tmp/x")) == "/tmp/x" and tf.compat.path_to_str(7) == 7
    with pytest.raises(TypeError, match="Expected binary or unicode string"):
        tf.compat.as_bytes(3)
    with pytest.raises(TypeError, match="Expected binary or unicode string"):
        tf.compat.as_text(None)
    assert isinstance(np.int64(1), tf.compat.integral_types)


def test_the_v1_switches_are_harmless():
    for switch in (tf.disable_v2_behavior, tf.disable_eager_execution, tf.disable_resource_variables,
                   tf.enable_resource_variables, tf.disable_control_flow_v2, tf.disable_tensor_equality):
        switch()
    assert tf.executing_eagerly() is False and tf.resource_variables_enabled() is False


def _fresh(script):
    """Runs ``script`` in a new interpreter (so zmtf.compat.v1 was never imported before) and
    returns its stdout; the run must succeed."""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "RecursionError" not in out.stderr
    return out.stdout.strip()


def test_tf_compat_v1_as_an_attribute_is_zmtf_before_any_import_of_the_submodule():
    # Reading tf.compat.v1 first used to recurse in zmtf.compat.__getattr__.
    assert _fresh("import sys\n"
                  "import zmtf as tf\n"
                  "assert 'zmtf.compat.v1' not in sys.modules\n"
                  "v1 = tf.compat.v1\n"
                  "x = tf.compat.v1.placeholder(tf.float32, [2])\n"
                  "with tf.compat.v1.Session() as sess:\n"
                  "    r = sess.run(x + 1, {x: [1, 2]}).tolist()\n"
                  "import zmtf.compat.v1 as again\n"
                  "print(v1 is tf, again is tf, tf.compat.v1 is tf, r)\n") == "True True True [2.0, 3.0]"


def test_tf_compat_v1_is_zmtf_after_importing_the_submodule():
    assert _fresh("import zmtf.compat.v1 as v1\n"
                  "import zmtf as tf\n"
                  "print(v1 is tf, tf.compat.v1 is tf, v1.compat.v1 is tf)\n") == "True True True"


def test_from_zmtf_compat_import_v1_in_a_fresh_interpreter():
    assert _fresh("from zmtf.compat import v1\n"
                  "import zmtf\n"
                  "print(v1 is zmtf)\n") == "True"
    assert _fresh("import zmtf as tf\n"
                  "from zmtf.compat import v1\n"
                  "print(v1 is tf, tf.compat.v1 is tf)\n") == "True True"


def test_v2_and_unknown_names_fail_with_a_clear_attribute_error_in_a_fresh_interpreter():
    assert _fresh("import zmtf as tf\n"
                  "for name in ('v2', 'nonexistent'):\n"
                  "    try:\n"
                  "        getattr(tf.compat, name)\n"
                  "    except AttributeError as e:\n"
                  "        print(e)\n"
                  "print(hasattr(tf.compat, 'v2'), hasattr(tf.compat, 'nonexistent'))\n"
                  "print(tf.compat.as_bytes('a'), tf.compat.as_text(b'b'))\n").splitlines() == [
        "tf.compat.v2 is not in zmtf: zmtf is TensorFlow 1.x's graph API "
        "(tf.compat.v1, which is zmtf itself)",
        "module 'zmtf.compat' has no attribute 'nonexistent'",
        "False False",
        "b'a' b",
    ]
