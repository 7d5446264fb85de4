"""Every status change of a job: one guarded ``UPDATE ... WHERE id = ? AND status IN (sources)``
plus a ``job_event`` row, in the caller's transaction (docs/decisions/job-lifecycle.md). Zero rows
updated means someone else changed the job first; callers re-read and answer from the current state.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.events import SYSTEM_ACTOR, TRANSITION_EVENT, JobEvent
from benchrunner.core.states import JobStatus, sources_of
from benchrunner.server.store import capabilities
from benchrunner.server.store.direct import Direct, insert_values
from benchrunner.server.store.tables import in_flight, job, job_event, runner

_EVENT_COLUMNS = ("job_id", "event_type", "message", "actor", "meta", "created")
_INSERT_EVENT = Direct(insert_values(job_event, _EVENT_COLUMNS))
_EVENT_PARAMS = (
    ("event_type", "event_type"),
    ("event_message", "message"),
    ("event_actor", "actor"),
    ("event_meta", "meta"),
    ("event_created", "created"),
)
"""The bound parameters (and their columns) of an event row written in the statement of its
job's change (``event_params``)."""


def _meta_json(meta: dict[str, Any]) -> str:
    return json.dumps(meta, sort_keys=True, default=str)


def event_add(
    conn: Connection,
    job_id: int,
    event_type: str,
    message: str,
    actor: str | None,
    meta: dict[str, Any],
    now: dt.datetime,
) -> None:
    _INSERT_EVENT.run(
        conn,
        {
            "job_id": job_id,
            "event_type": str(event_type),
            "message": message,
            "actor": actor,
            "meta": _meta_json(meta),
            "created": now,
        },
    )


def with_event(created: sa.Insert, *, notify: bool = False) -> Direct:
    """PostgreSQL: ``created`` (an ``INSERT INTO job ... RETURNING id``) and its ``job_event``
    row in one statement (the insert as a data-modifying CTE), one round trip instead of two;
    returns the new job's id. Its parameters are the insert's plus ``event_params``'. With
    ``notify``, the same statement also queues ``pg_notify(:notify_channel, :notify_payload)``,
    which PostgreSQL sends when (and only if) the transaction commits."""
    notified = (
        sa.func.pg_notify(
            sa.bindparam("notify_channel", type_=sa.String),
            sa.bindparam("notify_payload", type_=sa.String),
        ).label("notified"),
    )
    return _event_row_after(created.cte("new_job"), *(notified if notify else ()))


def _event_insert(moved: sa.CTE) -> sa.Insert:
    """The ``job_event`` row of the job that ``moved`` (a data-modifying CTE returning its id)
    wrote; its parameters are ``event_params``'."""
    values = [sa.bindparam(name, type_=job_event.c[column].type) for name, column in _EVENT_PARAMS]
    event = sa.select(moved.c.id, *values)
    return job_event.insert().from_select(list(_EVENT_COLUMNS), event).returning(job_event.c.job_id)


def _event_row_after(moved: sa.CTE, *also: sa.ColumnElement[Any]) -> Direct:
    """``_event_insert`` after ``moved``, in the same statement, returning ``also`` too."""
    event = _event_insert(moved)
    if also:
        event = event.returning(*also)
    return Direct(event.add_cte(moved, nest_here=True))


def event_params(
    event_type: str, message: str, actor: str | None, meta: dict[str, Any], now: dt.datetime
) -> dict[str, Any]:
    """The event row's parameters of a ``with_event`` statement."""
    return {
        "event_type": str(event_type),
        "event_message": message,
        "event_actor": actor,
        "event_meta": _meta_json(meta),
        "event_created": now,
    }


def _guarded_update(target: JobStatus, columns: tuple[str, ...], runner_guard: bool) -> sa.Update:
    """``UPDATE job SET status = target ... WHERE id = :job_id AND status IN (sources)``,
    returning the id when the job moved."""
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


@functools.cache
def _transition_statement(
    target: JobStatus, columns: tuple[str, ...], runner_guard: bool
) -> Direct:
    """The guarded update alone, prepared once per target, set of extra columns and guard, so
    the hot path never rebuilds a statement; its event row is a second statement."""
    return Direct(_guarded_update(target, columns, runner_guard))


