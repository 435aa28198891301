"""MonitoredSession, SingularMonitoredSession and Scaffold as TF 1.15 behaves (its
monitored_session_test.py is the spec): recovery from preemptions reported by a run, a hook
or a coordinator thread; clean stops; run_step_fn; the graph finalized while a session is
open; Scaffold's init_fn, cached ops and its one Saver."""

from __future__ import annotations

import threading

import pytest

import zmtf as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def counter():
    step = tf.train.get_or_create_global_step()
    return step, tf.assign_add(step, 1)


class RaiseOnce(tf.train.SessionRunHook):
    """Raises ``error`` from the ``n``-th before_run, once."""

    def __init__(self, n, error):
        self.n, self.error, self.raised = n, error, False

    def before_run(self, run_context):
        self.n -= 1
        if self.n == 0 and not self.raised:
            self.raised = True
            raise self.error


class ReportToCoordinator(tf.train.SessionRunHook):
    """After the ``n``-th run, a thread of the first session reports ``error`` to the coordinator."""

    def __init__(self, n, error):
        self.n, self.error, self.sessions = n, error, 0

    def after_create_session(self, session, coord):
        self.sessions += 1
        self.coord = coord

    def after_run(self, run_context, run_values):
        self.n -= 1
        if self.n == 0:
            thread = threading.Thread(target=self.coord.request_stop, args=(self.error,))
            self.coord.register_thread(thread)
            thread.start()
            thread.join(5)


# ---- Scaffold ------------------------------------------------------------------------------
def test_scaffold_makes_nothing_until_finalize_which_returns_itself_and_finalizes_the_graph():
    tf.Variable(1, name="my_var")
    scaffold = tf.train.Scaffold()
    assert (scaffold.init_op, scaffold.init_fn, scaffold.ready_op, scaffold.local_init_op,
            scaffold.ready_for_local_init_op, scaffold.saver) == (None,) * 6
    assert scaffold.finalize() is scaffold
    assert isinstance(scaffold.init_op, tf.Operation) and isinstance(scaffold.saver, tf.train.Saver)
    assert isinstance(scaffold.ready_op, tf.Tensor) and scaffold.init_fn is None
    assert tf.get_default_graph().finalized
    with pytest.raises(RuntimeError, match="Graph is finalized and cannot be modified"):
        tf.constant([0])


def test_scaffolds_of_one_graph_share_its_cached_ops_and_saver():
    tf.Variable([1])
    first, second = tf.train.Scaffold().finalize(), tf.train.Scaffold().finalize()
    for name in ("init_op", "ready_op", "ready_for_local_init_op", "local_init_op", "saver"):
        assert getattr(first, name) is getattr(second, name), name
    assert tf.get_collection(tf.GraphKeys.INIT_OP) == [first.init_op]
    assert tf.get_collection(tf.GraphKeys.SAVERS) == [first.saver]


def test_more_than_one_saver_in_the_collection_is_an_error():
    tf.Variable([1])
    tf.add_to_collection(tf.GraphKeys.SAVERS, tf.train.Saver())
    tf.add_to_collection(tf.GraphKeys.SAVERS, tf.train.Saver())
    with pytest.raises(RuntimeError, match="More than one item"):
        tf.train.Scaffold().finalize()


def test_scaffold_keeps_what_it_is_given_and_copies_another_scaffold():
    tf.Variable([1])
    saver = tf.train.Saver()
    given = tf.train.Scaffold(init_op=2, init_feed_dict=3, init_fn=lambda scaffold, sess: 4,
                              ready_op=5, ready_for_local_init_op=6, local_init_op=7, saver=saver)
    copy = tf.train.Scaffold(init_op=20, copy_from_scaffold=given).finalize()
    assert (copy.init_op, copy.init_feed_dict, copy.ready_op, copy.ready_for_local_init_op,
            copy.local_init_op, copy.saver) == (20, 3, 5, 6, 7, saver)
    assert copy.init_fn("a session") == 4
    with pytest.raises(TypeError, match="copy_from_scaffold is not a Scaffold instance"):
        tf.train.Scaffold(copy_from_scaffold=1)


