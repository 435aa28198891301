"""DEAD: the value of a tensor on the side of a tf.cond that did not run.

Switch outputs it on its untaken side; the executor skips every node that receives it (its
outputs become DEAD too) except Merge, which forwards its one live input. It is never
fetched, sent or stored: those fail with a typed error instead.
"""

from __future__ import annotations


class _Dead:
    __slots__ = ()

    def __repr__(self) -> str:
        return "DEAD"


DEAD = _Dead()