@functools.cache
def _transition_with_event(
    target: JobStatus, columns: tuple[str, ...], runner_guard: bool
) -> Direct:
    """PostgreSQL: the guarded update and its ``job_event`` row in one statement (the update
    as a data-modifying CTE), one round trip instead of two; a row comes back only if the job
    moved. SQLite has no data-modifying CTEs."""
    moved = _guarded_update(target, columns, runner_guard).cte("moved")
    return _event_row_after(moved)


def _move_params(
    job_id: int,
    now: dt.datetime,
    values: dict[str, Any] | None,
    runner_id: int | None,
) -> dict[str, Any]:
    params = {"job_id": job_id, "now": now, **{f"v_{k}": v for k, v in (values or {}).items()}}
    if runner_id is not None:
        params["owner_id"] = runner_id
    return params


def _move(
    conn: Connection,
    job_id: int,
    target: JobStatus,
    now: dt.datetime,
    values: dict[str, Any] | None,
    runner_id: int | None,
) -> bool:
    """The compare-and-set alone: True if the job moved to ``target``."""
    statement = _transition_statement(target, tuple(sorted(values or {})), runner_id is not None)
    return statement.first(conn, _move_params(job_id, now, values, runner_id)) is not None


def transition(
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
    event: JobEvent | None = None,
) -> JobStatus | None:
    """Compare-and-set to ``target`` (only if the job is ``runner_id``'s, when given), writing
    ``event`` (by default the one for ``target``). Returns ``target`` if the job moved, else
    None."""
    kind = event or TRANSITION_EVENT[target]
    if capabilities.of(conn).writes_in_ctes:
        statement = _transition_with_event(
            target, tuple(sorted(values or {})), runner_id is not None
        )
        params = _move_params(job_id, now, values, runner_id)
        params.update(event_params(kind, message, actor, meta or {}, now))
        return target if statement.first(conn, params) is not None else None
    if not _move(conn, job_id, target, now, values, runner_id):
        return None
    event_add(conn, job_id, kind, message, actor, meta or {}, now)
    return target


@functools.cache
def _transition_then(target: JobStatus, columns: tuple[str, ...], then: sa.Select[Any]) -> Direct:
    """PostgreSQL: ``_transition_with_event`` and then ``then``, in one statement; ``then``'s
    rows come back only if the job moved. (PostgreSQL allows data-modifying CTEs only at the
    top level, so the event row is a second CTE here, not nested in the update's.)"""
    moved = _guarded_update(target, columns, False).cte("moved")
    written = _event_insert(moved).cte("written")
    return Direct(then.where(sa.exists(sa.select(written.c.job_id))))


def transition_then_read(
    conn: Connection,
    job_id: int,
    target: JobStatus,
    now: dt.datetime,
    then: Direct,
    then_params: dict[str, Any],
    *,
    message: str,
    actor: str | None,
    values: dict[str, Any],
) -> Any | None:
    """``transition`` (no runner guard, the default event), then the first row of ``then`` (a
    ``SELECT``), a read that only a moved job needs; None if the job did not move. On
    PostgreSQL the move, its event and the read are one round trip."""
    if not capabilities.of(conn).writes_in_ctes:
        moved = transition(conn, job_id, target, now, message=message, actor=actor, values=values)
        return None if moved is None else then.first(conn, then_params)
    assert isinstance(then.statement, sa.Select)
    statement = _transition_then(target, tuple(sorted(values)), then.statement)
    params = _move_params(job_id, now, values, None)
    params.update(event_params(TRANSITION_EVENT[target], message, actor, {}, now), **then_params)
    return statement.first(conn, params)


_JOB_OWNER = Direct(
    sa.select(job.c.status, job.c.runner_id, job.c.started).where(
        job.c.id == sa.bindparam("job_id")
    )
)


@dataclass(frozen=True)
class Started:
    """What a runner's ``running`` did to its job."""

    status: JobStatus
    """The job's status afterwards."""
    started: dt.datetime | None
    """When the job started running, as stored."""
    moved: bool
    """This call moved the job from claimed to running."""