def test_init_fn_restores_a_checkpoint_when_there_is_none_to_recover(tmp_path):
    step, bump = counter()
    with tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(last_step=3)]) as sess:
        while not sess.should_stop():
            sess.run(bump)
        saver = tf.get_collection(tf.GraphKeys.SAVERS)[0]    # the Scaffold's
        path = saver.save(sess._session, str(tmp_path / "step-3"))

    def load(scaffold, session):
        scaffold.saver.restore(session, path)

    creator = tf.train.ChiefSessionCreator(tf.train.Scaffold(init_fn=load))
    with tf.train.MonitoredSession(creator, hooks=[tf.train.StopAtStepHook(last_step=5)]) as sess:
        assert sess.run(step) == 3
        assert [sess.run(bump), sess.run(bump)] == [4, 5] and sess.should_stop()


def test_an_aborted_init_fn_is_tried_again_in_a_new_session():
    step = tf.train.get_or_create_global_step()
    calls = []

    def init_fn(scaffold, session):
        calls.append(session)
        if len(calls) == 1:
            raise tf.errors.AbortedError(None, None, "Abort")

    creator = tf.train.ChiefSessionCreator(scaffold=tf.train.Scaffold(init_fn=init_fn))
    with tf.train.MonitoredSession(session_creator=creator) as sess:
        assert not sess.should_stop() and sess.run(step) == 0
    assert len(calls) == 2 and calls[0] is not calls[1]


# ---- recovery --------------------------------------------------------------------------------
@pytest.mark.parametrize("error", [tf.errors.AbortedError(None, None, "Abort"),
                                   tf.errors.UnavailableError(None, None, "Unavailable")])
def test_a_preemption_from_a_hook_makes_a_fresh_session_and_the_run_goes_on(error):
    step, bump = counter()
    hook = RaiseOnce(4, error)
    with tf.train.MonitoredSession(hooks=[hook]) as sess:
        assert [sess.run(step), sess.run(bump), sess.run(bump)] == [0, 1, 2]
        assert sess.run(bump) == 1 and hook.raised      # a freshly initialized session
        assert sess.run(bump) == 2 and not sess.should_stop()


def test_a_preemption_a_thread_reports_to_the_coordinator_is_recovered():
    step, _ = counter()
    hook = ReportToCoordinator(2, tf.errors.AbortedError(None, None, "Aborted at N"))
    sess = tf.train.MonitoredSession(hooks=[hook])
    assert sess.run(step) == 0 and not sess.should_stop()
    assert sess.run(step) == 0                           # the thread reports now
    assert not sess.should_stop()                        # ... and a new session takes over
    assert hook.sessions == 2 and not hook.coord.should_stop()
    sess.close()


def test_another_error_reported_to_the_coordinator_stops_and_close_raises_it():
    step, _ = counter()
    hook = ReportToCoordinator(2, tf.errors.UnknownError(None, None, "fatal inside a thread"))
    sess = tf.train.MonitoredSession(hooks=[hook])
    sess.run(step)
    assert sess.run(step) == 0
    assert sess.should_stop() and hook.sessions == 1
    with pytest.raises(tf.errors.UnknownError, match="fatal inside a thread"):
        sess.close()


def test_an_error_reported_to_the_coordinator_leaves_runs_alone_and_leaves_the_with_block():
    step, _ = counter()
    box = []

    class Keep(tf.train.SessionRunHook):
        def after_create_session(self, session, coord):
            box.append(coord)

    ran = False
    with pytest.raises(RuntimeError, match="a thread wants to stop"):
        with tf.train.MonitoredSession(hooks=[Keep()]) as sess:
            box[0].request_stop(RuntimeError("a thread wants to stop"))
            assert sess.run(step) == 0
            ran = True
    assert ran and sess.should_stop()


def test_a_run_that_fails_because_a_thread_was_preempted_is_recovered():
    step, _ = counter()
    report = ReportToCoordinator(2, tf.errors.AbortedError(None, None, "Aborted at N"))

    class FailAfterStop(tf.train.SessionRunHook):
        """The main thread gets stuck when the coordinator stops: its run is cancelled."""

        def after_run(self, run_context, run_values):
            if report.coord.should_stop():
                raise tf.errors.CancelledError(None, None, "Session got garbage-collected.")

    with tf.train.MonitoredSession(hooks=[report, FailAfterStop()]) as sess:
        assert sess.run(step) == 0
        assert sess.run(step) == 0     # CancelledError, root cause AbortedError: tried again
        assert not sess.should_stop() and report.sessions == 2


# ---- clean stops, closing, the graph -----------------------------------------------------
@pytest.mark.parametrize("error", [tf.errors.OutOfRangeError(None, None, "EOI"), StopIteration])
def test_out_of_range_or_stop_iteration_ends_the_with_block_cleanly(error):
    step, bump = counter()
    hook = RaiseOnce(2, error)
    sess = tf.train.MonitoredSession(hooks=[hook])
    with sess:
        assert sess.run(step) == 0 and not sess.should_stop()
        sess.run(bump)
        pytest.fail("the hook's error ends the block")
    assert sess.should_stop() and sess._is_closed()


