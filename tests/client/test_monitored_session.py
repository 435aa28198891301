"""tf.train.MonitoredTrainingSession and hooks: local, with checkpoints, and on a tcp cluster."""

import logging
import threading
import time

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import free_tcp_ports, running_servers


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def linear_model():
    x = tf.constant(np.ones((4, 2), np.float32))
    w = tf.Variable(tf.zeros([2, 1]), name="w")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
    step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return loss, train, step


class Recorder(tf.train.SessionRunHook):
    def __init__(self, fetch):
        self.calls, self.values, self.fetch = [], [], fetch

    def begin(self):
        self.calls.append("begin")

    def after_create_session(self, session, coord):
        self.calls.append("after_create_session")

    def before_run(self, run_context):
        self.calls.append("before_run")
        return tf.train.SessionRunArgs(self.fetch)

    def after_run(self, run_context, run_values):
        self.values.append(run_values.results)

    def end(self, session):
        self.calls.append("end")


def test_stop_at_step_hooks_and_extra_fetches():
    loss, train, step = linear_model()
    recorder = Recorder(loss)
    with tf.train.MonitoredTrainingSession(hooks=[tf.train.StopAtStepHook(last_step=5), recorder]) as sess:
        runs = 0
        while not sess.should_stop():
            sess.run(train)
            runs += 1
        with pytest.raises(RuntimeError, match="should_stop"):
            sess.run(train)
    assert runs == 5
    assert recorder.calls[:3] == ["begin", "after_create_session", "before_run"]
    assert recorder.calls[-1] == "end" and len(recorder.values) == 5
    assert recorder.values[0] > recorder.values[-1]          # the loss fell


def test_checkpoints_are_saved_and_a_new_session_resumes(tmp_path):
    loss, train, step = linear_model()
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_checkpoint_steps=2,
                                           hooks=[tf.train.StopAtStepHook(last_step=3)]) as sess:
        while not sess.should_stop():
            sess.run(train)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-3")
    saved = sorted(int(p.name.split("-")[1].split(".")[0]) for p in tmp_path.glob("model.ckpt-*.npz"))
    assert saved == [0, 2, 3]          # at the start (as TF), every 2 steps, and at the end
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                           hooks=[tf.train.StopAtStepHook(num_steps=2)]) as sess:
        assert sess.run(step) == 3                                # restored, not re-initialized
        seen = []
        while not sess.should_stop():
            seen.append(sess.run([train, step])[1])
    assert len(seen) == 2                                         # two more steps: 3 -> 5
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-5")   # saved at the end


def test_hook_errors_and_logging(caplog):
    loss, train, step = linear_model()
    x = tf.placeholder(tf.float32, [])

    class Feeder(tf.train.SessionRunHook):
        def before_run(self, run_context):
            return tf.train.SessionRunArgs(None, feed_dict={x: 1.0})

    with caplog.at_level(logging.INFO, logger="zmtf.train"):
        with tf.train.MonitoredTrainingSession(hooks=[
                Feeder(), tf.train.LoggingTensorHook({"loss": loss}, every_n_iter=1)]) as sess:
            with pytest.raises(RuntimeError, match="Same tensor is fed by a SessionRunHook and user"):
                sess.run(train, feed_dict={x: 2.0})
            sess.run(train)
    assert any(r.getMessage().startswith("loss = ") for r in caplog.records)
    bad = tf.constant(np.nan)
    with pytest.raises(tf.train.NanLossDuringTrainingError, match="NaN loss during training"):
        with tf.train.MonitoredTrainingSession(hooks=[tf.train.NanTensorHook(bad)]) as sess:
            sess.run(train)


def start_cluster(workers):
    ports = free_tcp_ports(1 + workers)
    cluster = {"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{p}" for p in ports[1:]]}
    servers = [tf.train.Server(cluster, "ps", 0)] + [tf.train.Server(cluster, "worker", i)
                                                     for i in range(workers)]
    return cluster, servers