def job_mark_running(
    conn: Connection, job_id: int, runner_id: int, now: dt.datetime, actor: str
) -> Started | None:
    """claimed -> running (sets started); running again only refreshes liveness.

    Returns what became of the job, or None if it is not this runner's job. Each statement
    stands on its own (``Database.write_each``): on PostgreSQL the move and its event are one.
    """
    moved = transition(
        conn,
        job_id,
        JobStatus.RUNNING,
        now,
        message="runner started the benchmark",
        actor=actor,
        values={"started": now, "last_heartbeat": now},
        runner_id=runner_id,
    )
    if moved is not None:
        return Started(JobStatus.RUNNING, now, moved=True)
    current = _JOB_OWNER.first(conn, {"job_id": job_id})
    if current is None or current.runner_id != runner_id:
        return None
    status = JobStatus(current.status)
    if status == JobStatus.RUNNING:
        job_touch(conn, job_id, now)
    return Started(status, current.started, moved=False)


@dataclass(frozen=True)
class Liveness:
    status: JobStatus
    started: dt.datetime | None
    timeout: int


_TOUCH_RUNNER = Direct(
    runner.update()
    .where(runner.c.id == sa.bindparam("runner_id"))
    .values(last_heartbeat=sa.bindparam("now"))
)
_TOUCH_JOB = Direct(
    job.update()
    .where(job.c.id == sa.bindparam("job_id"), in_flight(job.c.status))
    .values(last_heartbeat=sa.bindparam("now"))
    .returning(job.c.status, job.c.started, job.c.timeout)
)
_JOB_LIVENESS = Direct(
    sa.select(job.c.status, job.c.started, job.c.timeout).where(job.c.id == sa.bindparam("job_id"))
)


def job_touch(
    conn: Connection, job_id: int, now: dt.datetime, runner_id: int | None = None
) -> Liveness | None:
    """Heartbeat: refresh ``last_heartbeat`` of an in-flight job (and of its runner, if given);
    report the job's state either way. Each statement stands on its own
    (``Database.write_each``)."""
    if runner_id is not None:
        _TOUCH_RUNNER.run(conn, {"runner_id": runner_id, "now": now})
    row = _TOUCH_JOB.first(conn, {"job_id": job_id, "now": now})
    if row is None:
        row = _JOB_LIVENESS.first(conn, {"job_id": job_id})
        if row is None:
            return None
    return Liveness(JobStatus(row.status), row.started, row.timeout)


@dataclass(frozen=True)
class Beat:
    """The newest heartbeat heard of a job, from its runner."""

    job_id: int
    runner_id: int
    at: dt.datetime


_TOUCH_JOB_AT = (
    job.update()
    .where(job.c.id == sa.bindparam("job"), in_flight(job.c.status))
    .values(last_heartbeat=sa.bindparam("at"))
)
_TOUCH_RUNNER_AT = (
    runner.update()
    .where(runner.c.id == sa.bindparam("runner"))
    .values(last_heartbeat=sa.bindparam("at"))
)


def jobs_touch(conn: Connection, beats: list[Beat]) -> set[int]:
    """Store the heartbeats of several jobs and their runners (each job's and runner's newest);
    the jobs among them that are no longer running (or no longer there). Three statements
    whatever their number."""
    runners: dict[int, dt.datetime] = {}
    for beat in beats:
        runners[beat.runner_id] = max(beat.at, runners.get(beat.runner_id, beat.at))
    conn.execute(_TOUCH_JOB_AT, [{"job": beat.job_id, "at": beat.at} for beat in beats])
    conn.execute(_TOUCH_RUNNER_AT, [{"runner": r, "at": at} for r, at in runners.items()])
    ids = {beat.job_id for beat in beats}
    running = conn.execute(
        sa.select(job.c.id).where(job.c.id.in_(ids), job.c.status == JobStatus.RUNNING.value)
    )
    return ids - {row.id for row in running}  # a deleted job is no longer running either


def _finish(
    conn: Connection,
    job_id: int,
    target: JobStatus,
    now: dt.datetime,
    actor: str | None,
    message: str,
    event: JobEvent | None = None,
    also: dict[str, Any] | None = None,
) -> bool:
    """A move to completed, failed or canceled: each stamps ``completed`` (and sets the job
    columns of ``also`` in the same update)."""
    moved = transition(
        conn,
        job_id,
        target,
        now,
        message=message,
        actor=actor,
        values={"completed": now, **(also or {})},
        event=event,
    )
    return moved is not None


