"""One change of a job's status, whole: the transition with its event rows (one statement on
PostgreSQL, ``store.transitions.transition``), its log line and metrics
(``logs.transition_log``), and its notifications (``Hooks``: the job left flight, went back to
the queue, awaits processing). Outside the store, this is the only way a job's status changes
(``tests/unit/test_status_changes.py`` holds every other module to it).

Every status change is a ``Move``, made one of two ways:

- ``Moves.move``: in a transaction of its own, then announced;
- ``apply`` (or ``apply_reading``, which also reads, or writes, what only a moved job needs,
  in the same statement on PostgreSQL) inside the caller's unit (a runner's ``completed``,
  which stores its output and reads its parse info, one statement committed on its own; a
  processed job's metrics), then ``Moves.done`` once that committed.

Two moves have an ``apply`` of their own, and are announced with ``Moves.done`` too:

- a runner's ``running`` (``Move.running``) is ``apply_running``, run with
  ``Database.write_each``: each of its statements stands on its own, where ``Moves.move``'s
  transaction would add a BEGIN and a COMMIT on PostgreSQL; and a ``running`` resent for a
  job already running refreshes the job's liveness instead of moving it;
- a claim picks its job in its statement, so its ``Move`` is known only once it is made:
  ``claim`` in the caller's transaction (a submission's hand-off) or ``claim_for_runner``,
  one statement standing on its own where the job's tier lets it (the dispatcher's, a
  hand-off's after its submission),
  then ``Moves.done(Move.claimed(claim, runner))``. A ``Move`` made first would need its job
  read first: a statement more on the hottest path.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.core.events import SYSTEM_ACTOR, TRANSITION_EVENT, JobEvent
from benchrunner.core.states import IN_FLIGHT, JobStatus
from benchrunner.server.context import ServerContext
from benchrunner.server.logs.transition_log import Timeout, job_moved
from benchrunner.server.store import capabilities, claims, transitions
from benchrunner.server.store.direct import Direct
from benchrunner.server.store.engine import Database
from benchrunner.server.store.job_logs import LogTail, job_log_store_tail
from benchrunner.server.store.jobs import JobRow

_UNCLAIMED: Mapping[str, Any] = {
    "runner_id": None,
    "claimed": None,
    "last_heartbeat": None,
    "nonce": None,
}
"""A job returned to the queue is no runner's any more."""


@dataclass(frozen=True)
class Move:
    """A status change to make: which job, to where, and what it leaves behind."""

    job: JobRow
    """The caller's copy of the job; its status is where the move starts (unless ``source``)."""
    to: JobStatus
    now: dt.datetime
    message: str
    """The event row's message."""
    actor: str | None = SYSTEM_ACTOR
    """The event row's actor."""
    event: JobEvent | None = None
    """The event row's type when it says more than the status reached (a timeout, ...)."""
    runner: str | None = None
    """The slug of the runner that asked for the move, for the log line."""
    reason: str | None = None
    """Why, for the log line."""
    timeout: Timeout | None = None
    """The timeout that made the move, counted."""
    source: JobStatus | None = None
    """Where the move starts, when the caller's copy of the job predates it."""
    owner: int | None = None
    """Only if the job is this runner's (its id)."""
    values: Mapping[str, Any] = field(default_factory=dict)
    """Further columns of the job set by the same statement."""
    requested_by: str | None = None
    """A user's cancel: a ``job_cancel_requested`` event by this user comes first."""
    broadcast: tuple[str, str] | None = None
    """A notification (``(channel, payload)``) the move's statement sends on commit."""
    output: bytes | None = None
    """The job's output row, written (or replaced) by the move's statement."""
    log: LogTail | None = None
    """The job's last live-log chunks, stored in the move's transaction ahead of it (a move
    that ends a job the runner reported on)."""
    unchanged: bool = False
    """Only if the job's row is as ``job`` holds it (its ``modified`` unchanged): a
    processor's move of a job whose judgment another began since it read it moves nothing
    (``store.jobs.job_hold_completed``)."""
    meta: Mapping[str, Any] = field(default_factory=dict)
    """The event row's ``meta`` (a processed job whose judgment failed says so there)."""

    @classmethod
    def running(cls, job: JobRow, runner_id: int, runner_slug: str, now: dt.datetime) -> Move:
        """A runner's ``running`` of its claimed job, for ``apply_running``."""
        return cls(
            job,
            JobStatus.RUNNING,
            now,
            transitions.STARTED_MESSAGE,
            runner_slug,
            runner=runner_slug,
            source=JobStatus.CLAIMED,
            owner=runner_id,
            values=transitions.started_columns(now),
        )

    @classmethod
    def claimed(cls, claim: claims.Claim, runner_slug: str) -> Move:
        """The move a committed claim made (``claim``, ``claim_for_runner``), for
        ``Moves.done``; its event row was written by the claim's statement."""
        job = claim.job
        assert job.claimed is not None
        return cls(
            job, JobStatus.CLAIMED, job.claimed, "", source=JobStatus.PENDING, runner=runner_slug
        )

    def events(self) -> list[transitions.Event]:
        kind = self.event or TRANSITION_EVENT[self.to]
        moved = transitions.Event(kind, self.message, self.actor, self.meta)
        if self.requested_by is None:
            return [moved]
        asked = f"{self.requested_by} asked to cancel"
        return [transitions.Event(JobEvent.CANCEL_REQUESTED, asked, self.requested_by), moved]

    def columns(self) -> dict[str, Any]:
        """The job's columns the move sets besides its status."""
        if self.to == JobStatus.PENDING:
            stamped: Mapping[str, Any] = _UNCLAIMED
        elif self.to in (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELED):
            stamped = {"completed": self.now}
        else:
            stamped = {}
        return {**stamped, **self.values}


