"""Calls: pure request-id bookkeeping, time passed in."""

import itertools
import math
import threading

import pytest

from zmtf.wire.calls import ID_LIMIT, Calls, call_ids


def test_new_match_and_pending():
    calls = Calls()
    a = calls.new_call(deadline=10.0, context="a")
    b = calls.new_call(deadline=5.0, context="b")
    assert (a, b) == (1, 2) and calls.pending() == 2
    assert calls.match(b) == "b"
    assert calls.pending() == 1
    assert calls.match(b) is None  # a duplicate reply
    assert calls.match(a) == "a" and calls.pending() == 0


@pytest.mark.parametrize("reply_id", [0, 99, -1, 2**70, "1", None, 1.0, True])
def test_unknown_ids_match_nothing_and_never_raise(reply_id):
    calls = Calls()
    calls.new_call(deadline=1.0, context="ctx")
    assert calls.match(reply_id) is None
    assert calls.pending() == 1


def test_expire_returns_overdue_calls_earliest_first():
    calls = Calls()
    late = calls.new_call(deadline=3.0, context="late")
    early = calls.new_call(deadline=1.0, context="early")
    never = calls.new_call(deadline=math.inf, context="never")
    answered = calls.new_call(deadline=2.0, context="answered")
    assert calls.match(answered) == "answered"
    assert calls.next_deadline() == 1.0
    assert calls.expire(0.5) == []
    assert calls.expire(3.0) == [(early, "early"), (late, "late")]
    assert calls.match(late) is None  # a reply after its deadline is dropped
    assert calls.expire(1e300) == [] and calls.pending() == 1
    assert calls.next_deadline() == math.inf
    assert calls.match(never) == "never"
    assert calls.next_deadline() == math.inf


def test_answered_calls_do_not_pile_up_in_the_deadline_heap():
    calls = Calls()
    for _ in range(10_000):
        calls.match(calls.new_call(deadline=math.inf, context=1))
    assert calls.pending() == 0 and len(calls._deadlines) < 200


def test_ids_wrap_below_2_63_skipping_pending_ones():
    calls = Calls(first_id=ID_LIMIT - 2)
    stuck = calls.new_call(deadline=1.0, context="x")
    assert calls.new_call(deadline=1.0, context="y") == ID_LIMIT - 1
    assert calls.new_call(deadline=1.0, context="z") == 1  # 0 is never used
    # ids come around again (2**63 calls later) while the first is still pending
    calls2 = Calls(ids=iter([ID_LIMIT - 1, ID_LIMIT - 1, 1]))
    assert calls2.new_call(1.0, "a") == ID_LIMIT - 1
    assert calls2.new_call(1.0, "b") == 1
    assert stuck == ID_LIMIT - 2


def test_a_reused_id_is_not_expired_by_its_predecessor_deadline():
    calls = Calls(ids=iter([ID_LIMIT - 1, ID_LIMIT - 1]))   # the same id, 2**63 calls later
    first = calls.new_call(deadline=1.0, context="first")
    assert calls.match(first) == "first"
    again = calls.new_call(deadline=10.0, context="again")
    assert again == first
    assert calls.expire(5.0) == []
    assert calls.expire(10.0) == [(again, "again")]


def test_bad_arguments_are_programming_errors():
    calls = Calls()
    with pytest.raises(ValueError, match="must not be None"):
        calls.new_call(1.0, None)
    with pytest.raises(ValueError, match="NaN"):
        calls.new_call(math.nan, "x")
    with pytest.raises(ValueError, match="first_id"):
        Calls(first_id=0)


def test_call_ids_count_up_and_wrap_to_1():
    ids = call_ids(ID_LIMIT - 2)
    assert [next(ids) for _ in range(4)] == [ID_LIMIT - 2, ID_LIMIT - 1, 1, 2]
    assert list(itertools.islice(call_ids(), 3)) == [1, 2, 3]
    with pytest.raises(ValueError, match="first_id"):
        call_ids(ID_LIMIT)


def test_tables_sharing_one_id_source_never_hand_out_the_same_id():
    shared = call_ids()
    one, two = Calls(ids=shared), Calls(ids=shared)
    assert [one.new_call(1.0, "a"), two.new_call(1.0, "b"), next(shared), two.new_call(1.0, "c")] \
        == [1, 2, 3, 4]
    assert two.match(2) == "b" and one.match(2) is None


def test_threads_drawing_from_one_id_source_get_distinct_ids():
    shared = call_ids()
    drawn: list[list[int]] = [[] for _ in range(4)]

    def draw(into: list[int]) -> None:
        for _ in range(20_000):
            into.append(next(shared))

    threads = [threading.Thread(target=draw, args=(d,)) for d in drawn]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [i for d in drawn for i in d]
    assert sorted(every) == list(range(1, 80_001))


def test_an_id_that_comes_around_onto_a_pending_call_is_skipped():
    calls = Calls(ids=iter([1, 1, 2]))
    assert calls.new_call(5.0, "waiting") == 1
    assert calls.new_call(5.0, "next") == 2
    assert calls.pending() == 2


def test_take_all_empties_the_table_oldest_first():
    calls = Calls()
    calls.new_call(3.0, "a")
    calls.new_call(1.0, "b")
    assert calls.take_all() == [(1, "a"), (2, "b")]
    assert calls.pending() == 0 and calls.next_deadline() == math.inf
    assert calls.expire(10.0) == [] and calls.match(1) is None
