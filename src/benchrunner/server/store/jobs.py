"""Jobs as rows: creation, reads and listings. Status changes live in ``transitions``, the
claim in ``claims``."""

from __future__ import annotations

import collections
import datetime as dt
from dataclasses import dataclass, replace
from typing import Any
from uuid import UUID, uuid4

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.events import JobEvent
from benchrunner.core.states import JobStatus
from benchrunner.protocol import JsonJobConfig
from benchrunner.server.store import capabilities, insert_claims, reports
from benchrunner.server.store.backlog import ROOM_FOR_ONE, Caps, room_for_one
from benchrunner.server.store.direct import Direct, insert_values
from benchrunner.server.store.signed_outputs import SignedOutput
from benchrunner.server.store.tables import (
    in_flight,
    job,
    job_event,
    project,
    report,
    spec,
)
from benchrunner.server.store.transitions import (
    event_add,
    event_insert,
    event_params,
    notified,
    with_event,
)


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
    signed: SignedOutput | None = None
    """The runner's verified signature over the stored output, if it signed it."""

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
            signed=SignedOutput.from_row(row),
        )


JOBS = (
    sa.select(job, report.c.project_id, project.c.uuid.label("project_uuid"))
    .join(report, report.c.id == job.c.report_id)
    .join(project, project.c.id == report.c.project_id)
)
_JOB_BY_ID = Direct(JOBS.where(job.c.id == sa.bindparam("job_id")))
_JOB_BY_UUID = Direct(JOBS.where(job.c.uuid == sa.bindparam("job_uuid")))


def job_get(conn: Connection, job_id: int) -> JobRow | None:
    row = _JOB_BY_ID.first(conn, {"job_id": job_id})
    return JobRow.from_row(row) if row else None


def job_get_by_uuid(conn: Connection, job_uuid: UUID) -> JobRow | None:
    row = _JOB_BY_UUID.first(conn, {"job_uuid": job_uuid})
    return JobRow.from_row(row) if row else None


_IN_FLIGHT_FOR_RUNNER = Direct(
    JOBS.where(job.c.runner_id == sa.bindparam("runner_id"), in_flight(job.c.status)).order_by(
        job.c.claimed
    )
)


def job_list_in_flight_for_runner(conn: Connection, runner_id: int) -> list[JobRow]:
    rows = _IN_FLIGHT_FOR_RUNNER.all(conn, {"runner_id": runner_id})
    return [JobRow.from_row(r) for r in rows]


def job_list_by_status(conn: Connection, statuses: list[JobStatus]) -> list[JobRow]:
    rows = conn.execute(JOBS.where(job.c.status.in_([int(s) for s in statuses])))
    return [JobRow.from_row(r) for r in rows]


@dataclass(frozen=True)
class Origin:
    """Who submitted a job and from where: the actor and meta of its ``job_created`` event."""

    actor: str
    source_ip: str
    user_agent: str | None = None
    token_name: str | None = None
    """The name of the caller's API token (never the token)."""
    reached: str | None = None
    """The scheme and host the request reached this server under (``https://bench:8080``), a
    name an image reference may give this server's registry by; None: not a request."""

    def meta(self) -> dict[str, Any]:
        return {
            "source_ip": self.source_ip,
            "user_agent": self.user_agent,
            "token": self.token_name,
        }


@dataclass(frozen=True)
class NewJob:
    report_id: int
    organization_id: int
    spec_id: int
    config: JsonJobConfig
    priority: int
    now: dt.datetime
    origin: Origin
    rerun_of: UUID | None = None
    why: tuple[str, dict[str, Any]] | None = None
    """Why the server created the job, when it did (its ``job_created`` message and meta)."""
    notify: tuple[str, str] | None = None
    """PostgreSQL: a ``(channel, payload)`` notification sent when the job's transaction
    commits (the other replicas' wake-up, without a round trip of its own)."""


_NEW_JOB_COLUMNS = (
    "uuid",
    "report_id",
    "organization_id",
    "source_ip",
    "spec_id",
    "config",
    "timeout",
    "priority",
    "status",
    "kind",
    "created",
    "modified",
)
_NEW_JOB = insert_values(job, _NEW_JOB_COLUMNS).returning(job.c.id)
_INSERT_JOB = Direct(_NEW_JOB)
_INSERT_JOB_WITH_EVENT = with_event(_NEW_JOB)
_INSERT_JOB_WITH_EVENT_NOTIFY = with_event(_NEW_JOB, notify=True)