def apply(conn: Connection, move: Move) -> bool:
    """The transition and its event rows, in the caller's transaction: True if the job moved
    (False: it had left the move's sources, or is not ``owner``'s)."""
    return apply_reading(conn, move) is not None


def apply_reading(
    conn: Connection,
    move: Move,
    then: Direct | transitions.Guarded | None = None,
    then_params: Mapping[str, Any] | None = None,
) -> Any | None:
    """``apply``, reading ``then`` (a ``SELECT``, or a write only a moved job makes and its
    read, bound by ``then_params``) in the same statement on PostgreSQL: its first row if the
    job moved, else None (without ``then``, a row holding the job's id). The move's ``log`` is
    stored ahead of it: where the engine writes in CTEs, by the move's own statement, and, if
    that did not move the job, with ``job_log_store_tail`` before the move is tried again, as
    elsewhere (what the tail stores when the move fails is then what it always stored)."""
    log = move.log
    if log is not None and not log.stored and capabilities.of(conn).writes_in_ctes:
        moved = _transition(conn, move, then, then_params, log)
        if moved is not None:
            return moved
        log.stored = None  # the statement stored nothing
    if log is not None:
        job_log_store_tail(conn, log)
    return _transition(conn, move, then, then_params)


def _transition(
    conn: Connection,
    move: Move,
    then: Direct | transitions.Guarded | None,
    then_params: Mapping[str, Any] | None,
    log: LogTail | None = None,
) -> Any | None:
    return transitions.transition(
        conn,
        move.job.id,
        move.to,
        move.now,
        move.events(),
        values=move.columns(),
        runner_id=move.owner,
        notify=move.broadcast,
        then=then,
        then_params=then_params,
        output=move.output,
        read_modified=move.job.modified if move.unchanged else None,
        log=log,
    )


def apply_running(conn: Connection, move: Move) -> transitions.Started | None:
    """``apply`` for a runner's ``running`` (``Move.running``), each statement standing on its
    own (run it with ``Database.write_each``; ``Moves.done`` if it moved): what became of the
    job, which a ``running`` resent for a job already running only refreshes the liveness of
    (``store.transitions.job_running_again``); None if the job is not the runner's."""
    assert move.to == JobStatus.RUNNING and move.owner is not None
    if apply(conn, move):
        return transitions.Started(JobStatus.RUNNING, move.now, moved=True)
    return transitions.job_running_again(conn, move.job.id, move.owner, move.now)


