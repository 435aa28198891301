"""The ``zmtf_cluster`` pytest fixture. zmtf.testing's plugin registers this module when
pytest configures it, so that ``import zmtf`` never imports pytest-asyncio (nor pytest)."""

from __future__ import annotations

from typing import Any, AsyncIterator

import pytest_asyncio

from zmtf.framework.graph import fresh_global_graph
from zmtf.testing import LocalCluster, local_cluster


@pytest_asyncio.fixture(loop_scope="function")   # the test's own loop, said out loud
async def zmtf_cluster(request: Any) -> AsyncIterator[LocalCluster]:
    """A local cluster (default: 1 ps + 2 workers on inproc) for one test, with a fresh
    default graph for the test (the caller's comes back after it): two tests that build
    the same model do not collide, as with ``tf.test.TestCase``."""
    marker = request.node.get_closest_marker("zmtf_cluster")
    options = dict(marker.kwargs) if marker else {}
    transport = options.pop("transport", "inproc")
    settings = options.pop("settings", None) or {}
    jobs = options or {"ps": 1, "worker": 2}
    with fresh_global_graph():
        async with local_cluster(jobs, transport, **settings) as cluster:
            yield cluster