def _job_values(params: NewJob, job_uuid: UUID) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """The new job's row (but its report's id), its ``job_created`` message and meta."""
    row = {
        "uuid": job_uuid,
        "organization_id": params.organization_id,
        "source_ip": params.origin.source_ip,
        "spec_id": params.spec_id,
        "config": params.config.model_dump_json(exclude_none=True),
        "timeout": params.config.timeout,
        "priority": params.priority,
        "status": int(JobStatus.PENDING),
        "kind": params.config.kind,
        "created": params.now,
        "modified": params.now,
    }
    meta = params.origin.meta()
    message = "job created"
    if params.rerun_of is not None:
        meta["rerun_of"] = str(params.rerun_of)
        message = f"rerun of job {params.rerun_of}"
    if params.why is not None:
        message = params.why[0]
        meta.update(params.why[1])
    return row, message, meta


def job_create(conn: Connection, params: NewJob) -> tuple[int, UUID]:
    job_uuid = uuid4()
    values, message, meta = _job_values(params, job_uuid)
    row = {**values, "report_id": params.report_id}
    actor = params.origin.actor
    if capabilities.of(conn).writes_in_ctes:
        values = {**row, **event_params(JobEvent.CREATED, message, actor, meta, params.now)}
        insert = _INSERT_JOB_WITH_EVENT
        if params.notify is not None:
            insert = _INSERT_JOB_WITH_EVENT_NOTIFY
            values["notify_channel"], values["notify_payload"] = params.notify
        job_id = insert.scalar(conn, values)
        assert job_id is not None
        return job_id, job_uuid
    job_id = _INSERT_JOB.scalar(conn, row)
    assert job_id is not None
    event_add(conn, job_id, JobEvent.CREATED, message, actor, meta, params.now)
    return job_id, job_uuid


@dataclass(frozen=True)
class CreatedRun:
    """A report created with its job (``job_create_with_report``)."""

    job_id: int
    job_uuid: UUID
    report: Any
    """The report as ``reports.report_row`` reads it (with its branch, testbed and project)."""
    claimed: Any | None = None
    """The job's spec row (as ``runners.SPEC_BY_ID`` reads it) when its insert claimed it for
    the runner the submission named (``claim_for``); None: the job is pending."""


SPEC_PREFIX = "spec__"
"""The prefix of a spec's columns read by a statement beside a job's (``spec_read``)."""
_SPEC_COLUMNS: tuple[str, ...] = tuple(column.name for column in spec.c)
_SpecRow = collections.namedtuple("_SpecRow", _SPEC_COLUMNS)  # type: ignore[misc]


def spec_read(row: Any) -> Any:
    """The spec row (as ``runners.SPEC_BY_ID`` reads it) from a statement's columns named with
    ``SPEC_PREFIX``."""
    return _SpecRow(*(getattr(row, f"{SPEC_PREFIX}{name}") for name in _SPEC_COLUMNS))


def _events_after(new_job: sa.CTE, claim: bool) -> sa.Insert:
    """The new job's ``job_created`` row (``event_params``); with ``claim``, then the claim's
    row when its insert claimed it (``insert_claims.claim_params``), in that order (one
    ``INSERT``: its rows take their ids in the order of the ``UNION ALL``)."""
    if not claim:
        return event_insert(new_job)
    created = sa.bindparam("event_created", type_=job_event.c.created.type)
    rows = sa.union_all(
        sa.select(
            new_job.c.id,
            sa.bindparam("event_type", type_=job_event.c.event_type.type),
            sa.bindparam("event_message", type_=job_event.c.message.type),
            sa.bindparam("event_actor", type_=job_event.c.actor.type),
            sa.bindparam("event_meta", type_=job_event.c.meta.type),
            created,
        ),
        sa.select(
            new_job.c.id,
            sa.bindparam("claim_event_type", type_=job_event.c.event_type.type),
            sa.bindparam("claim_event_message", type_=job_event.c.message.type),
            sa.bindparam("claim_event_actor", type_=job_event.c.actor.type),
            sa.literal("{}", job_event.c.meta.type),
            created,
        ).where(new_job.c.status == int(JobStatus.CLAIMED)),
    )
    columns = ["job_id", "event_type", "message", "actor", "meta", "created"]
    return job_event.insert().from_select(columns, rows).returning(job_event.c.job_id)