def claim(
    conn: Connection,
    runner_id: int,
    nonce: str,
    now: dt.datetime,
    runner_slug: str,
    templates: bool,
    holding_none: bool = False,
) -> claims.Claim | None:
    """The claim of the best eligible pending job for a runner, in the caller's transaction
    (``store.claims.job_claim``); ``Moves.done(Move.claimed(...))`` once it committed."""
    return claims.job_claim(conn, runner_id, nonce, now, runner_slug, templates, holding_none)


def _claim_alone(
    conn: Connection,
    runner_id: int,
    runner_org: int | None,
    nonce: str,
    now: dt.datetime,
    runner_slug: str,
    templates: bool,
    holding_none: bool = False,
) -> claims.Claim | None:
    """``claim`` as one statement standing on its own (``store.claims.job_claim_alone``, run
    by ``Database.write_each``). Raises ``claims.ClaimInTransaction`` when ``claim`` must
    make it."""
    return claims.job_claim_alone(
        conn, runner_id, runner_org, nonce, now, runner_slug, templates, holding_none
    )


async def claim_for_runner(
    db: Database,
    runner_id: int,
    runner_org: int | None,
    nonce: str,
    now: dt.datetime,
    runner_slug: str,
    templates: bool,
    *,
    org_known: bool = True,
) -> claims.Claim | None:
    """A channel's claim for a runner that holds no job (the dispatcher's, a hand-off's): one
    statement standing on its own (``store.claims.job_claim_alone``; ``runner_org`` None: a
    runner of no organization), or ``claim`` in a transaction where that says it must be one,
    or where the runner's organization is not known (not ``org_known``).
    ``Moves.done(Move.claimed(...))`` once it returned a claim."""
    args = (nonce, now, runner_slug, templates)
    try:
        if not org_known:
            raise claims.ClaimInTransaction
        return await db.write_each(_claim_alone, runner_id, runner_org, *args, holding_none=True)
    except claims.ClaimInTransaction:
        return await db.write(claim, runner_id, *args, holding_none=True)


def _nothing(_: Any) -> None:
    return None


def _no_broadcast(_: int) -> tuple[str, str] | None:
    return None


@dataclass(frozen=True)
class Hooks:
    """Who hears of moves in this process."""

    left_flight: Callable[[JobRow], None] = _nothing
    """A job left ``claimed`` or ``running`` (also: a late result completed a failed job)."""
    returned: Callable[[JobRow], None] = _nothing
    """A job went back to the queue."""
    awaits_processing: Callable[[int], None] = _nothing
    """A job was completed and is left to the background processor."""
    broadcast: Callable[[int], tuple[str, str] | None] = _no_broadcast
    """The notification that tells the other replicas of a claimable job of a spec."""


class Moves:
    """Makes moves and announces them, for one server process."""

    def __init__(self, ctx: ServerContext, hooks: Hooks | None = None) -> None:
        self._ctx = ctx
        self.hooks = hooks or Hooks()

    async def move(self, move: Move) -> bool:
        """Make ``move`` in a transaction of its own and announce it; True if the job moved."""
        if move.to == JobStatus.PENDING and move.broadcast is None:
            broadcast = self.hooks.broadcast(move.job.spec_id)
            if broadcast is not None:
                move = dataclasses.replace(move, broadcast=broadcast)
        moved = await self._ctx.db.write(apply, move)
        if moved:
            self.done(move)
        return moved

    def done(self, *moves: Move, judging: Iterable[int] = ()) -> None:
        """Announce committed moves (in their order): log and count each, then notify.
        ``judging``: jobs left ``completed`` that the caller processes or judges, which then
        moves them (``processing.completion``, ``processing.judgment``): not queued for
        processing."""
        for move in moves:
            job_moved(
                self._ctx,
                move.job,
                move.to,
                move.now,
                source=move.source,
                runner=move.runner,
                reason=move.reason,
                timeout=move.timeout,
            )
        processed = {m.job.id for m in moves if m.to == JobStatus.PROCESSED} | set(judging)
        for move in moves:
            if move.to not in IN_FLIGHT and move.to != JobStatus.PROCESSED:
                self.hooks.left_flight(move.job)
            if move.to == JobStatus.PENDING:
                self.hooks.returned(move.job)
            elif move.to == JobStatus.COMPLETED and move.job.id not in processed:
                self.hooks.awaits_processing(move.job.id)