def worker_graph(task, sync):
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(tf.train.replica_device_setter(ps_tasks=1, worker_device=f"/job:worker/task:{task}")):
            x = tf.constant(np.ones((4, 2), np.float32))
            w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
            step = tf.train.get_or_create_global_step()
            opt = tf.train.GradientDescentOptimizer(0.1)
            if sync:
                opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=2, total_num_replicas=2)
            train = opt.minimize(loss, global_step=step)
            hooks = [tf.train.StopAtStepHook(last_step=6)]
            if sync:
                hooks.append(opt.make_session_run_hook(is_chief=(task == 0)))
    return graph, train, step, hooks


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync_replicas"])
def test_two_workers_train_with_monitored_sessions_on_a_cluster(sync):
    cluster, servers = start_cluster(2)
    results, errors = {}, []

    def run(task):
        try:
            graph, train, step, hooks = worker_graph(task, sync)
            with graph.as_default():
                with tf.train.MonitoredTrainingSession(master=servers[1 + task].target, is_chief=(task == 0),
                                                       hooks=hooks, log_step_count_steps=None,
                                                       max_wait_secs=30) as sess:
                    while not sess.should_stop():
                        _, results[task] = sess.run([train, step])
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    try:
        threads = [threading.Thread(target=run, args=(t,)) for t in (1, 0)]   # non-chief first: it waits
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(t.is_alive() for t in threads), "a worker hung"
        assert not errors, errors
        assert results[0] >= 5 and results[1] >= 5     # the step read before the last update
    finally:
        for server in servers:
            server.stop()


def test_supervisor_trains_saves_and_recovers(tmp_path):
    loss, train, step = linear_model()
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0)
    with sv.managed_session() as sess:
        for _ in range(3):
            sess.run(train)
        assert not sv.should_stop()
    assert sv.should_stop()                                            # stopped on exit
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-3")
    again = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0)
    with again.managed_session() as sess:
        assert sess.run(step) == 3                                     # recovered


def test_supervisor_non_chief_waits_for_the_chief():
    cluster, servers = start_cluster(2)
    results, errors = {}, []

    def run(task):
        try:
            graph, train, step, _ = worker_graph(task, sync=False)
            with graph.as_default():
                sv = tf.train.Supervisor(is_chief=(task == 0), global_step=step)
                with sv.managed_session(servers[1 + task].target) as sess:
                    for _ in range(3):
                        sess.run(train)
                    results[task] = sess.run(step)
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    try:
        threads = [threading.Thread(target=run, args=(t,)) for t in (1, 0)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(t.is_alive() for t in threads) and not errors, errors
        assert max(results.values()) == 6                               # both trained the same step
    finally:
        for server in servers:
            server.stop()


def test_tf1_session_creators_chief_restores_and_worker_waits(tmp_path):
    """MonitoredSession(session_creator=ChiefSessionCreator/WorkerSessionCreator), as TF1
    scripts write it, and SingularMonitoredSession."""
    ports = free_tcp_ports(2)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]})
    servers = [tf.train.Server(spec, job_name=job, task_index=0) for job in ("ps", "worker")]
    try:
        tf.reset_default_graph()
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(5.0)
            step = tf.train.get_or_create_global_step()
        bump = tf.group(v.assign_add(1.0), step.assign_add(1))
        target = servers[1].target
        box = []

        def worker():   # starts before the chief: waits until the variables are initialized
            creator = tf.train.WorkerSessionCreator(master=target, max_wait_secs=30)
            with tf.train.MonitoredSession(session_creator=creator) as sess:
                box.append(sess.run(v))

        tf.train.Scaffold().finalize()   # the graph's init ops and Saver, before two threads use it
        waiter = threading.Thread(target=worker)
        waiter.start()
        creator = tf.train.ChiefSessionCreator(master=target, checkpoint_dir=str(tmp_path))
        hooks = [tf.train.StopAtStepHook(last_step=3),
                 tf.train.CheckpointSaverHook(str(tmp_path), save_steps=1)]
        with tf.train.MonitoredSession(session_creator=creator, hooks=hooks) as sess:
            while not sess.should_stop():
                sess.run(bump)
        waiter.join(30)
        assert box and box[0] >= 5.0
        with tf.train.SingularMonitoredSession(master=target, checkpoint_dir=str(tmp_path)) as sess:
            assert sess.run(step) == 3                      # restored from the checkpoint
        first = str(tmp_path / "model.ckpt-1")
        creator = tf.train.ChiefSessionCreator(master=target, checkpoint_filename_with_path=first)
        with tf.train.MonitoredSession(session_creator=creator) as sess:
            assert sess.run(step) == 1                      # that very checkpoint
    finally:
        for server in servers:
            server.stop()


