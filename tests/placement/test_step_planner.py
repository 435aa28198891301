"""StepPlanner and BoundSteps: the one plan-and-bind path of the local session, the master
and the workers (sticky placements, the placement log, bound steps cached by signature)."""

import logging

import zmtf as tf
from zmtf.framework.device_spec import DeviceSpec
from zmtf.kernels import lookup, supports
from zmtf.placement.plan import StepPlanner
from zmtf.runtime.bound_steps import BoundSteps
from zmtf.runtime.resources import ResourceContainer

TASK = DeviceSpec(job="localhost", replica=0, task=0)
CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"


def small_graph():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(2.0, name="x")
        y = tf.multiply(x, 3.0, name="y")
    return graph, x, y


def test_placements_stick_across_plans_unless_not_sticky():
    graph, x, y = small_graph()
    sticky = StepPlanner(supports, TASK, allow_soft_placement=False)
    sticky.plan([x], [], [], [CPU1, CPU])
    assert sticky.placements["x"] == CPU1
    plan = sticky.plan([y], [], [], [CPU, CPU1])   # x keeps its device, y is new
    assert plan.placement.devices["x"] == CPU1
    loose = StepPlanner(supports, TASK, allow_soft_placement=True, sticky=False)
    loose.plan([x], [], [], [CPU1, CPU])
    assert loose.placements is None
    assert loose.plan([y], [], [], [CPU, CPU1]).placement.devices["x"] == CPU


def test_the_placement_log_is_written_only_when_asked(caplog):
    graph, x, y = small_graph()
    with caplog.at_level(logging.INFO, logger="zmtf.placement"):
        StepPlanner(supports, TASK, allow_soft_placement=False).plan([y], [], [], [CPU])
        assert not caplog.records
        StepPlanner(supports, TASK, allow_soft_placement=False, log_placement=True).plan(
            [y], [], [], [CPU])
    assert any("y" in r.getMessage() and CPU in r.getMessage() for r in caplog.records)


def test_bound_steps_bind_once_per_key_and_empty_past_their_limit():
    graph, x, y = small_graph()
    planner = StepPlanner(supports, TASK, allow_soft_placement=False)
    bound = BoundSteps(planner, [CPU], lookup, ResourceContainer(), limit=1)
    step = bound.bind("y", [y], [], [])
    assert bound.bind("y", [y], [], []) is step and bound.steps == {"y": step}
    bound.bind("x", [x], [], [])
    bound.bind("x+y", [x, y], [], [])   # past the limit: the cache starts again
    assert set(bound.steps) == {"x+y"}