def _report_and_job(notify: bool, capped: bool, claim: bool | None) -> Direct:
    """PostgreSQL: the report, its job and the job's ``job_created`` event inserted by one
    statement (data-modifying CTEs), which returns the report as ``reports.report_row`` reads
    it and the job's id. The job's parameters are ``_job_values``' prefixed with ``job_``,
    the report's ``reports.report_params``', the event's ``event_params``'. ``capped``: only
    while the submission caps leave room (``backlog.ROOM_FOR_ONE``, checked by the same
    statement), no row otherwise. ``claim`` (not None): the job is inserted claimed for a
    runner when it may have it (``insert_claims.claimant``; True: an images-only runner), and
    the spec's columns come back, prefixed, with ``claimed``."""
    insert = reports.new_report_where(ROOM_FOR_ONE) if capped else reports.NEW_REPORT
    new_report = insert.returning(*report.c).cte("new_report")
    job_columns = [name for name in _NEW_JOB_COLUMNS if name != "report_id"]
    values: list[sa.ColumnElement[Any]] = [
        sa.bindparam(f"job_{name}", type_=job.c[name].type) for name in job_columns
    ]
    rows: sa.FromClause = new_report
    claimant = None if claim is None else insert_claims.claimant(claim)
    if claimant is not None:
        at = job_columns.index("status")
        values[at] = sa.func.coalesce(claimant.c.status, values[at])
        job_columns += ["runner_id", "claimed", "last_heartbeat", "nonce"]
        values += [claimant.c[name] for name in job_columns[-4:]]
        rows = new_report.outerjoin(claimant, sa.true())
    new_job = (
        job.insert()
        .from_select(
            [*job_columns, "report_id"], sa.select(*values, new_report.c.id).select_from(rows)
        )
        .returning(job.c.id, job.c.status)
        .cte("new_job")
    )
    event = _events_after(new_job, claimant is not None).cte("new_event")
    also = [notified()] if notify else []
    joined = reports.report_with_names(new_report).join(new_job, sa.true())
    if claimant is not None:
        also.append((new_job.c.status == int(JobStatus.CLAIMED)).label("claimed"))
        also += [column.label(f"{SPEC_PREFIX}{column.name}") for column in spec.c]
        joined = joined.outerjoin(
            spec,
            sa.and_(
                spec.c.id == sa.bindparam("job_spec_id"),
                new_job.c.status == int(JobStatus.CLAIMED),
            ),
        )
    view = joined.add_columns(new_job.c.id.label("job_id"), *also).add_cte(event)
    return Direct(view)


_REPORT_AND_JOB = {
    (notify, capped, claim): _report_and_job(notify, capped, claim)
    for notify in (False, True)
    for capped in (False, True)
    for claim in (None, False, True)
}


def job_create_with_report(
    conn: Connection,
    new_report: reports.NewReport,
    params: NewJob,
    caps: Caps | None = None,
    claim_for: insert_claims.ClaimFor | None = None,
) -> CreatedRun | None:
    """A report and its job (``params.report_id`` is ignored), the job's ``job_created`` event,
    and the report read back; None, with nothing written, when ``caps`` leave no room for one
    more pending job (``backlog.ROOM_FOR_ONE``). On PostgreSQL one statement,
    caps checked, so in autocommit (``write_each``) the three rows are written together or
    not at all; SQLite checks them (``backlog.room_for_one``), then writes them one by one in
    the unit's transaction.

    ``claim_for`` (PostgreSQL, a job ``insert_claims.claimable``): the same statement inserts
    the job claimed for that runner when it may have it (``CreatedRun.claimed``). SQLite, which
    claims in the same transaction at no round trip, ignores it."""
    if not capabilities.of(conn).writes_in_ctes:
        if caps is not None and not room_for_one(conn, caps):
            return None
        report_id, _ = reports.report_create(conn, new_report)
        job_id, job_uuid = job_create(conn, replace(params, report_id=report_id))
        return CreatedRun(job_id, job_uuid, reports.report_row(conn, report_id))
    job_uuid = uuid4()
    report_uuid = uuid4()
    values, message, meta = _job_values(params, job_uuid)
    bound = {
        **reports.report_params(new_report, report_uuid),
        **{f"job_{name}": value for name, value in values.items()},
        **event_params(JobEvent.CREATED, message, params.origin.actor, meta, params.now),
    }
    if params.notify is not None:
        bound["notify_channel"], bound["notify_payload"] = params.notify
    if caps is not None:
        bound.update(caps.params())
    claim = None
    if claim_for is not None:
        assert insert_claims.claimable(params.priority)
        claim = not claim_for.templates
        bound.update(insert_claims.claim_params(claim_for, params.now))
    statement = _REPORT_AND_JOB[params.notify is not None, caps is not None, claim]
    row = statement.first(conn, bound)
    if row is None:
        assert caps is not None
        return None
    claimed = spec_read(row) if claim is not None and row.claimed else None
    return CreatedRun(row.job_id, job_uuid, row, claimed)


