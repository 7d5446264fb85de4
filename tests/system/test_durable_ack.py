"""The server answers a terminal message with ``ack`` only after the SQLite WAL holding its
status change has been synced to disk (docs/explanation/results-safety.md)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchrunner.server.store.engine import fdatasync_path
from tests.databases import fresh_database
from tests.inprocess import InProcessServer, serve_in_process


@pytest.fixture
def server(tmp_path: Path) -> Iterator[InProcessServer]:
    with (
        fresh_database("sqlite", tmp_path) as url,
        serve_in_process(tmp_path, url) as running,
    ):
        yield running


def test_the_ack_of_a_result_waits_for_the_wal_sync(server: InProcessServer) -> None:
    channel = server.channel("patient")
    job_uuid = server.submit("bench.noop")
    channel.claim()
    assert channel.ask({"event": "running"})["event"] == "ack"
    syncs: list[Path] = []
    held = threading.Event()
    release = threading.Event()

    def held_sync(path: Path) -> None:
        syncs.append(path)
        held.set()
        release.wait(timeout=60)
        fdatasync_path(path)

    server.state("ctx").db.sync_file = held_sync
    result = {"exit_code": 0, "stdout": '{"noop": {"latency": {"value": 3}}}'}
    channel.send({"event": "completed", "job": job_uuid, "results": [result]})
    assert held.wait(timeout=30), "the server acknowledged without syncing"
    assert server.job(job_uuid).status in ("completed", "processed")  # committed...
    with pytest.raises(TimeoutError):
        channel.recv(timeout=0.3)  # ...but not acknowledged while the sync is held
    release.set()
    assert channel.recv() == {"event": "ack", "job": job_uuid}
    assert [path.name for path in syncs] == ["benchrunner.db-wal"]
