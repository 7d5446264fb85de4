"""Named operations on jobs: create, claim, the transitions, heartbeats and reads.

Every status change goes through ``_transition``: one guarded ``UPDATE ... WHERE id = ? AND
status IN (sources)`` plus a ``job_event`` row, in the caller's transaction. Zero rows updated
means someone else changed the job first; callers re-read and answer from the current state.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.states import IN_FLIGHT, JobStatus, sources_of
from benchrunner.core.tiers import PER_ORGANIZATION_MIN_PRIORITY, UNLIMITED_MIN_PRIORITY
from benchrunner.protocol import JsonJobConfig
from benchrunner.server.store.tables import (
    job,
    job_event,
    project,
    report,
    runner,
    runner_spec,
    spec,
)

_IN_FLIGHT = [int(s) for s in IN_FLIGHT]


@dataclass(frozen=True)
class JobRow:
    id: int
    uuid: UUID
    report_id: int
    organization_id: int
    source_ip: str
    spec_id: int
    config: JsonJobConfig
    timeout: int
    priority: int
    status: JobStatus
    runner_id: int | None
    claimed: dt.datetime | None
    started: dt.datetime | None
    completed: dt.datetime | None
    last_heartbeat: dt.datetime | None
    nonce: str | None
    kind: str
    created: dt.datetime
    modified: dt.datetime
    project_id: int
    project_uuid: UUID

    @classmethod
    def from_row(cls, row: Any) -> JobRow:
        return cls(
            id=row.id,
            uuid=row.uuid,
            report_id=row.report_id,
            organization_id=row.organization_id,
            source_ip=row.source_ip,
            spec_id=row.spec_id,
            config=JsonJobConfig.model_validate_json(row.config),
            timeout=row.timeout,
            priority=row.priority,
            status=JobStatus(row.status),
            runner_id=row.runner_id,
            claimed=row.claimed,
            started=row.started,
            completed=row.completed,
            last_heartbeat=row.last_heartbeat,
            nonce=row.nonce,
            kind=row.kind,
            created=row.created,
            modified=row.modified,
            project_id=row.project_id,
            project_uuid=row.project_uuid,
        )


_JOBS = (
    sa.select(job, report.c.project_id, project.c.uuid.label("project_uuid"))
    .join(report, report.c.id == job.c.report_id)
    .join(project, project.c.id == report.c.project_id)
)
_JOB_BY_ID = _JOBS.where(job.c.id == sa.bindparam("job_id"))
_JOB_BY_UUID = _JOBS.where(job.c.uuid == sa.bindparam("job_uuid"))


def _select_jobs() -> sa.Select[Any]:
    return _JOBS


def job_get(conn: Connection, job_id: int) -> JobRow | None:
    row = conn.execute(_JOB_BY_ID, {"job_id": job_id}).first()
    return JobRow.from_row(row) if row else None


def job_get_by_uuid(conn: Connection, job_uuid: UUID) -> JobRow | None:
    row = conn.execute(_JOB_BY_UUID, {"job_uuid": job_uuid}).first()
    return JobRow.from_row(row) if row else None


_IN_FLIGHT_FOR_RUNNER = _JOBS.where(
    job.c.runner_id == sa.bindparam("runner_id"), job.c.status.in_(_IN_FLIGHT)
).order_by(job.c.claimed)


def job_list_in_flight_for_runner(conn: Connection, runner_id: int) -> list[JobRow]:
    rows = conn.execute(_IN_FLIGHT_FOR_RUNNER, {"runner_id": runner_id})
    return [JobRow.from_row(r) for r in rows]


def job_list_by_status(conn: Connection, statuses: list[JobStatus]) -> list[JobRow]:
    rows = conn.execute(_select_jobs().where(job.c.status.in_([int(s) for s in statuses])))
    return [JobRow.from_row(r) for r in rows]


@dataclass(frozen=True)
class NewJob:
    report_id: int
    organization_id: int
    source_ip: str
    spec_id: int
    config: JsonJobConfig
    priority: int
    now: dt.datetime
    actor: str | None


_INSERT_JOB = job.insert().returning(job.c.id)


def job_create(conn: Connection, params: NewJob) -> tuple[int, UUID]:
    job_uuid = uuid4()
    row = {
        "uuid": job_uuid,
        "report_id": params.report_id,
        "organization_id": params.organization_id,
        "source_ip": params.source_ip,
        "spec_id": params.spec_id,
        "config": params.config.model_dump_json(exclude_none=True),
        "timeout": params.config.timeout,
        "priority": params.priority,
        "status": int(JobStatus.PENDING),
        "kind": params.config.kind,
        "created": params.now,
        "modified": params.now,
    }
    job_id = conn.execute(_INSERT_JOB, row).scalar_one()
    event_add(conn, job_id, "created", "job created", params.actor, {}, params.now)
    return job_id, job_uuid


_INSERT_EVENT = job_event.insert()


def event_add(
    conn: Connection,
    job_id: int,
    event_type: str,
    message: str,
    actor: str | None,
    meta: dict[str, Any],
    now: dt.datetime,
) -> None:
    conn.execute(
        _INSERT_EVENT,
        {
            "job_id": job_id,
            "event_type": event_type,
            "message": message,
            "actor": actor,
            "meta": json.dumps(meta, sort_keys=True, default=str),
            "created": now,
        },
    )


@functools.cache
def _transition_statement(
    target: JobStatus, columns: tuple[str, ...], runner_guard: bool
) -> sa.Update:
    """One prepared ``UPDATE job SET status = target ... WHERE id = :id AND status IN (...)`` per
    target, set of extra columns and guard, so the hot path never rebuilds a statement."""
    allowed = sorted(int(s) for s in sources_of(target))
    guard = [job.c.runner_id == sa.bindparam("owner_id")] if runner_guard else []
    return (
        job.update()
        .where(job.c.id == sa.bindparam("job_id"), job.c.status.in_(allowed), *guard)
        .values(
            status=int(target),
            modified=sa.bindparam("now"),
            **{name: sa.bindparam(f"v_{name}") for name in columns},
        )
        .returning(job.c.id)
    )


def _transition(
    conn: Connection,
    job_id: int,
    target: JobStatus,
    now: dt.datetime,
    *,
    message: str,
    actor: str | None,
    meta: dict[str, Any] | None = None,
    values: dict[str, Any] | None = None,
    runner_id: int | None = None,
) -> JobStatus | None:
    """Compare-and-set to ``target`` (only if the job is ``runner_id``'s, when given).
    Returns ``target`` if the job moved, else None."""
    extra = values or {}
    statement = _transition_statement(target, tuple(sorted(extra)), runner_id is not None)
    params = {"job_id": job_id, "now": now, **{f"v_{k}": v for k, v in extra.items()}}
    if runner_id is not None:
        params["owner_id"] = runner_id
    if conn.execute(statement, params).first() is None:
        return None
    event_add(conn, job_id, target.wire, message, actor, meta or {}, now)
    return target


# ---------------------------------------------------------------- claim


@dataclass(frozen=True)
class Claim:
    """A freshly claimed job and its spec, read in the claiming transaction."""

    job: JobRow
    spec: Any


class RunnerUnavailable(Exception):
    """The runner is paused, archived or gone: it may claim nothing."""


@functools.cache
def _eligible_jobs(organization_owned: bool) -> sa.Select[Any]:
    """The claim query (SPEC section 5), prepared once: bind ``runner_id`` (and ``runner_org``)."""
    other = job.alias("other")
    org_busy = sa.exists().where(
        other.c.organization_id == job.c.organization_id, other.c.status.in_(_IN_FLIGHT)
    )
    ip_busy = sa.exists().where(
        other.c.source_ip == job.c.source_ip, other.c.status.in_(_IN_FLIGHT)
    )
    within_limits = sa.or_(
        job.c.priority >= UNLIMITED_MIN_PRIORITY,
        sa.and_(job.c.priority >= PER_ORGANIZATION_MIN_PRIORITY, ~org_busy),
        sa.and_(job.c.priority < PER_ORGANIZATION_MIN_PRIORITY, ~ip_busy),
    )
    runner_specs = sa.select(runner_spec.c.spec_id).where(
        runner_spec.c.runner_id == sa.bindparam("runner_id")
    )
    query = _JOBS.where(
        job.c.status == int(JobStatus.PENDING),
        job.c.spec_id.in_(runner_specs),
        within_limits,
    )
    if organization_owned:
        query = query.where(job.c.organization_id == sa.bindparam("runner_org"))
    return query.order_by(job.c.priority.desc(), job.c.created.asc(), job.c.id.asc()).limit(1)


_SPEC = sa.select(spec).where(spec.c.id == sa.bindparam("spec_id"))
_RUNNER_CLAIM_STATE = sa.select(runner.c.paused, runner.c.archived, runner.c.organization_id).where(
    runner.c.id == sa.bindparam("runner_id")
)


def job_claim(
    conn: Connection, runner_id: int, nonce: str, now: dt.datetime, actor: str
) -> Claim | None:
    """Claim the best eligible pending job for this runner (SPEC section 5), or None.

    Raises RunnerUnavailable if the runner may not claim at all. Atomic on SQLite because the
    write transaction is ``BEGIN IMMEDIATE``.
    """
    owner = conn.execute(_RUNNER_CLAIM_STATE, {"runner_id": runner_id}).first()
    if owner is None or owner.paused or owner.archived is not None:
        raise RunnerUnavailable
    owned = owner.organization_id is not None
    row = conn.execute(
        _eligible_jobs(owned), {"runner_id": runner_id, "runner_org": owner.organization_id}
    ).first()
    if row is None:
        return None
    claimed_values: dict[str, Any] = {
        "runner_id": runner_id,
        "claimed": now,
        "last_heartbeat": now,
        "nonce": nonce,
    }
    moved = _transition(
        conn,
        row.id,
        JobStatus.CLAIMED,
        now,
        message="claimed by runner",
        actor=actor,
        values=claimed_values,
    )
    if moved is None:  # cannot happen under the write lock; stay honest if it does
        return None
    claimed = dataclasses.replace(
        JobRow.from_row(row), status=JobStatus.CLAIMED, modified=now, **claimed_values
    )
    return Claim(claimed, conn.execute(_SPEC, {"spec_id": claimed.spec_id}).one())


# ---------------------------------------------------------------- transitions


_JOB_OWNER = sa.select(job.c.status, job.c.runner_id).where(job.c.id == sa.bindparam("job_id"))


def job_mark_running(
    conn: Connection, job_id: int, runner_id: int, now: dt.datetime, actor: str
) -> JobStatus | None:
    """claimed -> running (sets started); running again only refreshes liveness.

    Returns the job's status afterwards, or None if it is not this runner's job.
    """
    started = _transition(
        conn,
        job_id,
        JobStatus.RUNNING,
        now,
        message="runner started the benchmark",
        actor=actor,
        values={"started": now, "last_heartbeat": now},
        runner_id=runner_id,
    )
    if started is not None:
        return started
    current = conn.execute(_JOB_OWNER, {"job_id": job_id}).first()
    if current is None or current.runner_id != runner_id:
        return None
    status = JobStatus(current.status)
    if status == JobStatus.RUNNING:
        job_touch(conn, job_id, now)
    return status


@dataclass(frozen=True)
class Liveness:
    status: JobStatus
    started: dt.datetime | None
    timeout: int


_TOUCH_RUNNER = (
    runner.update()
    .where(runner.c.id == sa.bindparam("runner_id"))
    .values(last_heartbeat=sa.bindparam("now"))
)
_TOUCH_JOB = (
    job.update()
    .where(job.c.id == sa.bindparam("job_id"), job.c.status.in_(_IN_FLIGHT))
    .values(last_heartbeat=sa.bindparam("now"))
    .returning(job.c.status, job.c.started, job.c.timeout)
)
_JOB_LIVENESS = sa.select(job.c.status, job.c.started, job.c.timeout).where(
    job.c.id == sa.bindparam("job_id")
)


def job_touch(
    conn: Connection, job_id: int, now: dt.datetime, runner_id: int | None = None
) -> Liveness | None:
    """Heartbeat: refresh ``last_heartbeat`` of an in-flight job (and of its runner, if given);
    report the job's state either way."""
    if runner_id is not None:
        conn.execute(_TOUCH_RUNNER, {"runner_id": runner_id, "now": now})
    row = conn.execute(_TOUCH_JOB, {"job_id": job_id, "now": now}).first()
    if row is None:
        row = conn.execute(_JOB_LIVENESS, {"job_id": job_id}).first()
        if row is None:
            return None
    return Liveness(JobStatus(row.status), row.started, row.timeout)


def job_mark_completed(
    conn: Connection, job_id: int, now: dt.datetime, actor: str, late: bool
) -> bool:
    message = "runner delivered a result after the job had failed" if late else "runner completed"
    return (
        _transition(
            conn,
            job_id,
            JobStatus.COMPLETED,
            now,
            message=message,
            actor=actor,
            values={"completed": now},
        )
        is not None
    )


def job_mark_failed(
    conn: Connection, job_id: int, now: dt.datetime, actor: str, reason: str
) -> bool:
    return (
        _transition(
            conn,
            job_id,
            JobStatus.FAILED,
            now,
            message=reason,
            actor=actor,
            values={"completed": now},
        )
        is not None
    )


def job_mark_canceled(
    conn: Connection, job_id: int, now: dt.datetime, actor: str | None, reason: str
) -> bool:
    return (
        _transition(
            conn,
            job_id,
            JobStatus.CANCELED,
            now,
            message=reason,
            actor=actor,
            values={"completed": now},
        )
        is not None
    )


def job_mark_processed(conn: Connection, job_id: int, now: dt.datetime, message: str) -> bool:
    return (
        _transition(conn, job_id, JobStatus.PROCESSED, now, message=message, actor="system")
        is not None
    )


# ---------------------------------------------------------------- recovery reads


def jobs_orphaned_claimed(conn: Connection, older_than: dt.datetime) -> list[int]:
    """Claimed jobs whose claim (or creation) is older than the cut-off (seed 000)."""
    rows = conn.execute(
        sa.select(job.c.id).where(
            job.c.status == int(JobStatus.CLAIMED),
            sa.or_(
                job.c.claimed < older_than,
                sa.and_(job.c.claimed.is_(None), job.c.created < older_than),
            ),
        )
    )
    return [r.id for r in rows]


# ---------------------------------------------------------------- listings


def job_list_for_project(
    conn: Connection,
    project_id: int,
    *,
    status: JobStatus | None,
    ascending: bool,
    limit: int,
    offset: int,
) -> tuple[list[JobRow], int]:
    where = [report.c.project_id == project_id]
    if status is not None:
        where.append(job.c.status == int(status))
    total = conn.execute(
        sa.select(sa.func.count())
        .select_from(job.join(report, report.c.id == job.c.report_id))
        .where(*where)
    ).scalar_one()
    order = (
        (job.c.created.asc(), job.c.id.asc())
        if ascending
        else (job.c.created.desc(), job.c.id.desc())
    )
    rows = conn.execute(_select_jobs().where(*where).order_by(*order).limit(limit).offset(offset))
    return [JobRow.from_row(r) for r in rows], int(total)


def job_events(conn: Connection, job_id: int) -> list[Any]:
    return list(
        conn.execute(
            sa.select(job_event)
            .where(job_event.c.job_id == job_id)
            .order_by(job_event.c.created, job_event.c.id)
        )
    )


def job_for_report(conn: Connection, report_id: int) -> JobRow | None:
    row = conn.execute(_select_jobs().where(job.c.report_id == report_id)).first()
    return JobRow.from_row(row) if row else None


def job_detail_refs(conn: Connection, row: JobRow) -> tuple[Any, Any, Any]:
    """The spec row, runner UUID and report UUID a job's JSON shows."""
    spec_full = conn.execute(sa.select(spec).where(spec.c.id == row.spec_id)).one()
    runner_uuid = (
        None
        if row.runner_id is None
        else conn.execute(sa.select(runner.c.uuid).where(runner.c.id == row.runner_id)).scalar()
    )
    report_uuid = conn.execute(
        sa.select(report.c.uuid).where(report.c.id == row.report_id)
    ).scalar()
    return spec_full, runner_uuid, report_uuid