def test_a_regular_error_passes_through_and_the_session_is_closed():
    step, bump = counter()
    sess = tf.train.MonitoredSession(hooks=[RaiseOnce(2, RuntimeError("regular exception"))])
    with pytest.raises(RuntimeError, match="regular exception"):
        with sess:
            sess.run(step)
            sess.run(bump)
    assert sess.should_stop() and sess._is_closed()


def test_closing_inside_the_with_block_is_reported_on_the_way_out():
    with pytest.raises(RuntimeError, match="Session is already closed"):
        with tf.train.MonitoredSession() as sess:
            sess.close()


def test_the_graph_is_finalized_while_the_session_is_open_and_opened_again_after():
    graph = tf.get_default_graph()
    v = tf.Variable(0)
    with tf.train.MonitoredSession() as sess:
        assert sess.graph is graph and sess.run(v) == 0 and graph.finalized
    assert not graph.finalized
    tf.train.Scaffold().finalize()
    with tf.train.MonitoredSession() as sess:
        sess.run(v)
    assert graph.finalized                     # finalized before: stays so


# ---- run_step_fn -------------------------------------------------------------------------
def test_run_step_fn_runs_with_and_without_hooks_and_can_stop():
    c = tf.placeholder(tf.float32)
    v = tf.identity(c)

    def step_fn(step_context):
        return step_context.run_with_hooks(fetches=v, feed_dict={c: 3.2})

    def stop(step_context):
        step_context.request_stop()

    with tf.train.MonitoredSession() as sess:
        assert sess.run_step_fn(step_fn) == pytest.approx(3.2)
        assert sess.run_step_fn(lambda step_context: "a value") == "a value"
        with pytest.raises(ValueError, match="may either have one `step_context` argument"):
            sess.run_step_fn(lambda step_context, extra: None)
        sess.run_step_fn(stop)
        pytest.fail("request_stop ends the block")
    assert sess.should_stop()
    sess = tf.train.MonitoredSession()
    with pytest.raises(StopIteration):
        sess.run_step_fn(stop)
    assert not sess.should_stop()
    sess.close()


def test_a_preempted_step_fn_runs_again_but_not_in_a_singular_session():
    c = tf.placeholder(tf.float32)
    v = tf.identity(c)
    tries = []

    def step_fn(step_context):
        tries.append(step_context.session)
        if len(tries) == 1:
            raise tf.errors.AbortedError(None, None, "Abort")
        return step_context.run_with_hooks(fetches=v, feed_dict={c: 3.2})

    with tf.train.MonitoredSession() as sess:
        assert sess.run_step_fn(step_fn) == pytest.approx(3.2)
    assert len(tries) == 2 and tries[0] is not tries[1]
    tries.clear()
    with tf.train.SingularMonitoredSession() as sess:
        with pytest.raises(tf.errors.AbortedError, match="Abort"):
            sess.run_step_fn(step_fn)


# ---- SingularMonitoredSession --------------------------------------------------------------
def test_singular_session_hands_out_its_raw_session_and_does_not_recover():
    step = tf.train.get_or_create_global_step()
    with tf.train.SingularMonitoredSession() as sess:
        assert isinstance(sess.raw_session(), tf.Session)
    assert sess.raw_session() is None and sess.should_stop()

    class Abort(tf.train.SessionRunHook):
        def before_run(self, run_context):
            raise tf.errors.AbortedError(None, None, "Abort")

    with pytest.raises(tf.errors.AbortedError):
        with tf.train.SingularMonitoredSession(hooks=[Abort()]) as sess:
            sess.run(step)


# ---- the queue runners and SyncReplicasOptimizer's hook ------------------------------------
def test_start_queue_runners_leaves_a_monitored_session_alone_and_refuses_a_non_session():
    queue = tf.FIFOQueue(10, tf.float32)
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [queue.enqueue(1.0)]))
    dequeue = queue.dequeue()
    with tf.train.MonitoredSession() as sess:     # it started the runner itself
        before = threading.active_count()
        assert tf.train.start_queue_runners(sess) == []
        assert threading.active_count() == before
        assert sess.run(dequeue) == 1.0
    with pytest.raises(TypeError, match="tf.Session"):
        tf.train.start_queue_runners("NotASession")


