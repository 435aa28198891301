"""``tf.test.TestCase``: TF1's unittest base class, so model tests move with their models.

As TF's: every test starts on a fresh default graph; ``test_session()`` /
``cached_session()`` give one session per test (closed in tearDown) that is the default
session, with ops pinned to the CPU unless ``use_gpu``; ``session()`` gives a new one;
``evaluate`` runs tensors in the default session. The assertions take nested
structures (dicts, lists, tuples, namedtuples) of arrays or fetched values.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import tempfile
import threading
import unittest
from typing import Any, Callable, Iterator

import numpy as np

from zmtf.client.session import Session, drop_interactive_sessions, get_default_session
from zmtf.framework import dtypes
from zmtf.framework.errors import OpError
from zmtf.framework.graph import get_default_graph, graph_stack, reset_default_graph

#: np.random and random are seeded with this at the start of each test (TF's default graph seed)
DEFAULT_SEED = 87654321


class _CheckedThread:
    """A thread whose exception fails the test when it is joined (TF's ``checkedThread``)."""

    def __init__(self, testcase: unittest.TestCase, target: Callable[..., Any], args: tuple = (),
                 kwargs: dict | None = None) -> None:
        self._testcase = testcase
        self._target, self._args, self._kwargs = target, args, kwargs or {}
        self._thread = threading.Thread(target=self._protected_run, daemon=True)
        self._exception: BaseException | None = None
        self._is_thread_joined = False

    def _protected_run(self) -> None:
        try:
            self._target(*self._args, **self._kwargs)
        except Exception as error:  # noqa: BLE001 - re-raised in the test's thread by join()
            self._exception = error

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)
        self._is_thread_joined = True
        if self._exception is not None:
            self._testcase.fail(f"Error in checkedThread: {self._exception!r}")

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def check_termination(self) -> None:
        if self._is_thread_joined and self.is_alive():
            self._testcase.fail("A checked thread was not joined: it is still running")


