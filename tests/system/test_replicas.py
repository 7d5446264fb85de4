"""Several server replicas on one PostgreSQL database, sharing one queue
(docs/decisions/replicas.md).

Only PostgreSQL can be shared by server processes, so these tests run on it alone; they start
real replicas (``benchrunner server`` processes) on one fresh database and one data directory.
"""

from __future__ import annotations

import collections
import contextlib
import datetime as dt
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
import sqlalchemy as sa

from benchrunner.api.jobs import Job
from benchrunner.api.server import Health
from benchrunner.core.states import JobStatus
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.tables import job, job_event, metric, report
from benchrunner.server.store.tables import runner as runner_table
from tests.databases import postgres_database
from tests.harness import (
    SHORT_HEARTBEAT_TIMEOUT,
    Deployment,
    ServerProcess,
    deploy,
    wait_until,
)

pytestmark = pytest.mark.postgresql


@contextlib.contextmanager
def _replicas(tmp_path: Path, **options: Any) -> Iterator[tuple[Deployment, ServerProcess]]:
    with (
        postgres_database() as url,
        deploy(tmp_path, url, claim_poll_interval=60.0, **options) as first,
    ):
        yield first, first.add_replica("replica-b")


@pytest.fixture
def two_replicas(tmp_path: Path) -> Iterator[tuple[Deployment, ServerProcess]]:
    with _replicas(tmp_path) as replicas:
        yield replicas


@pytest.fixture
def two_replicas_short_heartbeat(tmp_path: Path) -> Iterator[tuple[Deployment, ServerProcess]]:
    """For the sweeper's tests, where the heartbeat timeout is what is under test."""
    with _replicas(tmp_path, heartbeat_timeout=SHORT_HEARTBEAT_TIMEOUT) as replicas:
        yield replicas


def health(server: ServerProcess) -> Health:
    with server.client(None) as client:
        return client.health()


def test_a_job_created_on_one_replica_wakes_a_runner_waiting_on_another(
    two_replicas: tuple[Deployment, ServerProcess],
) -> None:
    deployment, replica_b = two_replicas
    channel = deployment.channel("idle-on-b", server=replica_b)
    channel.send({"event": "ready", "poll_timeout": 900})
    wait_until(lambda: health(replica_b).waiting_runners == 1, message="runner waiting on B")
    # The safety poll is 60 s here: only the LISTEN/NOTIFY wake-up can deliver within 10 s.
    job_uuid = deployment.submit("bench.noop")  # through replica A
    message = channel.recv(timeout=10)
    assert message["event"] == "job" and message["uuid"] == job_uuid


def test_cancel_through_one_replica_reaches_the_runner_on_another(
    two_replicas: tuple[Deployment, ServerProcess],
) -> None:
    deployment, replica_b = two_replicas
    channel = deployment.channel("busy-on-b", server=replica_b)
    job_uuid = deployment.submit("bench.sleep", {"ms": 60000})
    assert channel.claim()["uuid"] == job_uuid
    assert channel.ask({"event": "running"})["event"] == "ack"
    with deployment.admin() as client:  # replica A
        client.cancel_job(deployment.project, job_uuid)
    # Replica B answers the job's heartbeats from memory; it learns of the cancel when it next
    # stores the heartbeats it heard (at most one write interval: server/channel/heartbeats.py)
    # and tells the runner on the heartbeat after that. The runner heartbeats twice a second.
    told = wait_until(
        lambda: channel.ask({"event": "heartbeat"})["event"] == "cancel",
        timeout=60,
        interval=0.5,
        message="the runner told to cancel",
    )
    assert told
    assert channel.ask({"event": "canceled", "job": job_uuid})["event"] == "ack"
    assert deployment.status(job_uuid) == "canceled"


