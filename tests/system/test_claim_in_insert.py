"""A job submitted while a runner of its spec waits on this server is claimed by its own insert
on PostgreSQL (``server/store/insert_claims.py``): one statement from the submission to the
runner, the same history as a job the dispatcher claims, a runner gone before the send gives
the job back to the queue, and a waiting runner gets one job however many submissions race for
it. Real in-process server, real runner channels, real databases."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.core.tiers import UNLIMITED_MIN_PRIORITY
from benchrunner.protocol import JsonJobConfig
from benchrunner.server.store import jobs, reports
from benchrunner.server.store.engine import Database
from benchrunner.server.store.insert_claims import ClaimFor
from benchrunner.server.store.listen import libpq_url
from benchrunner.server.store.tables import job, organization, project, report, runner, spec
from tests.databases import postgres_database
from tests.harness import RawChannel, wait_until
from tests.inprocess import InProcessServer, serve_in_process


@pytest.fixture
def server(tmp_path: Path, database_url: str) -> Iterator[InProcessServer]:
    with serve_in_process(tmp_path, database_url) as running:
        yield running


@contextmanager
def postgres_server(tmp_path: Path) -> Iterator[tuple[InProcessServer, str]]:
    with postgres_database() as url, serve_in_process(tmp_path, url) as running:
        yield running, url


def connected_runners(server: InProcessServer) -> int:
    with server.admin() as client:
        return int(client.health().connected_runners)


def run_one(channel: RawChannel, server: InProcessServer) -> str:
    """A job submitted before the runner waits (the dispatcher claims it), taken and completed:
    the server learns which spec the name resolves to. Its UUID."""
    job = server.submit()
    assert channel.claim()["uuid"] == job
    channel.ask({"event": "running"})
    channel.ask({"event": "completed", "job": job, "results": []})
    return job


def wait_for_one(channel: RawChannel, server: InProcessServer) -> None:
    """The runner waits, and the dispatcher's claim for it (which found nothing) is over."""
    channel.send({"event": "ready", "poll_timeout": 30})
    dispatcher = server.state("services").dispatcher
    wait_until(lambda: dispatcher.waiting == 1 and dispatcher.settled, timeout=10)


def history(server: InProcessServer, job_uuid: str) -> list[tuple[str, str | None, str | None]]:
    events = server.job(job_uuid).events or []
    return [(event.event_type, event.message, event.actor) for event in events]