def test_second_or_step_timer():
    timer = tf.train.SecondOrStepTimer(every_steps=3)
    assert timer.should_trigger_for_step(0) and timer.last_triggered_step() is None
    assert timer.update_last_triggered_step(0) == (None, None)
    assert [timer.should_trigger_for_step(s) for s in (0, 1, 2, 3)] == [False, False, False, True]
    assert timer.update_last_triggered_step(3)[1] == 3
    with pytest.raises(ValueError, match="exactly one"):
        tf.train.SecondOrStepTimer(every_secs=1, every_steps=1)


def test_final_ops_feed_fn_and_checkpoint_listener_hooks(tmp_path):
    loss, train, step = linear_model()
    scale = tf.placeholder(tf.float32, [], name="scale")
    scaled = loss * scale
    fed = tf.train.FeedFnHook(lambda: {scale: 2.0})
    final = tf.train.FinalOpsHook([step, loss])

    class Listener(tf.train.CheckpointSaverListener):
        def __init__(self):
            self.events = []

        def begin(self):
            self.events.append("begin")

        def before_save(self, session, global_step_value):
            self.events.append(("before_save", global_step_value))

        def after_save(self, session, global_step_value):
            self.events.append(("after_save", global_step_value))
            return global_step_value >= 4          # stop training after the save at step 4

        def end(self, session, global_step_value):
            self.events.append(("end", global_step_value))

    listener = Listener()
    saver_hook = tf.train.CheckpointSaverHook(str(tmp_path), save_steps=2, listeners=[listener])
    with tf.train.MonitoredSession(hooks=[fed, final, saver_hook]) as sess:
        values = []
        while not sess.should_stop():
            _, value = sess.run([train, scaled])      # scale comes from FeedFnHook
            values.append(value)
    assert len(values) == 4 and values[0] == pytest.approx(2.0)
    assert listener.events == ["begin", ("before_save", 0), ("after_save", 0), ("before_save", 2),
                               ("after_save", 2), ("before_save", 4), ("after_save", 4), ("end", 4)]
    assert final.final_ops_values[0] == 4 and final.final_ops_values[1] < values[0] / 2
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-4")


def test_global_step_waiter_hook_holds_the_first_run_until_the_step_arrives():
    loss, train, step = linear_model()
    bump = step.assign_add(1)
    with tf.Session() as plain:
        plain.run(tf.global_variables_initializer())
        waiter = tf.train.GlobalStepWaiterHook(wait_until_step=2)
        waiter.begin()
        context = tf.train.SessionRunContext(tf.train.SessionRunArgs(None), plain)
        done = threading.Event()

        def first_run():
            waiter.before_run(context)
            done.set()

        thread = threading.Thread(target=first_run)
        thread.start()
        assert not done.wait(0.3)                 # step 0: still waiting
        plain.run(bump)
        plain.run(bump)                           # step 2: released
        assert done.wait(5)
        thread.join()
        waiter.before_run(context)                # later runs never wait


def test_basic_train_loop_runs_steps_until_the_supervisor_stops(tmp_path):
    loss, train, step = linear_model()
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0)
    seen = []

    def train_step(sess, stop_at):
        seen.append(int(sess.run([train, step])[1]))
        if len(seen) == stop_at:
            sv.request_stop()

    tf.train.basic_train_loop(sv, train_step, args=[3])
    assert len(seen) == 3 and seen == sorted(seen)


def test_looper_thread_calls_its_target_until_the_coordinator_stops():
    coord = tf.train.Coordinator()
    calls = []
    looper = tf.train.LooperThread.loop(coord, 0.01, target=calls.append, args=("tick",))
    while len(calls) < 3:
        coord.wait_for_stop(0.01)
    coord.request_stop()
    coord.join([looper], stop_grace_period_secs=5)
    assert not looper.is_alive() and set(calls) == {"tick"}

    failing = tf.train.Coordinator()

    def boom():
        raise RuntimeError("looper failed")

    tf.train.LooperThread.loop(failing, None, target=boom)
    with pytest.raises(RuntimeError, match="looper failed"):   # the error reaches join()
        failing.join(stop_grace_period_secs=5)
    with pytest.raises(ValueError, match="require that you also pass 'target'"):
        tf.train.LooperThread(tf.train.Coordinator(), 1.0, args=(1,))


