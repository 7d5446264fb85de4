"""A job's detail and a page of jobs cost a fixed number of statements, however many events
the job has or jobs the page holds (counted with SQLAlchemy's ``before_cursor_execute`` on
the in-process server's engines).

The requests are anonymous reads of a public project. ``Direct`` statements (the project
lookup; a signed-in caller's token lookup) bypass SQLAlchemy's events; each is one fixed
statement."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from benchrunner.client import BenchrunnerClient
from tests.inprocess import InProcessServer, serve_in_process


class StatementCounter:
    def __init__(self) -> None:
        self.statements: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        with self._lock:
            self.statements.append(statement)


@contextmanager
def counted(server: InProcessServer) -> Iterator[StatementCounter]:
    db = server.state("ctx").db
    # PostgreSQL's read engine is the write engine with options (autocommit): the same pool,
    # and the write engine's listeners already see its statements.
    shared = db.read_engine.pool is db.write_engine.pool
    engines = [db.write_engine] if shared else [db.read_engine, db.write_engine]
    counter = StatementCounter()
    for engine in engines:
        sa.event.listen(engine, "before_cursor_execute", counter)
    try:
        yield counter
    finally:
        for engine in engines:
            sa.event.remove(engine, "before_cursor_execute", counter)


@pytest.fixture
def server(tmp_path: Path, database_url: str) -> Iterator[InProcessServer]:
    with serve_in_process(tmp_path, database_url) as running:
        yield running


def _detail_statements(server: InProcessServer, job_uuid: str) -> tuple[int, int]:
    with BenchrunnerClient(server.url, None) as anonymous, counted(server) as counter:
        events = len(anonymous.get_job("bench", job_uuid).events or [])
    return events, len(counter.statements)


def test_job_detail_costs_the_same_with_2_and_with_50_events(server: InProcessServer) -> None:
    channel = server.channel("r1")
    small = server.submit()
    assert channel.claim()["uuid"] == small  # job_created, job_claimed
    large = server.submit()
    with server.admin() as admin:
        admin.cancel_job("bench", large)  # job_created, job_cancel_requested, job_canceled
        for _ in range(47):
            admin.rerun_job("bench", large)  # job_rerun on the old job, each time
    channel.close()
    with server.admin() as admin:  # finished too: a finished job's view reads its output
        admin.cancel_job("bench", small)  # job_cancel_requested, job_canceled
    events_small, statements_small = _detail_statements(server, small)
    events_large, statements_large = _detail_statements(server, large)
    assert (events_small, events_large) == (4, 50)
    assert statements_small == statements_large
    # The job with its spec, runner and report; its events; its stored output's row. (The
    # project is read by a Direct statement, which the event does not see.)
    assert statements_large == 3


def _list_statements(server: InProcessServer, per_page: int) -> tuple[int, int]:
    with BenchrunnerClient(server.url, None) as anonymous, counted(server) as counter:
        found = anonymous.list_jobs("bench", per_page=per_page, status="pending,claimed")
    return len(found), len(counter.statements)


def test_a_page_of_jobs_costs_the_same_whatever_its_size(server: InProcessServer) -> None:
    channel = server.channel("r1")
    for _ in range(30):
        server.submit()
    channel.claim()
    channel.close()
    listed_small, statements_small = _list_statements(server, 2)
    listed_large, statements_large = _list_statements(server, 30)
    assert (listed_small, listed_large) == (2, 30)
    assert statements_small == statements_large
    # The count, the page's ids (an index walk) and their rows (and the project, by Direct).
    assert statements_large == 3