class Statements:
    """The statements the process sends through psycopg's cursors (Direct's raw ones too)."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self._lock = threading.Lock()

    def on_job(self) -> list[str]:
        """Those that read or write jobs (the server's background loops' polls do not)."""
        with self._lock:
            texts = list(self.sent)
        return [text for text in texts if " job" in text or "job." in text]


@contextmanager
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Statements]:
    statements = Statements()
    execute = psycopg.Cursor.execute

    def counting(cursor: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        text = query.decode() if isinstance(query, bytes) else str(query)
        with statements._lock:
            statements.sent.append(" ".join(text.split()))
        return execute(cursor, query, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(psycopg.Cursor, "execute", counting)
        yield statements


@contextmanager
def reports_locked(url: str) -> Iterator[psycopg.Connection[Any]]:
    """A transaction holding a lock that every insert of a report waits for, until the block
    ends (the submission's insert stops there; reads do not)."""
    with psycopg.connect(libpq_url(url)) as conn:
        conn.execute("LOCK TABLE report IN SHARE MODE")
        try:
            yield conn
        finally:
            conn.rollback()


def inserts_waiting(url: str, count: int) -> bool:
    """Whether ``count`` statements of the database wait for a lock."""
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return row is not None and int(row[0]) == count


@pytest.mark.postgresql
def test_a_job_for_an_idle_runner_reaches_it_after_one_statement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with postgres_server(tmp_path) as (server, _):
        channel = server.channel("idle")
        run_one(channel, server)
        with server.admin() as client:  # a job queued for another runner's spec: not ahead
            client.create_spec(
                name="big", architecture="x86_64", cpu=64, memory=1 << 40, disk=1 << 40
            )
            client.create_runner("big", ["big"])
            client.run({"project": "bench", "spec": "big", "template": "bench.hour"})
        wait_for_one(channel, server)
        with counted(monkeypatch) as statements:
            job = server.submit()
            assigned = channel.recv(timeout=10)
            sent = statements.on_job()
        assert assigned["event"] == "job" and assigned["uuid"] == job
        assert len(sent) == 1 and sent[0].startswith("WITH new_report AS (INSERT"), sent
        handed = server.job(job)
        assert handed.status == "claimed" and handed.claimed == handed.created, handed


def test_a_job_claimed_by_its_insert_has_the_history_of_one_the_dispatcher_claimed(
    server: InProcessServer,
) -> None:
    channel = server.channel("idle")
    dispatched = run_one(channel, server)
    wait_for_one(channel, server)
    handed = server.submit()
    assert channel.recv(timeout=10)["uuid"] == handed
    seen = history(server, handed)
    assert seen == history(server, dispatched)[:2]
    assert [event for event, _, _ in seen] == ["job_created", "job_claimed"]
    assert seen[1][2] == "idle"  # the runner's slug


@pytest.mark.postgresql
def test_a_runner_gone_between_the_insert_and_the_send_gets_its_job_requeued(
    tmp_path: Path,
) -> None:
    with postgres_server(tmp_path) as (server, url), ThreadPoolExecutor(1) as pool:
        channel = server.channel("gone")
        run_one(channel, server)
        wait_for_one(channel, server)
        with reports_locked(url):
            submitted: Future[str] = pool.submit(server.submit)
            wait_until(lambda: inserts_waiting(url, 1), timeout=10)
            channel.close()
            wait_until(lambda: connected_runners(server) == 0, timeout=10)
        job = submitted.result(timeout=30)
        wait_until(lambda: server.job(job).status == "pending", timeout=10)
        events = [event for event, _, _ in history(server, job)]
        assert events == ["job_created", "job_claimed", "job_returned"], events
        other = server.channel("other")
        assert other.claim()["uuid"] == job


@pytest.mark.postgresql
def test_two_submissions_racing_for_one_idle_runner_give_it_one_job(tmp_path: Path) -> None:
    with postgres_server(tmp_path) as (server, url), ThreadPoolExecutor(2) as pool:
        channel = server.channel("idle")
        run_one(channel, server)
        wait_for_one(channel, server)
        with reports_locked(url):
            racing = [pool.submit(server.submit) for _ in range(2)]
            wait_until(lambda: inserts_waiting(url, 2), timeout=10)
        jobs = {future.result(timeout=30) for future in racing}
        assigned = channel.recv(timeout=10)
        assert assigned["event"] == "job" and assigned["uuid"] in jobs
        # Its next message answers its own: no second job came meanwhile.
        assert channel.ask({"event": "running"})["event"] != "job"
        (left,) = jobs - {assigned["uuid"]}
        assert server.job(assigned["uuid"]).status == "running"
        assert server.job(left).status == "pending"


class Inserts:
    """Submissions' inserts for spec ``small`` in project ``bench``, each claiming for the
    runner ``r`` when it may, straight through the store on an autocommit connection."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        found = conn.execute(
            sa.select(report.c.project_id, report.c.branch_id, report.c.testbed_id).limit(1)
        ).one()
        self.project_id, self.branch_id, self.testbed_id = found
        self.organization_id = conn.execute(
            sa.select(project.c.organization_id).where(project.c.id == self.project_id)
        ).scalar_one()
        self.spec_id = conn.execute(sa.select(spec.c.id).where(spec.c.name == "small")).scalar_one()
        self.runner_id = conn.execute(
            sa.select(runner.c.id).where(runner.c.slug == "r")
        ).scalar_one()

    def claimed(self) -> bool:
        """Whether a new job's insert claimed it for the runner."""
        at = dt.datetime.now(dt.UTC)
        new_report = reports.NewReport(
            self.project_id,
            None,
            self.branch_id,
            self.testbed_id,
            "json",
            None,
            None,
            None,
            at,
            at,
            at,
        )
        config = JsonJobConfig(template="bench.hour", args={}, timeout=30, iter=1)
        new_job = jobs.NewJob(
            0,
            self.organization_id,
            self.spec_id,
            config,
            UNLIMITED_MIN_PRIORITY,
            at,
            jobs.Origin("test", "127.0.0.1"),
        )
        claim_for = ClaimFor(self.runner_id, "r", "nonce", templates=True)
        created = jobs.job_create_with_report(self.conn, new_report, new_job, None, claim_for)
        assert created is not None
        return created.claimed is not None

    def finish_all(self) -> None:
        """Every job canceled: none ahead, none in flight."""
        self.conn.execute(sa.update(job).values(status=int(JobStatus.CANCELED)))

    def set_runner(self, **values: Any) -> None:
        self.conn.execute(sa.update(runner).where(runner.c.id == self.runner_id).values(**values))


@pytest.mark.postgresql
def test_an_insert_claims_only_what_the_claim_query_would_give_the_runner(tmp_path: Path) -> None:
    """The guards of ``insert_claims.claimant``, on the store itself: a job ahead for the
    runner, a job in flight for it, a paused runner, a runner of another organization."""
    with postgres_server(tmp_path) as (server, url):
        with server.admin() as client:
            client.create_runner("r", ["small"])
        server.submit()  # pending: ahead of the first job inserted below
        db = Database(url, read_threads=1)
        try:
            with db.read_engine.connect() as conn:  # autocommit: each insert commits
                inserted = Inserts(conn)
                assert not inserted.claimed()  # a job ahead (left pending too)
                inserted.finish_all()
                assert inserted.claimed()  # now in flight for the runner
                assert not inserted.claimed()
                inserted.finish_all()
                inserted.set_runner(paused=True)
                assert not inserted.claimed()
                inserted.finish_all()
                inserted.set_runner(paused=False, organization_id=inserted.organization_id)
                assert inserted.claimed()  # a runner of the job's own organization
                inserted.finish_all()
                with server.admin() as client:
                    client.create_organization("other", "team")
                other = conn.execute(
                    sa.select(organization.c.id).where(organization.c.slug == "other")
                ).scalar_one()
                inserted.set_runner(organization_id=other)
                assert not inserted.claimed()
        finally:
            db.close()