# ---------------------------------------------------------------- recovery reads


def jobs_orphaned_claimed(conn: Connection, older_than: dt.datetime) -> list[JobRow]:
    """Claimed jobs silent since the cut-off: no heartbeat (or, lacking one, no claim or
    creation) after it (docs/decisions/timeouts-recovery.md). A job another live replica holds keeps
    heartbeating, so a replica starting up never takes it for an orphan."""
    last_sign = sa.func.coalesce(job.c.last_heartbeat, job.c.claimed, job.c.created)
    rows = conn.execute(JOBS.where(job.c.status == int(JobStatus.CLAIMED), last_sign < older_than))
    return [JobRow.from_row(r) for r in rows]


_SILENT_IN_FLIGHT = (
    sa.select(job.c.id)
    .where(
        in_flight(job.c.status),
        sa.or_(
            job.c.last_heartbeat < sa.bindparam("cutoff"),
            sa.and_(job.c.last_heartbeat.is_(None), job.c.modified < sa.bindparam("cutoff")),
        ),
    )
    .order_by(job.c.id)
)


_COMPLETED_AMONG = JOBS.where(
    job.c.id.in_(sa.bindparam("ids", expanding=True)),
    job.c.status == int(JobStatus.COMPLETED),
)


def jobs_completed_among(conn: Connection, job_ids: list[int]) -> list[JobRow]:
    """Those of ``job_ids`` still ``completed`` (not yet processed), in one query."""
    return [JobRow.from_row(r) for r in conn.execute(_COMPLETED_AMONG, {"ids": job_ids})]


_HOLD_COMPLETED = (
    job.update()
    .where(job.c.id == sa.bindparam("job_id"), job.c.status == int(JobStatus.COMPLETED))
    .values(modified=sa.bindparam("now"))
    .returning(job.c.id)
)


def job_hold_completed(conn: Connection, job_id: int, now: dt.datetime) -> bool:
    """Whether the job is still ``completed``, its row locked until the transaction ends where
    writers run concurrently (PostgreSQL), so that two processors of it write one after the
    other (SQLite's writers always do), and its ``modified`` set to ``now``. Each write
    storing its metrics for its judgment holds it so: the sweeper re-queues it only once those
    writes have stopped, as a dead replica's do (``jobs_completed_unprocessed``), and a
    processor that read it before moves nothing (``Move.unchanged``)."""
    return conn.execute(_HOLD_COMPLETED, {"job_id": job_id, "now": now}).first() is not None


_UNPROCESSED = (
    sa.select(job.c.id)
    .where(job.c.status == sa.literal_column("3"), job.c.modified < sa.bindparam("cutoff"))
    .order_by(job.c.modified)
    .limit(sa.bindparam("limit"))
)


def jobs_completed_unprocessed(conn: Connection, cutoff: dt.datetime, limit: int) -> list[int]:
    """Ids of jobs ``completed`` since before ``cutoff`` and still not processed, no write of
    their metrics for their judgment since then either (``job_hold_completed``): their
    results are stored, but the replica that would have processed them died."""
    return list(conn.execute(_UNPROCESSED, {"cutoff": cutoff, "limit": limit}).scalars())


def jobs_silent_in_flight(conn: Connection, cutoff: dt.datetime) -> list[int]:
    """Ids of claimed or running jobs with no heartbeat since ``cutoff`` (the sweeper's
    candidates; the watchdog re-reads each one as it judges it)."""
    return list(conn.execute(_SILENT_IN_FLIGHT, {"cutoff": cutoff}).scalars())


def job_for_report(conn: Connection, report_id: int) -> JobRow | None:
    row = conn.execute(JOBS.where(job.c.report_id == report_id)).first()
    return JobRow.from_row(row) if row else None