def test_sweeper_leadership_moves_when_the_leader_dies(
    two_replicas: tuple[Deployment, ServerProcess],
) -> None:
    deployment, replica_b = two_replicas
    replica_a = deployment.server
    leaders = wait_until(
        lambda: [s for s in (replica_a, replica_b) if health(s).sweeper_leader],
        message="a sweeper leader",
    )
    assert len(leaders) == 1
    survivor = replica_b if leaders[0] is replica_a else replica_a
    assert health(survivor).sweeper_leader is False
    leaders[0].kill(signal.SIGKILL)
    wait_until(lambda: health(survivor).sweeper_leader, message="the survivor to lead")


def test_a_dead_replicas_in_flight_jobs_are_swept_by_the_survivor(
    two_replicas_short_heartbeat: tuple[Deployment, ServerProcess],
) -> None:
    deployment, replica_b = two_replicas_short_heartbeat
    running_on_a = deployment.channel("on-a")
    running = deployment.submit("bench.sleep", {"ms": 60000})
    assert running_on_a.claim()["uuid"] == running
    running_on_a.ask({"event": "running"})
    claimed_on_a = deployment.channel("claimed-on-a")
    claimed = deployment.submit("bench.sleep", {"ms": 60000})
    assert claimed_on_a.claim()["uuid"] == claimed
    deployment.server.kill(signal.SIGKILL)  # neither job's connection survives anywhere
    killed_at = dt.datetime.now(dt.UTC)

    with replica_b.client() as client:
        for job_uuid in (running, claimed):

            def ended(job_uuid: str = job_uuid) -> Job | None:
                return _finished(client.get_job("bench", job_uuid))

            job_view = wait_until(ended, timeout=30, message=f"the sweeper to end {job_uuid}")
            assert job_view.status == "failed"
            [failure] = [e for e in job_view.events if e.event_type == "heartbeat_stale_recovered"]
            assert "heartbeat_timeout" in str(failure.message)
            # Failed after A died, so by B's sweeper, not by A's own timer before the kill.
            assert dt.datetime.fromisoformat(failure.created) >= killed_at, failure


def test_results_a_dead_replica_stored_but_never_processed_are_processed_by_the_survivor(
    two_replicas: tuple[Deployment, ServerProcess],
) -> None:
    deployment, replica_b = two_replicas
    channel = deployment.channel("quick-on-a")
    job_uuid = deployment.submit("bench.noop")
    assert channel.claim()["uuid"] == job_uuid
    channel.ask({"event": "running"})
    result = {"exit_code": 0, "stdout": '{"noop": {"latency": {"value": 7}}}'}
    channel.ask({"event": "completed", "job": job_uuid, "results": [result]})
    report_uuid = deployment.wait_status(job_uuid, "processed").report
    channel.close()
    deployment.server.kill(signal.SIGKILL)
    # Rewind to what A's death between "result stored" and "processed" leaves behind.
    engine = make_engine(replica_b.db, writer=True)
    with engine.begin() as conn:
        conn.execute(job.update().where(job.c.uuid == UUID(job_uuid)).values(status=3))
        report_id = conn.execute(
            sa.select(report.c.id).where(report.c.uuid == UUID(report_uuid))
        ).scalar_one()
        conn.execute(metric.delete().where(metric.c.report_id == report_id))
    engine.dispose()
    with replica_b.client() as client:  # B keeps running: no restart re-queues the job
        wait_until(
            lambda: client.get_job(deployment.project, job_uuid).status == "processed",
            timeout=30,
            message="the survivor's sweeper to process the orphaned result",
        )
        results = client.get_report(deployment.project, report_uuid).results
    assert results[0][0].measures[0].metric.value == 7.0


def _finished(view: Job) -> Job | None:
    return view if view.status in ("failed", "canceled", "processed") else None


# ------------------------------------------------------------------ the whole system