def job_mark_completed(
    conn: Connection,
    job_id: int,
    now: dt.datetime,
    actor: str,
    late: bool,
    also: dict[str, Any] | None = None,
) -> bool:
    message = "runner delivered a result after the job had failed" if late else "runner completed"
    return _finish(conn, job_id, JobStatus.COMPLETED, now, actor, message, also=also)


def job_mark_failed(
    conn: Connection,
    job_id: int,
    now: dt.datetime,
    actor: str,
    reason: str,
    event: JobEvent = JobEvent.FAILED,
    also: dict[str, Any] | None = None,
) -> bool:
    """To ``failed``; ``event`` says why when the server decided it (a stale heartbeat, a
    job orphaned by a crash)."""
    return _finish(conn, job_id, JobStatus.FAILED, now, actor, reason, event, also)


def job_mark_canceled(
    conn: Connection,
    job_id: int,
    now: dt.datetime,
    actor: str | None,
    reason: str,
    event: JobEvent = JobEvent.CANCELED,
) -> bool:
    return _finish(conn, job_id, JobStatus.CANCELED, now, actor, reason, event)


def job_canceled_by_runner(conn: Connection, job_id: int) -> bool:
    """Whether the job's runner canceled it (its ``canceled`` moved it): ``job_mark_canceled``
    writes that ``job_canceled`` event with the runner as actor; a user's cancel writes it as
    the system, and the hard timeout writes ``job_timeout``."""
    found = conn.execute(
        sa.select(job_event.c.id)
        .where(
            job_event.c.job_id == job_id,
            job_event.c.event_type == str(JobEvent.CANCELED),
            job_event.c.actor != SYSTEM_ACTOR,
        )
        .limit(1)
    ).first()
    return found is not None


def job_cancel_by_user(conn: Connection, job_id: int, now: dt.datetime, actor: str) -> bool:
    """A user's cancel: ``job_cancel_requested`` by the user, then ``job_canceled`` by the
    system (docs/decisions/audit-events.md); nothing is written if the job already left
    flight."""
    if not _move(conn, job_id, JobStatus.CANCELED, now, {"completed": now}, None):
        return False
    event_add(conn, job_id, JobEvent.CANCEL_REQUESTED, f"{actor} asked to cancel", actor, {}, now)
    event_add(conn, job_id, JobEvent.CANCELED, f"canceled by {actor}", SYSTEM_ACTOR, {}, now)
    return True


def job_mark_processed(conn: Connection, job_id: int, now: dt.datetime, message: str) -> bool:
    return (
        transition(conn, job_id, JobStatus.PROCESSED, now, message=message, actor=SYSTEM_ACTOR)
        is not None
    )


_UNCLAIMED = {"runner_id": None, "claimed": None, "last_heartbeat": None, "nonce": None}
_NOTIFY = Direct(
    sa.select(
        sa.func.pg_notify(
            sa.bindparam("channel", type_=sa.String), sa.bindparam("payload", type_=sa.String)
        )
    )
)


def job_return_unclaimed(
    conn: Connection,
    job_id: int,
    now: dt.datetime,
    reason: str,
    broadcast: tuple[str, str] | None,
) -> bool:
    """claimed -> pending, for a claim that never reached its runner (the connection it was
    claimed for ended before the job was sent): no runner has the job, so it waits in the queue
    again, at its old place (its creation time and priority are kept), instead of failing. With
    ``broadcast`` (a wake-up's ``(channel, payload)``), the same transaction notifies the other
    replicas that a job is claimable. False if the job had left ``claimed`` already."""
    moved = transition(
        conn,
        job_id,
        JobStatus.PENDING,
        now,
        message=reason,
        actor=SYSTEM_ACTOR,
        values=_UNCLAIMED,
        event=JobEvent.RETURNED,
    )
    if moved is None:
        return False
    if broadcast is not None:
        _NOTIFY.first(conn, {"channel": broadcast[0], "payload": broadcast[1]})
    return True
