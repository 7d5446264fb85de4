"""The server's main loop sleeps while nothing happens: one tick a second for the ``Date``
header, and an exit asked from a signal handler or another thread wakes it at once."""

from __future__ import annotations

import asyncio
import threading

import uvicorn

from benchrunner.server.app.factory import DATE_HEADER_PERIOD, BenchrunnerServer
from tests.loop_timers import timers


async def _app(scope: object, receive: object, send: object) -> None:
    raise AssertionError("no request is served here")


async def _ticking(loop: asyncio.AbstractEventLoop) -> None:
    """Until the main loop has armed its tick (10 s at most)."""
    deadline = loop.time() + 10
    while not timers(loop):
        assert loop.time() < deadline, "the main loop armed no tick"
        await asyncio.sleep(0.001)


def _server() -> BenchrunnerServer:
    config = uvicorn.Config(_app, log_config=None, lifespan="off")
    config.load()
    return BenchrunnerServer(config)


def test_the_main_loop_keeps_no_timer_shorter_than_the_date_headers_period() -> None:
    async def scenario() -> None:
        server = _server()
        loop = asyncio.get_running_loop()
        running = asyncio.create_task(server.main_loop())
        await _ticking(loop)
        pending = [handle.when() - loop.time() for handle in timers(loop)]
        assert pending and min(pending) > DATE_HEADER_PERIOD / 2
        assert any(name == b"date" for name, _ in server.server_state.default_headers)
        running.cancel()

    asyncio.run(scenario())


def test_an_exit_asked_from_another_thread_ends_the_main_loop_at_once() -> None:
    async def scenario() -> None:
        server = _server()
        running = asyncio.create_task(server.main_loop())
        await _ticking(asyncio.get_running_loop())
        asking = threading.Thread(target=setattr, args=(server, "should_exit", True))
        asking.start()
        await asyncio.wait_for(running, DATE_HEADER_PERIOD / 2)
        asking.join()
        assert server.should_exit

    asyncio.run(scenario())