@pytest.mark.timeout(900)
def test_two_replicas_share_the_queue_and_survive_losing_one(
    tmp_path: Path, two_replicas: tuple[Deployment, ServerProcess]
) -> None:
    deployment, replica_b = two_replicas
    replica_a = deployment.server
    tally = tmp_path / "tally.txt"
    tally.touch()
    runners = [
        deployment.runner_process(
            f"runner-{i}",
            servers=[replica_a, replica_b] if i % 2 == 0 else [replica_b, replica_a],
        ).start()
        for i in range(6)
    ]
    assert wait_until(lambda: all(health(s).connected_runners == 3 for s in (replica_a, replica_b)))

    # Phase 1: 200 jobs submitted through both replicas, each executed exactly once (six runners
    # racing on two replicas; more jobs prove no more and cost minutes of CI).
    tags = _submit_tallies(deployment, (replica_a, replica_b), tally, range(200))
    wait_until(
        lambda: _counts(replica_b.db, tags).get(JobStatus.PROCESSED, 0) == len(tags),
        timeout=400,
        interval=1.0,
        message="200 jobs processed",
    )
    executions = collections.Counter(tally.read_text().split())
    assert set(executions) == set(tags.values())
    assert max(executions.values()) == 1

    # Phase 2: replica A dies with SIGKILL while jobs are in flight on its connections. The
    # jobs wait for a gate opened after the kill, so one seen running is still running at it.
    gate = tmp_path / "gate"
    more = _submit_tallies(deployment, (replica_b,), tally, range(200, 300), gate=gate)
    on_a = {runner.slug for runner in runners[::2]}  # connected to A first, and still there
    wait_until(
        lambda: len(_running_on(replica_b.db, more, on_a)) >= 2,
        timeout=60,
        message="jobs running on the runners of the replica to be killed",
    )
    assert health(replica_a).connected_runners == len(on_a)
    killed_at = dt.datetime.now(dt.UTC)
    replica_a.kill(signal.SIGKILL)
    gate.touch()
    wait_until(
        lambda: health(replica_b).connected_runners == len(runners),
        timeout=60,
        message="every runner on the surviving replica",
    )
    wait_until(
        lambda: (
            not any(
                _counts(replica_b.db, more).get(s, 0)
                for s in (
                    JobStatus.PENDING,
                    JobStatus.CLAIMED,
                    JobStatus.RUNNING,
                    JobStatus.COMPLETED,
                )
            )
        ),
        timeout=240,
        interval=1.0,
        message="no phase-2 job left pending or in flight",
    )
    executions = collections.Counter(tally.read_text().split())
    assert max(executions.values()) == 1, "a job ran twice"
    outcomes = _outcomes(replica_b.db, more)
    for job_uuid, (status, reason) in outcomes.items():
        if status == JobStatus.PROCESSED:
            assert executions[more[job_uuid]] == 1, f"{job_uuid} processed but never ran"
        else:
            assert status in (JobStatus.FAILED, JobStatus.CANCELED), (job_uuid, status)
            assert reason, f"{job_uuid} ended {status.wire} without a recorded reason"
    assert sum(1 for status, _ in outcomes.values() if status == JobStatus.PROCESSED) > 0
    # Some job was running on a runner of A when A died, and its result still arrived (via B).
    delivered_late = _delivered_across_the_kill(replica_b.db, more, on_a, killed_at)
    assert delivered_late, (
        "no result of a job in flight on the dead replica was delivered; the jobs its runners "
        f"had started: {_started_on(replica_b.db, more, on_a, killed_at)}"
    )
    for runner in runners:
        assert runner.proc is not None and runner.proc.poll() is None, runner.output()


def _submit_tallies(
    deployment: Deployment,
    servers: tuple[ServerProcess, ...],
    tally: Path,
    numbers: range,
    gate: Path | None = None,
) -> dict[str, str]:
    """Submit one tally job per number, alternating replicas, each waiting for ``gate`` when one
    is given; returns job uuid -> tag."""
    tags: dict[str, str] = {}
    clients = [server.client() for server in servers]
    try:
        for number in numbers:
            client = clients[number % len(clients)]
            body = {
                "project": deployment.project,
                "spec": deployment.spec,
                "template": "bench.tally",
                "args": {
                    "file": str(tally),
                    "tag": f"job-{number}",
                    "gate": str(gate) if gate else "",
                },
                "settings": {"adapter": "json"},
            }
            tags[str(client.run(body).job)] = f"job-{number}"
    finally:
        for client in clients:
            client.close()
    return tags