class TestCase(unittest.TestCase):
    """Base class for tests of zmtf graphs (``tf.test.TestCase``)."""

    def setUp(self) -> None:
        super().setUp()
        # as TF1's: a test that failed inside `with g.as_default()` or left an
        # InteractiveSession open must not break the tests after it
        graph_stack().clear()
        drop_interactive_sessions()
        reset_default_graph()
        np.random.seed(DEFAULT_SEED)
        random.seed(DEFAULT_SEED)
        self._cached_session: Session | None = None
        self._threads: list[_CheckedThread] = []
        self._tempdir: str | None = None

    def tearDown(self) -> None:
        for thread in self._threads:
            thread.check_termination()
        if self._cached_session is not None:
            self._cached_session.close()
            self._cached_session = None
        if self._tempdir is not None:
            shutil.rmtree(self._tempdir, ignore_errors=True)
        super().tearDown()

    # ---- sessions ------------------------------------------------------------------------
    @contextlib.contextmanager
    def session(self, graph: Any = None, config: Any = None, use_gpu: bool = False,
                force_gpu: bool = False) -> Iterator[Session]:
        """A new session (closed on exit) that is the default one."""
        with Session(graph=graph or get_default_graph(), config=config) as sess:
            with self._as_default(sess, use_gpu, force_gpu):
                yield sess

    @contextlib.contextmanager
    def cached_session(self, graph: Any = None, config: Any = None, use_gpu: bool = False,
                       force_gpu: bool = False) -> Iterator[Session]:
        """This test's one session (made on first use, closed in tearDown)."""
        graph = graph or get_default_graph()
        if self._cached_session is None:
            self._cached_session = Session(graph=graph, config=config)
        elif self._cached_session.graph is not graph:
            raise ValueError("The graph used to get the cached session is different than the one "
                             "that was used to create the session. Maybe create a new session with "
                             "self.session()")
        with self._as_default(self._cached_session, use_gpu, force_gpu):
            yield self._cached_session

    def test_session(self, graph: Any = None, config: Any = None, use_gpu: bool = False,
                     force_gpu: bool = False) -> Any:
        """TF1's name: the cached session for the default graph, else a new one for ``graph``.
        (unittest also collects it as a test by its name: that run is skipped, as in TF.)"""
        if self.id().endswith(".test_session"):
            self.skipTest("Not a test.")
        return self._test_session(graph, config, use_gpu, force_gpu)

    @contextlib.contextmanager
    def _test_session(self, graph: Any, config: Any, use_gpu: bool, force_gpu: bool) -> Iterator[Session]:
        if graph is None:
            with self.cached_session(None, config, use_gpu, force_gpu) as sess:
                yield sess
        else:
            with self.session(graph, config, use_gpu, force_gpu) as sess:
                yield sess

    @contextlib.contextmanager
    def _as_default(self, sess: Session, use_gpu: bool, force_gpu: bool) -> Iterator[None]:
        from zmtf.testing.test_helpers import gpu_device_name

        with sess.graph.as_default(), sess.as_default():
            if force_gpu:
                name = gpu_device_name()
                if not name:
                    self.skipTest("force_gpu: this process has no GPU")
                with sess.graph.device(name):
                    yield
            elif not use_gpu:
                with sess.graph.device("/device:CPU:0"):
                    yield
            else:
                yield

    def evaluate(self, tensors: Any) -> Any:
        """``tensors`` (any fetch structure) run in the default session, or the cached one."""
        sess = get_default_session()
        if sess is not None:
            return sess.run(tensors)
        with self.cached_session() as sess:
            return sess.run(tensors)

    def checkedThread(self, target: Callable[..., Any], args: tuple = (),  # noqa: N802 (TF's name)
                      kwargs: dict | None = None) -> _CheckedThread:
        thread = _CheckedThread(self, target, tuple(args or ()), kwargs)
        self._threads.append(thread)
        return thread

    def get_temp_dir(self) -> str:
        """A directory for this test, removed after it."""
        if self._tempdir is None:
            self._tempdir = tempfile.mkdtemp(prefix="zmtf-test-")
        return self._tempdir

    # ---- assertions ----------------------------------------------------------------------
    def assertAllClose(self, a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-6,  # noqa: N802
                       msg: str | None = None) -> None:
        """Nested structures of equal layout whose leaves are close (numpy's allclose rule)."""
        self._assert_structure(a, b, "", lambda x, y, path: self._assert_close(x, y, rtol, atol, msg, path))

    def assertAllCloseAccordingToType(self, a: Any, b: Any, rtol: float = 1e-6,  # noqa: N802
                                      atol: float = 1e-6, float_rtol: float = 1e-6,
                                      float_atol: float = 1e-6, half_rtol: float = 1e-3,
                                      half_atol: float = 1e-3, bfloat16_rtol: float = 1e-2,
                                      bfloat16_atol: float = 1e-2, msg: str | None = None) -> None:
        """assertAllClose with looser tolerances for float32 and float16 values."""
        a_arr, b_arr = np.asarray(a), np.asarray(b)
        kinds = {a_arr.dtype.name, b_arr.dtype.name}
        if "float32" in kinds:
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        if "float16" in kinds:
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        if "bfloat16" in kinds:
            rtol, atol = max(rtol, bfloat16_rtol), max(atol, bfloat16_atol)
        self.assertAllClose(a_arr, b_arr, rtol=rtol, atol=atol, msg=msg)

    def assertNotAllClose(self, a: Any, b: Any, **kwargs: Any) -> None:  # noqa: N802
        try:
            self.assertAllClose(a, b, **kwargs)
        except AssertionError:
            return
        raise AssertionError("The two values are close at all elements")

    def assertAllEqual(self, a: Any, b: Any, msg: str | None = None) -> None:  # noqa: N802
        """Same shape and equal elements (strings compare as bytes)."""
        a_arr, b_arr = _array(a), _array(b)
        self.assertEqual(a_arr.shape, b_arr.shape,
                         f"Shape mismatch: expected {a_arr.shape}, got {b_arr.shape}. {msg or ''}")
        if not np.array_equal(a_arr, b_arr):
            where = np.argwhere(a_arr != b_arr)[:5] if a_arr.shape else []
            raise AssertionError(f"Arrays are not equal{': ' + msg if msg else ''}\n"
                                 f"first differing indices: {[tuple(i) for i in where]}\n"
                                 f"a: {a_arr!r}\nb: {b_arr!r}")

    def assertNotAllEqual(self, a: Any, b: Any, msg: str | None = None) -> None:  # noqa: N802
        try:
            self.assertAllEqual(a, b, msg)
        except AssertionError:
            return
        raise AssertionError(f"The two values are equal at all elements. {msg or ''}")

    def assertArrayNear(self, farray1: Any, farray2: Any, err: float,  # noqa: N802
                        msg: str | None = None) -> None:
        self.assertEqual(len(farray1), len(farray2), msg=msg)
        for f1, f2 in zip(farray1, farray2):
            self.assertNear(float(f1), float(f2), err, msg=msg)

    def assertNear(self, f1: float, f2: float, err: float, msg: str | None = None) -> None:  # noqa: N802
        self.assertTrue(f1 == f2 or abs(f1 - f2) <= err,
                        f"{f1!r} != {f2!r} +/- {err!r}{' (' + msg + ')' if msg else ''}")

    def assertNDArrayNear(self, ndarray1: Any, ndarray2: Any, err: float,  # noqa: N802
                          msg: str | None = None) -> None:
        self.assertTrue(np.abs(np.asarray(ndarray1) - np.asarray(ndarray2)).max() <= err, msg=msg)

    def assertAllGreater(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        self.assertGreater(np.min(_array(a)), comparison_target)

    def assertAllLess(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        self.assertLess(np.max(_array(a)), comparison_target)

    def assertAllGreaterEqual(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        self.assertGreaterEqual(np.min(_array(a)), comparison_target)

    def assertAllLessEqual(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        self.assertLessEqual(np.max(_array(a)), comparison_target)

    def assertAllInRange(self, target: Any, lower_bound: Any, upper_bound: Any,  # noqa: N802
                         open_lower_bound: bool = False, open_upper_bound: bool = False) -> None:
        values = _array(target)
        low = values <= lower_bound if open_lower_bound else values < lower_bound
        high = values >= upper_bound if open_upper_bound else values > upper_bound
        outside = np.argwhere(low | high)
        if outside.size:
            raise AssertionError(f"{outside.shape[0]} element(s) outside "
                                 f"{'(' if open_lower_bound else '['}{lower_bound}, {upper_bound}"
                                 f"{')' if open_upper_bound else ']'}: at {outside[:5].tolist()}")

    def assertAllInSet(self, target: Any, expected_set: Any) -> None:  # noqa: N802
        missing = set(np.unique(_array(target)).tolist()) - set(expected_set)
        if missing:
            raise AssertionError(f"{sorted(missing)} not in the expected set {sorted(expected_set)}")

    def assertShapeEqual(self, np_array: Any, tf_tensor: Any, msg: str | None = None) -> None:  # noqa: N802
        """A numpy array's shape equals a Tensor's static shape."""
        self.assertEqual(list(np.asarray(np_array).shape), tf_tensor.get_shape().as_list(), msg=msg)

    def assertDTypeEqual(self, target: Any, expected_dtype: Any) -> None:  # noqa: N802
        want = dtypes.as_dtype(expected_dtype).as_numpy_dtype
        for value in _leaves(target):
            self.assertEqual(np.asarray(value).dtype, want)

    def assertDeviceEqual(self, device1: str, device2: str, msg: str | None = None) -> None:  # noqa: N802
        """Two device strings naming the same device (spelling aside)."""
        from zmtf.framework.device_spec import DeviceSpec

        a = DeviceSpec.from_string(device1 or "").to_string()
        b = DeviceSpec.from_string(device2 or "").to_string()
        self.assertEqual(a, b, f"Devices {device1} and {device2} are not equal. {msg or ''}")

    def assertStartsWith(self, actual: str, expected_start: str, msg: str | None = None) -> None:  # noqa: N802
        if not actual.startswith(expected_start):
            self.fail(msg or f"{actual!r} does not start with {expected_start!r}")

    assertItemsEqual = unittest.TestCase.assertCountEqual   # noqa: N815 (TF1's name)

    @contextlib.contextmanager
    def assertRaisesWithPredicateMatch(self, exception_type: Any,  # noqa: N802
                                       expected_err_re_or_predicate: Any) -> Iterator[None]:
        """The block raises ``exception_type`` whose message matches a regex (searched) or
        which satisfies a predicate."""
        if callable(expected_err_re_or_predicate):
            predicate = expected_err_re_or_predicate
        else:
            pattern = expected_err_re_or_predicate

            def predicate(error: BaseException) -> bool:
                return re.search(pattern, str(error)) is not None
        try:
            yield
        except exception_type as error:
            if not predicate(error):
                raise AssertionError(f"Exception of type {type(error).__name__} did not match "
                                     f"{expected_err_re_or_predicate!r}: {error}") from error
            return
        raise AssertionError(f"Exception of type {getattr(exception_type, '__name__', exception_type)} "
                             f"not raised")

    def assertRaisesOpError(self, expected_err_re_or_predicate: Any) -> Any:  # noqa: N802
        """The block raises a zmtf OpError (InvalidArgumentError, ...) matching the regex."""
        return self.assertRaisesWithPredicateMatch(OpError, expected_err_re_or_predicate)

    # ---- helpers -------------------------------------------------------------------------
    def assertProtoEquals(self, expected_message_maybe_ascii: Any, message: Any,  # noqa: N802
                          msg: str | None = None) -> None:
        """``message`` equals the expected message, given as one or as its text format
        (parsed into a message of ``message``'s type); a failure shows both as text."""
        expected = expected_message_maybe_ascii
        if isinstance(expected, bytes):
            expected = expected.decode("utf-8")
        if isinstance(expected, str):
            if not hasattr(message, "SerializeToString"):
                self.fail(f"assertProtoEquals parses text into a protocol message; got "
                          f"{type(message).__name__}")
            from zmtf.formats.proto_message import merge_text

            expected = merge_text(expected, type(message)())
        elif type(expected) is not type(message):
            self.fail(f"Can't compare protos of type {type(expected).__name__} and "
                      f"{type(message).__name__}")
        self.assertMultiLineEqual(str(expected), str(message), msg)

    def _assert_structure(self, a: Any, b: Any, path: str, leaf: Callable[[Any, Any, str], None]) -> None:
        if isinstance(a, dict) or isinstance(b, dict):
            if not (isinstance(a, dict) and isinstance(b, dict)) or set(a) != set(b):
                raise AssertionError(f"Mismatched structures at {path or 'the top'}: {a!r} vs {b!r}")
            for key in a:
                self._assert_structure(a[key], b[key], f"{path}[{key!r}]", leaf)
        elif _is_sequence(a) or _is_sequence(b):
            if not (_is_sequence(a) and _is_sequence(b)) or len(a) != len(b):
                leaf(a, b, path)   # e.g. a list of numbers against an array: compare as arrays
                return
            for i, (x, y) in enumerate(zip(a, b)):
                self._assert_structure(x, y, f"{path}[{i}]", leaf)
        else:
            leaf(a, b, path)

    def _assert_close(self, a: Any, b: Any, rtol: float, atol: float, msg: str | None,
                      path: str) -> None:
        a_arr, b_arr = _array(a), _array(b)
        if a_arr.shape != b_arr.shape:
            raise AssertionError(f"Shape mismatch at {path or 'the top'}: expected {a_arr.shape}, "
                                 f"got {b_arr.shape}. {msg or ''}")
        if not np.allclose(a_arr, b_arr, rtol=rtol, atol=atol, equal_nan=True):
            np.testing.assert_allclose(a_arr, b_arr, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"at {path or 'the top'}: {msg or ''}")


def _array(value: Any) -> np.ndarray:
    return np.asarray(getattr(value, "values", value) if hasattr(value, "indices") else value)


def _is_sequence(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and not isinstance(value, np.ndarray)


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif _is_sequence(value):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def main(argv: list[str] | None = None) -> None:
    """``tf.test.main()``: run this module's tests with unittest."""
    unittest.main(argv=argv)


def get_temp_dir() -> str:
    """A temporary directory for this process's tests (``tf.test.get_temp_dir()``)."""
    global _process_tempdir
    if _process_tempdir is None or not os.path.isdir(_process_tempdir):
        _process_tempdir = tempfile.mkdtemp(prefix="zmtf-test-")
    return _process_tempdir


_process_tempdir: str | None = None
