"""transit.TransitDelays: how much later than its sender's quickest a request arrived, whatever
the offset between the two clocks."""

from zmtf.distributed import transit
from zmtf.distributed.liveness import PauseWatch
from zmtf.distributed.transit import TransitDelays
from zmtf.framework.errors import DeadlineExceededError


def test_the_clock_offset_cancels_out_and_the_excess_over_the_quickest_transit_remains():
    delays = TransitDelays()
    offset = -1234.5   # the sender's clock runs this far ahead of ours
    assert delays.excess("s", int((10.0 - offset) * 1e6), 10.001) == 0.0   # first: unknown
    assert delays.excess("s", int((11.0 - offset) * 1e6), 11.0005) == 0.0  # quicker: the new base
    late = delays.excess("s", int((12.0 - offset) * 1e6), 12.4005)         # held 0.4 s by a cut
    assert abs(late - 0.4) < 1e-6
    assert delays.excess("other", int(5e6), 99.0) == 0.0   # each sender has its own clock


def test_an_unstamped_request_is_never_late():
    delays = TransitDelays()
    delays.excess("s", 1_000_000, 5.0)
    assert delays.excess("s", 0, 500.0) == 0.0


def test_the_quickest_transit_is_measured_afresh_so_clock_drift_does_not_accumulate():
    delays = TransitDelays()
    drift = 1e-4   # our clock gains 100 ppm on the sender's: now - sent grows by that
    times = [i * 1.0 for i in range(0, 200)]
    excesses = [delays.excess("s", int(t * 1e6), t * (1 + drift)) for t in times]
    assert max(excesses) <= 2 * transit.WINDOW * drift + 1e-3


def test_senders_are_forgotten_oldest_first_beyond_the_limit():
    delays = TransitDelays()
    for i in range(transit.SENDERS + 10):
        delays.excess(f"s{i}", 1, 1.0)
    assert len(delays._senders) == transit.SENDERS
    assert "s0" not in delays._senders and f"s{transit.SENDERS + 9}" in delays._senders


def test_a_late_request_counts_against_its_deadline_only():
    """Late past its deadline: dropped, naming the network. Late with time left: its budget
    shrinks. Late without a deadline: run (its connection lived: the liveness bound is not
    the sender's reason to give up; a big message takes long to transfer)."""
    watch = PauseWatch(1.0)
    try:
        error, waited = watch.refusal("/job:ps/replica:0/task:0", "RunGraph of step", 7, 0.15,
                                      late=0.4)
        assert isinstance(error, DeadlineExceededError) and waited == 0.4
        assert "RunGraph of step 7 was dropped on /job:ps/replica:0/task:0" in str(error)
        assert "on its way here" in str(error)
        assert watch.refusal("t", "RunGraph of step", 7, 2.0, late=0.4) == (None, 0.4)
        assert watch.refusal("t", "RunGraph of step", 7, None, late=30.0) == (None, 30.0)
        assert watch.refusal("t", "RunGraph of step", 7, 2.0) == (None, 0.0)
    finally:
        watch.stop()
