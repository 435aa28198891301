"""transit.TransitDelays: how much later than its sender's quickest a request arrived, whatever
the offset between the two clocks."""

from zmtf.distributed import transit
from zmtf.distributed.transit import TransitDelays


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