def test_assert_global_step_names_what_is_wrong():
    tf.train.assert_global_step(tf.train.get_or_create_global_step())
    with pytest.raises(TypeError, match="integer type"):
        tf.train.assert_global_step(tf.Variable(1.0))
    with pytest.raises(TypeError, match="not scalar"):
        tf.train.assert_global_step(tf.Variable([1, 2]))
    with pytest.raises(TypeError, match="Variable or Tensor"):
        tf.train.assert_global_step(3)


def test_session_manager_chief_prepares_and_others_wait(tmp_path):
    """tf.train.SessionManager as TF1 scripts use it directly: the chief initializes (or
    restores), the other worker's wait_for_session returns once the model is ready."""
    with running_servers(allow_reset=True) as servers:   # it resets the cluster between stages
        tf.reset_default_graph()
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(7.0)
        init, saver = tf.global_variables_initializer(), tf.train.Saver()
        manager = tf.train.SessionManager(recovery_wait_secs=0.05)
        target = servers[("worker", 0)].target
        box = []
        waiter = threading.Thread(target=lambda: box.append(
            manager.wait_for_session(target, max_wait_secs=30).run(v)))
        waiter.start()
        time.sleep(0.3)
        assert not box                                   # nothing initialized yet: still waiting
        sess = manager.prepare_session(target, init_op=init, saver=saver, checkpoint_dir=str(tmp_path))
        sess.run(v.assign(8.0))
        saver.save(sess, str(tmp_path / "model.ckpt"), global_step=1)
        sess.close()
        waiter.join(30)
        assert box and box[0] in (7.0, 8.0)
        tf.Session.reset(target)                         # the variables are gone from the ps
        restored, ready = manager.recover_session(target, saver=saver, checkpoint_dir=str(tmp_path))
        assert ready and restored.run(v) == 8.0
        restored.close()
        with pytest.raises(RuntimeError, match="no init_op or init_fn"):
            tf.train.SessionManager().prepare_session(target)   # nothing to restore, nothing to run
        tf.Session.reset(target)
        with pytest.raises(RuntimeError, match="did not make model ready"):
            tf.train.SessionManager().prepare_session(target, init_op=tf.no_op())
        with pytest.raises(tf.errors.DeadlineExceededError, match="not ready after waiting"):
            tf.train.SessionManager(recovery_wait_secs=0.05).wait_for_session(target, max_wait_secs=0.2)


def test_a_custom_session_creator_feeds_monitored_session():
    class Counting(tf.train.SessionCreator):
        made = 0

        def create_session(self):
            Counting.made += 1
            sess = tf.Session()
            sess.run(tf.global_variables_initializer())
            return sess

    tf.reset_default_graph()
    v = tf.Variable(3.0)
    with tf.train.MonitoredSession(session_creator=Counting()) as sess:
        assert sess.run(v) == 3.0
    assert Counting.made == 1


def test_supervisor_writes_summaries_and_step_rate_on_the_chief(tmp_path):
    tf.reset_default_graph()
    step = tf.train.get_or_create_global_step()
    loss = tf.Variable(3.0)
    tf.summary.scalar("loss", loss)
    train = tf.group(step.assign_add(1), loss.assign_sub(0.1))
    extra = tf.summary.scalar("extra", tf.constant(7.0), collections=[])
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_summaries_secs=0.1, save_model_secs=0)
    assert sv.summary_op is not None and sv.summary_writer is not None
    with sv.managed_session() as sess:
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            sess.run(train)
            time.sleep(0.01)
        sv.summary_computed(sess, sess.run(extra))   # the graph is finalized: made before
    [path] = tmp_path.glob("events.out.tfevents.*")
    tags = [(v.tag, e.step) for e in tf.train.summary_iterator(str(path)) if e.summary
            for v in e.summary.value]
    assert any(tag == "loss" for tag, _ in tags) and any(tag == "global_step/sec" for tag, _ in tags)
    assert ("extra", tags[-1][1]) in tags and tags[-1][1] > 0
    worker = tf.train.Supervisor(is_chief=False, logdir=str(tmp_path))
    assert worker.summary_writer is None
    with pytest.raises(RuntimeError, match="Only chief"):
        worker.start_standard_services(None)
    with pytest.raises(RuntimeError, match="requires a summary writer"):
        worker.summary_computed(None, b"")
