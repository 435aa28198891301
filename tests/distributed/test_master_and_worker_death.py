"""kill -9 of the master's own task, and of one worker in between-graph async training
(issue 23): the client whose master died gets UnavailableError naming its address within
the liveness bound and closes at once; the other workers' training goes on."""

import queue
import threading
import time

import zmtf as tf

from liveness_cluster import LIVENESS, fault_cluster, target
from zmtf.distributed.liveness import LIVENESS_ENV

#: a typed error must come within the bound plus this much (scheduling on 2 busy CPUs)
SLACK = 4.0
CLOSE_BOUND = 3.0
TIMEOUTS_MS = (0, 2000)


class ClientThread:
    """One daemon thread that runs every call of a client, as a single-threaded client does
    (a sync Session keeps one socket per thread); a call that hangs fails the test, not CI."""

    def __init__(self):
        self._calls = queue.Queue()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            fn, done = self._calls.get()
            try:
                done.put((fn(), None))
            except BaseException as error:   # noqa: BLE001 - handed to the test
                done.put((None, error))

    def call(self, fn, limit=LIVENESS + SLACK + 5):
        """(result, error, seconds) of ``fn()`` on the thread; fails if it hangs past ``limit``."""
        done = queue.Queue()
        start = time.monotonic()
        self._calls.put((fn, done))
        try:
            result, error = done.get(timeout=limit)
        except queue.Empty:
            raise AssertionError(f"the call hung (still running after {limit} s)") from None
        return result, error, time.monotonic() - start


def test_killed_master_task_fails_the_next_runs_naming_it_and_close_returns(monkeypatch):
    monkeypatch.setenv(LIVENESS_ENV, str(LIVENESS))   # the client's own bound, as its servers'
    with fault_cluster() as (spec, procs):
        tf.reset_default_graph()
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(1.0, name="v")
        with tf.device("/job:worker/task:0"):
            fetch = v + 1.0
        client = ClientThread()
        sessions = [tf.Session(target(spec), config=tf.ConfigProto(operation_timeout_in_ms=ms))
                    for ms in TIMEOUTS_MS]
        client.call(lambda: sessions[0].run(v.initializer))
        for sess in sessions:
            assert client.call(lambda: sess.run(fetch))[:2] == (2.0, None)
        procs["worker0"].kill()   # the master of both sessions
        procs["worker0"].wait()
        address = spec.task_address("worker", 0)
        for sess, timeout_ms in zip(sessions, TIMEOUTS_MS):
            for attempt in range(3):   # the run that sees the loss, the one that waits, after
                _, error, seconds = client.call(lambda: sess.run(fetch))
                assert isinstance(error, tf.errors.UnavailableError), repr(error)
                assert address in str(error), str(error)
                assert seconds < LIVENESS + SLACK, seconds
                print(f"kill -9 master (operation_timeout_in_ms={timeout_ms}) run {attempt}: "
                      f"UnavailableError in {seconds:.3f} s")
            # a thread new to the session (a socket of its own, never connected) too
            _, error, seconds = ClientThread().call(lambda: sess.run(fetch))
            assert isinstance(error, tf.errors.UnavailableError), repr(error)
            assert address in str(error), str(error)
            assert seconds < LIVENESS + SLACK, seconds
            print(f"kill -9 master (operation_timeout_in_ms={timeout_ms}) run from a new "
                  f"thread: UnavailableError in {seconds:.3f} s")
        for sess in sessions:
            _, error, seconds = client.call(sess.close)
            assert error is None, repr(error)
            assert seconds < CLOSE_BOUND, seconds
            print(f"close after kill -9 master: {seconds:.3f} s")


def _between_graph_model(spec, task):
    """Worker ``task``'s own graph: variables on the ps, its ops on itself, async SGD."""
    graph = tf.Graph()
    setter = tf.train.replica_device_setter(worker_device=f"/job:worker/task:{task}",
                                            cluster=spec)
    with graph.as_default(), tf.device(setter):
        global_step = tf.train.get_or_create_global_step()
        w = tf.Variable(0.0, name="w")
        train = tf.train.GradientDescentOptimizer(0.01).minimize(tf.square(w - 3.0),
                                                                 global_step=global_step)
        init = tf.global_variables_initializer()
    return graph, global_step, train, init


def test_a_worker_killed_in_async_training_leaves_the_others_training(monkeypatch):
    monkeypatch.setenv(LIVENESS_ENV, str(LIVENESS))
    with fault_cluster() as (spec, procs):
        steps = {0: [], 1: []}   # task -> the global step after each of its steps
        errors = {}
        stop = threading.Event()

        def train(task, sess, global_step, train_op):
            try:
                while not stop.is_set():
                    steps[task].append(sess.run([train_op, global_step])[1])
            except tf.errors.OpError as error:
                errors[task] = (error, time.monotonic())
            finally:
                sess.close()

        threads = []
        for task in (0, 1):
            graph, global_step, train_op, init = _between_graph_model(spec, task)
            sess = tf.Session("grpc://" + spec.task_address("worker", task), graph=graph)
            if task == 0:   # the chief
                sess.run(init)
            threads.append(threading.Thread(target=train, daemon=True,
                                            args=(task, sess, global_step, train_op)))
        try:
            for thread in threads:
                thread.start()
            deadline = time.monotonic() + 20
            while min(len(steps[0]), len(steps[1])) < 5:   # both train
                assert time.monotonic() < deadline and not errors, (len(steps[0]), errors)
                time.sleep(0.01)
            procs["worker1"].kill()
            killed_at = time.monotonic()
            procs["worker1"].wait()
            threads[1].join(LIVENESS + SLACK)
            assert not threads[1].is_alive(), "worker 1's client hung"
            error, failed_at = errors[1]
            assert isinstance(error, tf.errors.UnavailableError), repr(error)
            assert spec.task_address("worker", 1) in str(error), str(error)
            print(f"kill -9 worker1 in async training: its client's UnavailableError "
                  f"{failed_at - killed_at:.3f} s after the kill")
            done_before, step_before = len(steps[0]), steps[0][-1]
            while len(steps[0]) < done_before + 5:   # worker 0 keeps training
                assert time.monotonic() < deadline and 0 not in errors, errors.get(0)
                time.sleep(0.01)
            assert steps[0][-1] >= step_before + 5, (step_before, steps[0][-5:])
            print(f"worker0 went on: global step {step_before} -> {steps[0][-1]}")
        finally:
            stop.set()
            for thread in threads:
                thread.join(10)
        assert 0 not in errors, errors.get(0)