def _rows(db_url: str, query: sa.Select[Any]) -> list[tuple[Any, ...]]:
    """``query``'s rows, read from the shared database on a connection of its own."""
    engine = make_engine(db_url, writer=False)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(query)]
    finally:
        engine.dispose()


def _of(tags: dict[str, str]) -> sa.ColumnElement[bool]:
    return job.c.uuid.in_([UUID(u) for u in tags])


def _started_by(
    event: sa.FromClause, runner_slugs: set[str], before: dt.datetime
) -> tuple[sa.ColumnElement[bool], ...]:
    """``event`` is a job's start by one of ``runner_slugs`` before ``before``."""
    return (
        event.c.event_type == "job_started",
        event.c.actor.in_(sorted(runner_slugs)),
        event.c.created < before,
    )


def _delivered_across_the_kill(
    db_url: str, tags: dict[str, str], runner_slugs: set[str], killed_at: dt.datetime
) -> list[str]:
    """Jobs that started on one of ``runner_slugs`` before ``killed_at`` and completed after."""
    running, completed = job_event.alias("running"), job_event.alias("completed")
    query = (
        sa.select(job.c.uuid)
        .join(running, running.c.job_id == job.c.id)
        .join(completed, completed.c.job_id == job.c.id)
        .where(
            _of(tags),
            *_started_by(running, runner_slugs, killed_at),
            completed.c.event_type == "job_completed",
            completed.c.created > killed_at,
        )
    )
    return [str(row[0]) for row in _rows(db_url, query)]


def _running_on(db_url: str, tags: dict[str, str], runner_slugs: set[str]) -> list[str]:
    """Jobs of ``tags`` running now on one of ``runner_slugs``."""
    query = (
        sa.select(job.c.uuid)
        .join(runner_table, runner_table.c.id == job.c.runner_id)
        .where(
            _of(tags),
            job.c.status == int(JobStatus.RUNNING),
            runner_table.c.slug.in_(sorted(runner_slugs)),
        )
    )
    return [str(row[0]) for row in _rows(db_url, query)]


def _started_on(
    db_url: str, tags: dict[str, str], runner_slugs: set[str], before: dt.datetime
) -> dict[str, tuple[JobStatus, str]]:
    """Outcomes of the jobs of ``tags`` that one of ``runner_slugs`` started before ``before``:
    what a failure of the scenario reports."""
    query = (
        sa.select(job.c.uuid)
        .join(job_event, job_event.c.job_id == job.c.id)
        .where(_of(tags), *_started_by(job_event, runner_slugs, before))
    )
    outcomes = _outcomes(db_url, tags)
    return {uuid: outcomes[uuid] for uuid in sorted(str(row[0]) for row in _rows(db_url, query))}


def _counts(db_url: str, tags: dict[str, str]) -> dict[JobStatus, int]:
    return collections.Counter(status for status, _ in _outcomes(db_url, tags).values())


def _outcomes(db_url: str, tags: dict[str, str]) -> dict[str, tuple[JobStatus, str]]:
    """Job uuid -> (status, message of its last event) read from the shared database."""
    last_event = (
        sa.select(job_event.c.message)
        .where(job_event.c.job_id == job.c.id)
        .order_by(job_event.c.id.desc())
        .limit(1)
        .scalar_subquery()
    )
    rows = _rows(db_url, sa.select(job.c.uuid, job.c.status, last_event).where(_of(tags)))
    return {str(row[0]): (JobStatus(row[1]), row[2] or "") for row in rows}
