"""Job event names: what status each leaves a job in, and the migration that renamed the
events stored before the audit names."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.engine import Connection

from benchrunner.core.events import JobEvent, status_reached
from benchrunner.core.states import JobStatus
from benchrunner.core.tiers import Plan
from benchrunner.protocol import JsonJobConfig
from benchrunner.server.store import accounts, jobs, reports
from benchrunner.server.store.engine import Database
from benchrunner.server.store.migrate import alembic_config
from benchrunner.server.store.tables import job_event
from benchrunner.server.store.tables import spec as spec_table
from benchrunner.server.store.transitions import event_add
from tests.new_reports import new_report_on

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("event", "status"),
    [
        (JobEvent.CREATED, JobStatus.PENDING),
        (JobEvent.CLAIMED, JobStatus.CLAIMED),
        (JobEvent.RETURNED, JobStatus.PENDING),
        (JobEvent.STARTED, JobStatus.RUNNING),
        (JobEvent.COMPLETED, JobStatus.COMPLETED),
        (JobEvent.PROCESSED, JobStatus.PROCESSED),
        (JobEvent.FAILED, JobStatus.FAILED),
        (JobEvent.HEARTBEAT_STALE_RECOVERED, JobStatus.FAILED),
        (JobEvent.RECOVERED_AFTER_CRASH, JobStatus.FAILED),
        (JobEvent.CANCELED, JobStatus.CANCELED),
        (JobEvent.TIMEOUT, JobStatus.CANCELED),
        (JobEvent.CANCEL_REQUESTED, None),
        (JobEvent.RERUN, None),
        ("failed", None),  # an old name, if one were left, moves nothing it can vouch for
    ],
)
def test_the_status_each_event_leaves(event: str, status: JobStatus | None) -> None:
    assert status_reached(event) == status


def test_every_event_is_named_in_the_audit_vocabulary() -> None:
    assert {e.value for e in JobEvent} >= {
        "job_created",
        "job_cancel_requested",
        "job_canceled",
        "job_timeout",
        "job_failed",
        "recovered_after_crash",
        "heartbeat_stale_recovered",
    }


# (old type, message, type after the migration)
OLD_EVENTS = [
    ("created", "job created", "job_created"),
    ("claimed", "claimed by runner", "job_claimed"),
    ("running", "runner started the benchmark", "job_started"),
    ("failed", "heartbeat_timeout: no heartbeat for 0:00:30", "heartbeat_stale_recovered"),
    ("completed", "runner delivered a result after the job had failed", "job_completed"),
    ("processed", "parsed 2 metrics", "job_processed"),
    ("failed", "orphaned: claimed before the server restarted", "recovered_after_crash"),
    ("failed", "runner reported failure: exit 1", "job_failed"),
    ("canceled", "sweeper: job_timeout_exceeded: ran longer than 60 s", "job_timeout"),
    ("canceled", "canceled by admin@test.dev", "job_canceled"),
]


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    database = Database(database_url)
    yield database
    database.close()


def _job_with_old_events(conn: Connection) -> int:
    org = accounts.organization_create(conn, "acme", Plan.TEAM, NOW, leader_id=None)
    project = accounts.project_create(conn, org.id, "bench", "public", NOW)
    # the spec row as the schema of revision 0005 has it (later revisions add columns)
    spec_0005 = sa.table(  # only its columns: today's table adds some with Python defaults
        "spec",
        *(
            sa.column(name, spec_table.c[name].type)
            for name in (
                "id",
                "uuid",
                "name",
                "slug",
                "architecture",
                "cpu",
                "memory",
                "disk",
                "network",
                "created",
                "modified",
            )
        ),
    )
    spec_id = conn.execute(
        sa.insert(spec_0005)
        .values(
            uuid=uuid.uuid4(),
            name="small",
            slug="small",
            architecture="x86_64",
            cpu=1,
            memory=1 << 30,
            disk=1 << 30,
            network=False,
            created=NOW,
            modified=NOW,
        )
        .returning(spec_0005.c.id)
    ).scalar_one()
    report_id, _ = reports.report_create(
        conn, new_report_on(conn, project.id, "main", "tb", "json", NOW)
    )
    job_id, _ = jobs.job_create(
        conn,
        jobs.NewJob(
            report_id=report_id,
            organization_id=org.id,
            spec_id=spec_id,
            config=JsonJobConfig(timeout=60, template="t", args={}),
            priority=0,
            now=NOW,
            origin=jobs.Origin(actor="test", source_ip="10.0.0.1"),
        ),
    )
    conn.execute(job_event.delete().where(job_event.c.job_id == job_id))
    for old, message, _ in OLD_EVENTS:
        event_add(conn, job_id, old, message, "system", {}, NOW)
    return job_id


def _types(conn: Connection, job_id: int) -> list[str]:
    query = sa.select(job_event.c.event_type).where(job_event.c.job_id == job_id)
    return list(conn.execute(query.order_by(job_event.c.id)).scalars())


def test_the_migration_renames_old_events_and_back(db: Database) -> None:
    config = alembic_config(db.write_engine)
    command.upgrade(config, "0005")
    job_id = db.write_sync(_job_with_old_events)
    command.upgrade(config, "head")
    assert db.read_sync(_types, job_id) == [new for _, _, new in OLD_EVENTS]
    command.downgrade(config, "0005")
    assert db.read_sync(_types, job_id) == [old for old, _, _ in OLD_EVENTS]
