"""zmtf's server settings: one declaration (ServerOptions), two faces (kwargs and flags)."""

import dataclasses

import pytest

import zmtf as tf
from zmtf.distributed.server_options import ServerOptions
from zmtf.server import parse_args
from zmtf.distributed.server_options import from_flags


def test_every_setting_has_a_flag_with_the_same_default():
    args = parse_args(["--job", "ps", "--task", "0"])
    assert from_flags(args) == ServerOptions()
    args = parse_args(["--session-gc-secs", "7", "--wait-log-secs", "0.5", "--curve-dir", "/k"])
    options = from_flags(args)
    assert (options.session_gc_secs, options.wait_log_secs, options.curve_dir) == (7.0, 0.5, "/k")


def test_an_unknown_server_setting_is_refused_by_name():
    with pytest.raises(TypeError, match="session_gc_sec'.*session_gc_secs"):
        tf.train.Server({"w": ["127.0.0.1:1"]}, "w", 0, start=False, session_gc_sec=1)


@pytest.mark.parametrize("value", [-1, "3", True])
def test_a_bad_number_is_refused_at_construction(value):
    with pytest.raises(ValueError, match="session_gc_secs must be a number >= 0"):
        ServerOptions(session_gc_secs=value)


def test_the_server_keeps_the_options_it_was_given():
    server = tf.train.Server({"w": ["127.0.0.1:1"]}, "w", 0, start=False, wait_log_secs=2)
    assert server._core.options.wait_log_secs == 2.0
    server.stop()   # never started: frees its zmq Context
    assert [f.name for f in dataclasses.fields(ServerOptions)][:2] == ["curve_dir", "session_gc_secs"]