def test_a_sync_replicas_hook_made_before_apply_gradients_works():
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(1.0),
                                         replicas_to_aggregate=1, total_num_replicas=1)
    early = opt.make_session_run_hook(True)
    with pytest.raises(ValueError, match="apply_gradient should be called"):
        early.begin()
    hook = opt.make_session_run_hook(True)
    v = tf.Variable([0.0])
    step = tf.Variable(0, name="global_step", trainable=False)
    train = opt.minimize(tf.reduce_sum(v), global_step=step)
    final = []

    class Final(tf.train.SessionRunHook):
        def end(self, session):
            final.extend(session.run([step, v]))

    hooks = [hook, tf.train.StopAtStepHook(last_step=2), Final()]
    with tf.train.MonitoredSession(hooks=hooks) as sess:
        while not sess.should_stop():
            sess.run(train)
    assert final[0] == 2 and final[1].tolist() == [-2.0]


# ---- what hooks see ------------------------------------------------------------------------
class AskOptions(tf.train.SessionRunHook):
    def __init__(self, trace_level, timeout_in_ms, feed=None):
        self.options = tf.RunOptions(trace_level=trace_level, timeout_in_ms=timeout_in_ms)
        self.feed, self.seen = feed, []

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(None, self.feed, options=self.options)

    def after_run(self, run_context, run_values):
        self.seen.append((run_values.options, run_values.run_metadata))


def test_hooks_see_run_options_and_metadata_merged_as_tf_merges_them():
    c = tf.constant(42, name="my_const")
    plain = AskOptions(0, 0)
    plain.before_run = lambda run_context: None
    first, second = AskOptions(2, 30000), AskOptions(3, 60000)
    with tf.train.MonitoredSession(hooks=[plain, first, second]) as sess:
        assert sess.run(c) == 42
    options, metadata = second.seen[0]
    assert (options.trace_level, options.timeout_in_ms) == (3, 60000)   # the largest of each
    assert isinstance(metadata, tf.RunMetadata)
    options, metadata = plain.seen[0]
    assert isinstance(options, tf.RunOptions) and isinstance(metadata, tf.RunMetadata)


def test_a_tensor_fed_twice_names_who_fed_it():
    a, b = tf.placeholder(tf.int32, [], name="a"), tf.placeholder(tf.int32, [], name="b")
    total = a + b
    hooks = [AskOptions(0, 0, {a: 5}), AskOptions(0, 0, {b: 10})]
    with tf.train.MonitoredSession(hooks=hooks) as sess:
        assert sess.run(total) == 15
        with pytest.raises(RuntimeError, match="Same tensor is fed by a SessionRunHook and user"):
            sess.run(total, feed_dict={b: 1})
    hooks = [AskOptions(0, 0, {a: 5}), AskOptions(0, 0, {a: 10})]
    with tf.train.MonitoredSession(hooks=hooks) as sess:
        with pytest.raises(RuntimeError, match="Same tensor is fed by two hooks"):
            sess.run(total)


class UnavailableAtFirst(tf.train.SessionRunHook):
    """``after_create_session`` meets an UnavailableError in the first ``failures`` sessions."""

    def __init__(self, failures):
        self.failures, self.sessions = failures, []

    def after_create_session(self, session, coord):
        self.sessions.append(session)
        if len(self.sessions) <= self.failures:
            raise tf.errors.UnavailableError(None, None, "a ps restarts")


def test_a_preemption_in_after_create_session_makes_another_session():
    step = tf.train.get_or_create_global_step()
    hook = UnavailableAtFirst(1)
    with tf.train.MonitoredSession(hooks=[hook]) as sess:
        assert sess.run(step) == 0
    assert len(hook.sessions) == 2 and hook.sessions[0] is not hook.sessions[1]
    with pytest.raises(tf.errors.UnavailableError):      # a singular session does not recover
        tf.train.SingularMonitoredSession(hooks=[UnavailableAtFirst(1)])
    assert not tf.get_default_graph().finalized


def test_scripts_reach_the_raw_session_and_coordinator_through_tf_private_names():
    step = tf.train.get_or_create_global_step()
    with tf.train.MonitoredTrainingSession() as mon:
        raw = mon
        while type(raw).__name__ != "Session":          # a common TF1 idiom
            raw = raw._sess
        assert raw is mon._tf_sess() is mon._coordinated_creator.tf_sess
        assert raw.run(step) == 0
        mon._coordinated_creator.coord.request_stop()
        assert mon.should_stop()
    assert mon._tf_sess() is None
