"""How late did a request reach us? A step's work that a stalled network delivers after its
sender gave up on it must not run.

A budget that counts from arrival (RunStep, RunGraph) is blind to the time a request spent on
its way: a link cut for less than the liveness bound keeps its TCP connection, the kernel
retransmits what it held, and the request arrives whole, seconds late, after its sender
failed the step for its deadline. Run then, it applies a step reported failed (measured in
network namespaces: an ``assign_add`` with a 150 ms deadline, the ps cut off for 0.35 s,
applied after its DeadlineExceededError, 1 to 2 times in 4 failed steps).

So the sender stamps its own monotonic clock on the request (``stamp()``), and the receiver
compares ``now - sent`` with its smallest value from that sender over recent requests. The
clocks of two hosts differ by an unknown offset, which cancels out: the smallest value is
offset + the quickest transit, and a request's excess over it is how much longer than the
quickest it was in transit (the cut, the retransmission wait). The minimum is renewed every
``WINDOW`` s so that clock drift between hosts (NTP slews a monotonic clock by under 500
ppm) adds at most 2 x WINDOW x drift (30 ms at 500 ppm; nothing on one host). Unknown for a
sender's first request, whose excess counts as 0.
"""

from __future__ import annotations

import time

#: seconds after which the quickest transit seen is measured afresh (bounds clock drift)
WINDOW = 30.0
#: senders remembered (sessions); the oldest is forgotten first
SENDERS = 4096


def stamp() -> int:
    """The sender's clock for a request's ``sent_us``: monotonic microseconds, never 0."""
    return int(time.monotonic() * 1e6) or 1


class TransitDelays:
    """Per sender: by how much a request's transit exceeded the quickest recent one."""

    def __init__(self) -> None:
        #: sender -> [smallest now - sent this window, the last window's, when this one began]
        self._senders: dict[str, list[float]] = {}

    def excess(self, sender: str, sent_us: int, now: float) -> float:
        """Seconds more than its sender's quickest that a request stamped ``sent_us`` and
        read ``now`` (our monotonic clock) was on its way; 0.0 when not stamped."""
        if sent_us <= 0:
            return 0.0
        offset = now - sent_us / 1e6
        window = self._senders.get(sender)
        if window is None:
            if len(self._senders) >= SENDERS:
                del self._senders[next(iter(self._senders))]
            self._senders[sender] = [offset, offset, now]
            return 0.0
        if now - window[2] >= WINDOW:
            window[:] = [offset, window[0], now]
        elif offset < window[0]:
            window[0] = offset
        return max(0.0, offset - min(window[0], window[1]))

    def forget(self, sender: str) -> None:
        self._senders.pop(sender, None)
