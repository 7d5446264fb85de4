"""Every status change of a job: one guarded ``UPDATE ... WHERE id = ? AND status IN (sources)``
plus its ``job_event`` rows, in the caller's transaction (docs/decisions/job-lifecycle.md), as one
statement on PostgreSQL (``transition``). Zero rows updated means someone else changed the job
first; callers re-read and answer from the current state. Outside the store, a status changes
only through ``benchrunner.server.moves.move``, which also logs, counts and notifies the move.
Beside them, the heartbeats' writes of a job's liveness, which change no status.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.events import SYSTEM_ACTOR, JobEvent
from benchrunner.core.states import JobStatus, sources_of
from benchrunner.server.store import capabilities, job_logs, job_outputs
from benchrunner.server.store.arrays import unnested
from benchrunner.server.store.capabilities import Capabilities
from benchrunner.server.store.direct import Direct, insert_values
from benchrunner.server.store.tables import (
    in_flight,
    job,
    job_event,
    job_output,
    runner,
    unindexed,
)

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


def _meta_json(meta: Mapping[str, Any]) -> str:
    """An event's ``meta`` as stored; most events have none, stored without encoding."""
    return json.dumps(dict(meta), sort_keys=True, default=str) if meta else "{}"


def event_add(
    conn: Connection,
    job_id: int,
    event_type: str,
    message: str,
    actor: str | None,
    meta: Mapping[str, Any],
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
    return _event_row_after(created.cte("new_job"), *((notified(),) if notify else ()))


def notified() -> sa.ColumnElement[Any]:
    """``pg_notify(:notify_channel, :notify_payload)`` as a column of a statement's result:
    PostgreSQL sends it when (and only if) the statement's transaction commits."""
    return sa.func.pg_notify(
        sa.bindparam("notify_channel", type_=sa.String),
        sa.bindparam("notify_payload", type_=sa.String),
    ).label("notified")


def event_insert(moved: sa.CTE) -> sa.Insert:
    """The ``job_event`` row of the job that ``moved`` (a data-modifying CTE returning its id)
    wrote; its parameters are ``event_params``'."""
    values = [sa.bindparam(name, type_=job_event.c[column].type) for name, column in _EVENT_PARAMS]
    event = sa.select(moved.c.id, *values)
    return job_event.insert().from_select(list(_EVENT_COLUMNS), event).returning(job_event.c.job_id)


def _event_row_after(moved: sa.CTE, *also: sa.ColumnElement[Any]) -> Direct:
    """``event_insert`` after ``moved``, in the same statement, returning ``also`` too."""
    event = event_insert(moved)
    if also:
        event = event.returning(*also)
    return Direct(event.add_cte(moved, nest_here=True))


def event_params(
    event_type: str, message: str, actor: str | None, meta: Mapping[str, Any], now: dt.datetime
) -> dict[str, Any]:
    """The event row's parameters of a ``with_event`` statement."""
    return {
        "event_type": str(event_type),
        "event_message": message,
        "event_actor": actor,
        "event_meta": _meta_json(meta),
        "event_created": now,
    }


def _guarded_update(
    target: JobStatus,
    columns: tuple[str, ...],
    runner_guard: bool,
    job_id: sa.ColumnElement[Any] | None = None,
    *also: sa.ColumnElement[bool],
) -> sa.Update:
    """``UPDATE job SET status = target ... WHERE id = :job_id AND status IN (sources)``
    (and ``also``), returning the id when the job moved; ``job_id``: the job's id as the
    statement chooses it (``Pick``) instead of bound."""
    allowed = sorted(int(s) for s in sources_of(target))
    # The job is found by its id alone: its guards read the row found (``tables.unindexed``).
    guard = [unindexed(job.c.runner_id) == sa.bindparam("owner_id")] if runner_guard else []
    guard.extend(also)
    chosen = sa.bindparam("job_id") if job_id is None else job_id
    return (
        job.update()
        .where(job.c.id == chosen, unindexed(job.c.status).in_(allowed), *guard)
        .values(
            status=int(target),
            modified=sa.bindparam("now"),
            **{name: sa.bindparam(f"v_{name}") for name in columns},
        )
        .returning(job.c.id)
    )


_UNCHANGED = job.c.modified == sa.bindparam("read_modified")
"""A move's guard that the job's row is as its caller read it (``transition``'s
``read_modified``)."""


@dataclass(frozen=True)
class Guarded:
    """A write that only a moved job makes, and the read of what it wrote (a transition's
    ``then``). On PostgreSQL ``build`` gives it as a ``SELECT`` over a data-modifying CTE of
    the move's own statement, guarded by ``moved`` (the move's CTE, returning the job's id);
    elsewhere ``alone`` runs as a statement of its own once the job moved. Both bind the same
    parameters (``then_params``)."""

    build: Callable[[sa.CTE], sa.Select[Any]]
    alone: Direct


@dataclass(frozen=True)
class Pick:
    """A job that the transition's own statement chooses (PostgreSQL, ``writes_in_ctes``):
    a claim picks its job and moves it in one statement."""

    job_id: sa.ScalarSelect[Any]
    """The id of the job to move (NULL: none), a row-locking choice made by the statement."""
    read: Callable[[sa.CTE], sa.Select[Any]]
    """The statement's result, given the move's CTE (returning the moved job's id): a row
    whether or not the job moved, which says so."""


@dataclass(frozen=True)
class Event:
    """A ``job_event`` row a transition writes with its move."""

    type: str
    message: str
    actor: str | None
    meta: Mapping[str, Any] = field(default_factory=dict)


def _events_of(moved: sa.CTE, count: int) -> sa.Insert:
    """The ``count`` ``job_event`` rows of the job that ``moved`` wrote (one ``SELECT`` each,
    bound as ``event_type_0``, ...)."""
    rows = [
        sa.select(
            moved.c.id,
            *(
                sa.bindparam(f"{name}_{index}", type_=job_event.c[column].type)
                for name, column in _EVENT_PARAMS
            ),
        )
        for index in range(count)
    ]
    chosen = rows[0] if count == 1 else sa.union_all(*rows)
    return job_event.insert().from_select(list(_EVENT_COLUMNS), chosen)


@dataclass(frozen=True)
class _Shape:
    """What a transition's statement depends on besides its bound values."""

    target: JobStatus
    columns: tuple[str, ...]
    runner_guard: bool
    events: int
    notify: bool
    then: sa.Select[Any] | Guarded | None
    output: Capabilities | None = None
    """The engine whose insert writes the job's output row in the statement (None: none)."""
    pick: Pick | None = None
    unchanged: bool = False
    log: bool = False
    """The statement stores the job's last live-log chunks too (``job_logs.tail_after``)."""


@functools.cache
def _one_statement(shape: _Shape) -> Direct:
    """PostgreSQL: the guarded update, its event rows, an optional output row, an optional
    ``pg_notify`` (sent when, and only if, the transaction commits) and an optional read, as
    one statement: the writes are data-modifying CTEs (which PostgreSQL runs whether or not the
    query reads them, and allows only at the top level). A row comes back only if the job
    moved."""
    picked = None if shape.pick is None else shape.pick.job_id
    fits = (job_logs.TAIL_FITS,) if shape.log else ()
    also = (*fits, _UNCHANGED) if shape.unchanged else fits
    moved = _guarded_update(shape.target, shape.columns, shape.runner_guard, picked, *also).cte(
        "moved"
    )
    written = _events_of(moved, shape.events).returning(job_event.c.job_id).cte("written")
    if shape.pick is not None:  # a row whether or not the job moved: no guard on the read
        return Direct(
            shape.pick.read(moved).add_columns(
                sa.exists(sa.select(written.c.job_id)).label("evented")
            )
        )
    if isinstance(shape.then, Guarded):
        query = shape.then.build(moved)
    else:
        query = shape.then if shape.then is not None else sa.select(moved.c.id)
    query = query.where(sa.exists(sa.select(written.c.job_id)))
    if shape.output is not None:
        kept = job_outputs.output_after(moved, shape.output).returning(job_output.c.job_id)
        query = query.where(sa.exists(sa.select(kept.cte("kept").c.job_id)))
    if shape.log:
        query = query.add_columns(job_logs.TAIL_IN_FLIGHT).add_cte(
            job_logs.tail_after(moved).cte("logged")
        )
    if shape.notify:
        query = query.add_columns(
            sa.func.pg_notify(
                sa.bindparam("notify_channel", type_=sa.String),
                sa.bindparam("notify_payload", type_=sa.String),
            ).label("notified")
        )
    return Direct(query)


@functools.cache
def _update_alone(
    target: JobStatus, columns: tuple[str, ...], runner_guard: bool, unchanged: bool
) -> Direct:
    """SQLite: the guarded update alone (it has no data-modifying CTEs); the event rows and
    the read follow it as statements of their own, which cost SQLite no round trip."""
    also = (_UNCHANGED,) if unchanged else ()
    return Direct(_guarded_update(target, columns, runner_guard, None, *also))


def transition(
    conn: Connection,
    job_id: int | Pick,
    target: JobStatus,
    now: dt.datetime,
    events: Sequence[Event],
    *,
    values: Mapping[str, Any] | None = None,
    runner_id: int | None = None,
    notify: tuple[str, str] | None = None,
    then: Direct | Guarded | None = None,
    then_params: Mapping[str, Any] | None = None,
    output: bytes | None = None,
    read_modified: dt.datetime | None = None,
    log: job_logs.LogTail | None = None,
) -> Any | None:
    """The one status change of the store: compare-and-set the job to ``target`` (only if it
    is ``runner_id``'s, when given; only if its ``modified`` is still ``read_modified``,
    when given: nothing changed the row since the caller read it), setting the columns of
    ``values`` too, and write
    ``events`` (at least one). With ``notify`` (a ``(channel, payload)``), PostgreSQL also
    notifies it on commit; with ``output``, the moved job's ``job_output`` row is written (or
    replaced); with ``then`` (a ``SELECT``, or a ``Guarded`` write and its read), its first
    row is read, which only a moved job needs. Returns that row (without ``then``: a row
    holding the job's ``id``), or None if the job did not move. On PostgreSQL all of it is one
    statement.

    With ``log`` (``writes_in_ctes`` only), the job's last live-log chunks are stored by the
    same statement, as ``job_log_store`` would store them, if the job moved and was in flight
    (``log.stored`` says which); the job does not move if what its log has stored does not
    let the statement store them so (``job_logs.TAIL_FITS``): the caller then stores them
    apart and moves again (``moves.move.apply_reading``).

    With a ``Pick`` for ``job_id`` (PostgreSQL only), the statement chooses the job itself and
    returns the pick's ``read`` row (``then_params`` bind the choice), moved or not; None when
    that read found no row."""
    assert events, "every status change writes an event"
    columns = tuple(sorted(values or {}))
    pick = job_id if isinstance(job_id, Pick) else None
    params: dict[str, Any] = {
        **({} if pick is not None else {"job_id": job_id}),
        "now": now,
        **{f"v_{k}": v for k, v in (values or {}).items()},
        **(then_params or {}),
    }
    if runner_id is not None:
        params["owner_id"] = runner_id
    if read_modified is not None:
        params["read_modified"] = read_modified
    if capabilities.of(conn).writes_in_ctes:
        select: sa.Select[Any] | Guarded | None = None
        if isinstance(then, Guarded):
            select = then
        elif then is not None:
            assert isinstance(then.statement, sa.Select)
            select = then.statement
        engine = capabilities.of(conn)
        shape = _Shape(
            target,
            columns,
            runner_id is not None,
            len(events),
            notify is not None,
            select,
            None if output is None else engine,
            pick,
            read_modified is not None,
            log is not None,
        )
        if output is not None:
            params[job_outputs.OUTPUT_PARAM] = output
        if log is not None:
            assert pick is None, "a tail belongs to a move of a known job"
            params.update(job_logs.tail_params(log))
        for index, event in enumerate(events):
            for name, value in event_params(
                event.type, event.message, event.actor, event.meta, now
            ).items():
                params[f"{name}_{index}"] = value
        if notify is not None:
            params["notify_channel"], params["notify_payload"] = notify
        row = _one_statement(shape).first(conn, params)
        if log is not None and row is not None:
            log.stored = bool(row.log_in_flight)
        return row
    assert log is None, "a move stores its tail in its statement only where it writes in CTEs"
    assert pick is None, "a statement that picks its job writes in CTEs"
    assert isinstance(job_id, int)
    unchanged = read_modified is not None
    moved = _update_alone(target, columns, runner_id is not None, unchanged).first(conn, params)
    if moved is None:
        return None
    for event in events:
        event_add(conn, job_id, event.type, event.message, event.actor, event.meta, now)
    if output is not None:
        job_outputs.output_put(conn, job_id, output)
    if then is None:
        return moved
    return (then.alone if isinstance(then, Guarded) else then).first(conn, then_params)


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


STARTED_MESSAGE = "runner started the benchmark"
"""The event message of a runner's ``running`` that moved its job."""


def started_columns(now: dt.datetime) -> dict[str, Any]:
    """The columns a runner's ``running`` sets with the move to running."""
    return {"started": now, "last_heartbeat": now}


def job_running_again(
    conn: Connection, job_id: int, runner_id: int, now: dt.datetime
) -> Started | None:
    """A ``running`` that did not move the job (``moves.move.apply_running``'s second half): the
    job's status, its liveness refreshed if it is running; None if it is not this runner's
    job. Each statement stands on its own (``Database.write_each``)."""
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
    .where(job.c.id == sa.bindparam("job_id"), in_flight(unindexed(job.c.status)))
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


# The shared write's statements run straight on the driver (``Direct``): a thousand rows
# through ``Connection.execute`` cost more in its per-row parameter handling than in the
# database (benchmarks/RESULTS.md, ``many_runners``).
_TOUCH_JOB_AT = Direct(
    job.update()
    .where(job.c.id == sa.bindparam("job", type_=sa.Integer), in_flight(job.c.status))
    .values(last_heartbeat=sa.bindparam("at", type_=job.c.last_heartbeat.type))
)
_TOUCH_RUNNER_AT = Direct(
    runner.update()
    .where(runner.c.id == sa.bindparam("runner", type_=sa.Integer))
    .values(last_heartbeat=sa.bindparam("at", type_=runner.c.last_heartbeat.type))
)
_RUNNING_AMONG = Direct(
    sa.select(job.c.id).where(
        job.c.id.in_(sa.bindparam("ids", expanding=True)),
        job.c.status == JobStatus.RUNNING.value,
    )
)


_HEARD = unnested([("job", sa.Integer()), ("at", job.c.last_heartbeat.type)])
_TOUCH_JOBS_GIVEN = Direct(
    job.update()
    .where(job.c.id == _HEARD.c.job, in_flight(job.c.status))
    .values(last_heartbeat=_HEARD.c.at)
    .returning(job.c.id, job.c.status)
)
_RUNNERS_HEARD = unnested([("runner", sa.Integer()), ("at", runner.c.last_heartbeat.type)])
_TOUCH_RUNNERS_GIVEN = Direct(
    runner.update()
    .where(runner.c.id == _RUNNERS_HEARD.c.runner)
    .values(last_heartbeat=_RUNNERS_HEARD.c.at)
)


def jobs_touch(conn: Connection, beats: list[Beat]) -> set[int]:
    """Store the heartbeats of several jobs and their runners (each job's and runner's newest);
    the jobs among them that are no longer running (or no longer there). Three statements
    whatever their number; two on PostgreSQL, each row sent in arrays (``bulk_arrays``), where
    ``executemany`` costs a statement a row on both sides."""
    runners: dict[int, dt.datetime] = {}
    for beat in beats:
        runners[beat.runner_id] = max(beat.at, runners.get(beat.runner_id, beat.at))
    ids = {beat.job_id for beat in beats}
    if capabilities.of(conn).bulk_arrays:
        heard = {"job": [b.job_id for b in beats], "at": [b.at for b in beats]}
        touched = _TOUCH_JOBS_GIVEN.all(conn, heard)
        _TOUCH_RUNNERS_GIVEN.run(conn, {"runner": list(runners), "at": list(runners.values())})
        return ids.difference(row.id for row in touched if row.status == JobStatus.RUNNING)
    _TOUCH_JOB_AT.run_many(conn, [{"job": beat.job_id, "at": beat.at} for beat in beats])
    _TOUCH_RUNNER_AT.run_many(conn, [{"runner": r, "at": at} for r, at in runners.items()])
    running = _RUNNING_AMONG.all(conn, {"ids": list(ids)})
    return ids.difference(row.id for row in running)  # a deleted job is no longer running


def job_canceled_by_runner(conn: Connection, job_id: int) -> bool:
    """Whether the job's runner canceled it (its ``canceled`` moved it): that move writes the
    ``job_canceled`` event with the runner as actor; a user's cancel writes it as
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
