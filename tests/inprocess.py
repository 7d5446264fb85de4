"""A real server on a loopback port, run in this test process so that a test can drive its time
(``ManualClock``) and look at its in-memory state (``InProcessServer.app``).

The server is the application of ``benchrunner server`` served by uvicorn with the same channel
settings; only the clocks differ. Everything over the wire is real HTTP and WebSocket.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI
from websockets.sync.client import connect

from benchrunner.api.jobs import Job
from benchrunner.client import BenchrunnerClient
from benchrunner.protocol import EXTENSIONS_HEADER, OUR_EXTENSIONS
from benchrunner.server.admin.bootstrap import bootstrap_admin
from benchrunner.server.app.factory import BenchrunnerServer, create_app
from benchrunner.server.app.websocket_protocol import LingeringCloseProtocol
from benchrunner.server.config import ServerSettings
from tests.harness import TEST_TEMPLATES, RawChannel, wait_until

LONG_TEMPLATE = """
[templates."bench.hour"]
description = "Never run: a raw channel takes it, and time is the test's"
command = ["true"]
timeout = 3600
"""


class ManualClock:
    """Wall and monotonic time that move only when the test says so, together.

    ``advance`` may be called from the test's thread while the server's event loop sleeps in
    ``sleep_until``: sleepers are woken through their loop.
    """

    def __init__(self) -> None:
        self._start = dt.datetime.now(dt.UTC)
        self._elapsed = 0.0
        self._lock = threading.Lock()
        self._sleepers: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    def now(self) -> dt.datetime:
        with self._lock:
            return self._start + dt.timedelta(seconds=self._elapsed)

    def monotonic(self) -> float:
        with self._lock:
            return 1000.0 + self._elapsed

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._elapsed += seconds
            sleepers = list(self._sleepers)
        for loop, woken in sleepers:
            with contextlib.suppress(RuntimeError):  # that loop has closed
                loop.call_soon_threadsafe(woken.set)

    async def sleep_until(self, deadline: float) -> None:
        loop = asyncio.get_running_loop()
        while self.monotonic() < deadline:
            sleeper = (loop, asyncio.Event())
            with self._lock:
                self._sleepers.add(sleeper)
            try:
                if self.monotonic() < deadline:  # not advanced since the check above
                    await sleeper[1].wait()
            finally:
                with self._lock:
                    self._sleepers.discard(sleeper)


class InProcessChannel(RawChannel):
    def __init__(self, ws_url: str, runner: str, token: str) -> None:
        self.ws = connect(
            f"{ws_url}/v0/runners/{runner}/channel",
            additional_headers={
                "Authorization": f"Bearer {token}",
                EXTENSIONS_HEADER: ", ".join(OUR_EXTENSIONS),
            },
            open_timeout=10,
            legacy=True,
        )


@dataclass
class InProcessServer:
    app: FastAPI
    port: int
    token: str
    clock: ManualClock
    uvicorn: uvicorn.Server
    """``uvicorn.should_exit = True`` begins the shutdown a SIGTERM would."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def admin(self) -> BenchrunnerClient:
        return BenchrunnerClient(self.url, self.token)

    def state(self, name: str) -> Any:
        """``services``, ``lifecycle``, ``hub`` or ``ctx`` of the running application."""
        return getattr(self.app.state, name)

    def channel(self, name: str) -> InProcessChannel:
        with self.admin() as client:
            created = client.create_runner(name, ["small"])
        return InProcessChannel(f"ws://127.0.0.1:{self.port}", created.slug, created.token)

    def submit(self, template: str = "bench.hour", **job: Any) -> str:
        body: dict[str, Any] = {"project": "bench", "spec": "small", "template": template}
        if job:
            body["job"] = job
        with self.admin() as client:
            return str(client.run(body).job)

    def job(self, job_uuid: str) -> Job:
        with self.admin() as client:
            return client.get_job("bench", job_uuid)


@contextlib.contextmanager
def serve_in_process(
    tmp: Path, db: str, *, setup: bool = True, ws_ping_interval: float = 20.0, **settings: Any
) -> Iterator[InProcessServer]:
    """A server on ``db`` with an organization, project ``bench`` and spec ``small`` (created
    unless ``setup`` is false: a restart on the database of an earlier one); its clock is a
    ``ManualClock``. The sweeper and the safety-net poll are slowed so that only what the test
    does moves a job."""
    templates = tmp / "templates.toml"
    templates.write_text(TEST_TEMPLATES + LONG_TEMPLATE)
    # Bound here and handed to uvicorn: no other process can take the port between its choice
    # and the server's start.
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    port = int(listening.getsockname()[1])
    options: dict[str, Any] = {
        "port": port,
        "db": db,
        "data_dir": tmp / "data",
        "templates": templates,
        "sweep_interval": 3600.0,
        **settings,
    }
    config = ServerSettings(**options)
    clock = ManualClock()
    app = create_app(config, clock=clock, monotonic=clock)
    server = BenchrunnerServer(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            ws=LingeringCloseProtocol,
            ws_max_size=config.request_body_max_bytes,
            ws_per_message_deflate=False,
            ws_ping_interval=ws_ping_interval,
            log_config=None,
            access_log=False,
        )
    )
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [listening]}, name="in-process-server", daemon=True
    )
    token = bootstrap_admin(config.database_url(), "admin@test.dev")
    thread.start()
    try:
        wait_until(lambda: server.started, timeout=30, message="in-process server started")
        running = InProcessServer(app, port, token, clock, server)
        if setup:
            with running.admin() as client:
                client.create_organization("acme", "team")
                client.create_project("acme", "bench", "public")
                client.create_spec(
                    name="small",
                    architecture="x86_64",
                    cpu=1,
                    memory=1 << 30,
                    disk=1 << 30,
                    network=False,
                )
        yield running
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listening.close()
