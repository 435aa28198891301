"""A TCP proxy that delays and "loses" what it forwards: latency and loss for the network
namespace tests, since this kernel has no ``netem`` (tc's delay/loss qdisc).

Every chunk read from one side is written to the other ``delay`` seconds after it arrived, in
order. Loss cannot be modelled by dropping bytes: the proxy terminates TCP on both sides, so a
byte it dropped would be a byte missing from the stream (a corrupt message), not a lost
packet. What a lost packet costs a TCP connection is time: the receiver waits for the
retransmission, and everything behind it waits too (head-of-line blocking). So each chunk is,
with probability ``loss``, held back ``retransmit`` seconds more (about one RTO on a LAN;
Linux's minimum RTO is 200 ms), and the chunks after it wait behind it.

It runs an asyncio loop on a daemon thread of the test process, pure sockets; it only
connects to the one address it was given.
"""

import asyncio
import random
import threading
import time

CHUNK_BYTES = 64 << 10


class DelayProxy:
    """Listens on ``host`` (a free port) and forwards every connection to ``target``
    ("host:port"), each direction delayed; ``address`` is "host:port" to give to clients."""

    def __init__(self, host, target, delay=0.002, loss=0.01, retransmit=0.2, seed=23):
        self.target_host, port = target.rsplit(":", 1)
        self.target_port = int(port)
        self.delay, self.loss, self.retransmit = delay, loss, retransmit
        self.held_back = 0   # chunks that took the "retransmission" delay, for the test's log
        self._random = random.Random(seed)
        self._loop = asyncio.new_event_loop()
        self._connections = set()
        self._thread = threading.Thread(target=self._loop.run_forever, name="delay-proxy",
                                        daemon=True)
        self._thread.start()
        self._server = self._call(asyncio.start_server(self._accept, host, 0))
        self.address = f"{host}:{self._server.sockets[0].getsockname()[1]}"

    def _call(self, coroutine, timeout=10):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    async def _accept(self, client_reader, client_writer):
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(self.target_host, self.target_port), 5)
        except (OSError, asyncio.TimeoutError):
            client_writer.close()
            return
        writers = (client_writer, upstream_writer)
        self._connections.add(writers)
        try:
            await asyncio.gather(self._pump(client_reader, upstream_writer),
                                 self._pump(upstream_reader, client_writer))
        finally:
            self._connections.discard(writers)
            for writer in writers:
                writer.close()

    async def _pump(self, reader, writer):
        """Forward ``reader`` to ``writer``, each chunk written when it is due."""
        queue = asyncio.Queue()

        async def read():
            due = 0.0
            try:
                while chunk := await reader.read(CHUNK_BYTES):
                    hold = self.delay
                    if self._random.random() < self.loss:
                        hold += self.retransmit
                        self.held_back += 1
                    due = max(due, time.monotonic() + hold)   # in order: none overtakes one held
                    queue.put_nowait((due, chunk))
            except OSError:
                pass
            queue.put_nowait((0.0, b""))

        async def write():
            while True:
                due, chunk = await queue.get()
                if not chunk:
                    break
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                writer.write(chunk)
                await writer.drain()
            writer.close()   # one side closed (or broke): close the other, as a cut connection

        reading = asyncio.ensure_future(read())
        try:
            await write()
        except OSError:
            pass
        finally:
            reading.cancel()

    def close(self):
        """Stop listening, cut every forwarded connection, stop the loop."""
        async def stop():
            self._server.close()
            for writers in list(self._connections):
                for writer in writers:
                    writer.transport.abort()
        try:
            self._call(stop())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            if not self._thread.is_alive():
                self._loop.close()
