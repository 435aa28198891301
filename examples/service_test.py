"""Testing an AsyncSession service (examples/async_service.py) against faults, as its author
would: the zmtf pytest plugin's ``zmtf_cluster`` fixture gives each test its own in-process
cluster and a fresh default graph, and the cluster's fault injection pauses a task or cuts it
off. The service must answer every request (an error line while a task it needs is gone,
within the liveness bound) and serve again once the fault ends.
Run: python -m pytest examples/service_test.py   (needs pytest-asyncio; in this repository,
whose settings leave the plugin to tests/conftest.py: add ``-p zmtf.testing``)
"""

import asyncio
import contextlib

import pytest

import zmtf as tf
from async_service import build_model, serve   # this folder is on sys.path under pytest

pytestmark = pytest.mark.asyncio
LIVENESS = 0.5   # seconds a silent task is given (ZMTF_LIVENESS_TIMEOUT): small, for tests


@pytest.fixture(autouse=True)
def small_liveness_bound(monkeypatch):
    monkeypatch.setenv("ZMTF_LIVENESS_TIMEOUT", str(LIVENESS))


@contextlib.asynccontextmanager
async def service(cluster):
    """The service on a free port, over a session on the cluster; yields its port."""
    x, score = build_model()
    async with tf.AsyncSession(cluster.target("worker", 0)) as sess:
        await sess.run(tf.global_variables_initializer())
        server = await asyncio.start_server(lambda r, w: serve(sess, x, score, r, w), "127.0.0.1", 0)
        try:
            yield server.sockets[0].getsockname()[1]
        finally:
            server.close()
            await server.wait_closed()


async def ask(port, value):
    """One request on its own connection: the service's answer line."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"{value}\n".encode())
    await writer.drain()
    answer = (await asyncio.wait_for(reader.readline(), 10 * LIVENESS + 5)).decode().strip()
    writer.close()
    await writer.wait_closed()
    return answer


async def test_a_paused_worker_gets_an_error_answer_and_the_service_recovers(zmtf_cluster):
    async with service(zmtf_cluster) as port:
        assert float(await ask(port, 1.0)) > 0
        with zmtf_cluster.pause("worker:1"):   # as if SIGSTOPped: the model's worker is gone
            answer = await ask(port, 2.0)
            assert answer.startswith("error") and "task:1" in answer, answer
        assert float(await ask(port, 3.0)) > 0   # resumed: served again


async def test_cut_off_from_the_ps_the_service_answers_an_error_then_serves_after_heal(
        zmtf_cluster):
    async with service(zmtf_cluster) as port:
        assert float(await ask(port, 1.0)) > 0
        with zmtf_cluster.partition("worker:1", "ps:0"):
            answer = await ask(port, 2.0)
            assert answer.startswith("error"), answer
        assert float(await ask(port, 3.0)) > 0
