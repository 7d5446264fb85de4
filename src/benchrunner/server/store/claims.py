"""The claim (docs/decisions/claims.md): the best eligible pending job for a runner, moved to
``claimed``."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.events import TRANSITION_EVENT
from benchrunner.core.states import JobStatus
from benchrunner.core.tiers import PER_ORGANIZATION_MIN_PRIORITY, UNLIMITED_MIN_PRIORITY
from benchrunner.protocol import JsonJobConfig
from benchrunner.server.store import capabilities, runners, tier_locks
from benchrunner.server.store.direct import Direct
from benchrunner.server.store.insert_claims import CLAIM_MESSAGE, ClaimFor
from benchrunner.server.store.jobs import JOBS, SPEC_PREFIX, CreatedRun, JobRow, NewJob, spec_read
from benchrunner.server.store.tables import in_flight, job, pending, runner, spec
from benchrunner.server.store.transitions import Event, Pick, transition


@dataclass(frozen=True)
class Claim:
    """A freshly claimed job and its spec, read in the claiming transaction."""

    job: JobRow
    spec: Any


class RunnerUnavailable(Exception):
    """The runner is paused, archived or gone: it may claim nothing."""


class RunnerHoldsJobs(RunnerUnavailable):
    """A claim ``holding_none`` refused: jobs are still in flight for the runner. A runner asks
    for work only when it holds none, so it has lost them; the channel fails them and claims
    again (``jobs.job_list_in_flight_for_runner`` reads them)."""


def _holds_jobs() -> sa.Exists:
    """Whether a job is in flight for the runner (bind ``runner_id``)."""
    held = job.alias("held")
    return sa.exists().where(
        held.c.runner_id == sa.bindparam("runner_id"), in_flight(held.c.status)
    )


class ClaimInTransaction(Exception):
    """``job_claim_alone`` could not claim in one statement: the best job for the runner is in
    a limited tier, whose lock its claim takes in a transaction, or the runner's organization
    is not the one the caller gave. ``job_claim`` makes that claim."""


@functools.cache
def _eligible_jobs(
    organization_owned: bool, excluding: bool = False, images_only: bool = False
) -> sa.Select[Any]:
    """The claim query (docs/decisions/claims.md), prepared once: bind ``runner_id`` (and
    ``runner_org``; with ``excluding``, also the ``busy_orgs`` and ``busy_ips`` whose tier locks
    were taken). ``images_only``: for a runner that did not announce template jobs (Bencher's
    runner).

    ``FOR UPDATE SKIP LOCKED`` lets concurrent claims on PostgreSQL pass each other's candidate
    rows instead of queueing behind them; SQLite, whose writers are serialized, ignores it.
    """
    other = job.alias("other")
    org_busy = sa.exists().where(
        other.c.organization_id == job.c.organization_id, in_flight(other.c.status)
    )
    ip_busy = sa.exists().where(other.c.source_ip == job.c.source_ip, in_flight(other.c.status))
    per_organization = sa.and_(
        job.c.priority >= PER_ORGANIZATION_MIN_PRIORITY, job.c.priority < UNLIMITED_MIN_PRIORITY
    )
    per_source_ip = job.c.priority < PER_ORGANIZATION_MIN_PRIORITY
    within_limits = sa.or_(
        job.c.priority >= UNLIMITED_MIN_PRIORITY,
        sa.and_(per_organization, ~org_busy),
        sa.and_(per_source_ip, ~ip_busy),
    )
    query = JOBS.where(
        pending(job.c.status),
        job.c.spec_id.in_(runners.RUNNER_SPEC_IDS),
        within_limits,
    )
    if organization_owned:
        query = query.where(job.c.organization_id == sa.bindparam("runner_org"))
    if images_only:
        query = query.where(job.c.kind == "image")
    if excluding:
        busy_orgs: sa.BindParameter[int] = sa.bindparam("busy_orgs", expanding=True)
        busy_ips: sa.BindParameter[str] = sa.bindparam("busy_ips", expanding=True)
        query = query.where(
            ~sa.and_(per_organization, job.c.organization_id.in_(busy_orgs)),
            ~sa.and_(per_source_ip, job.c.source_ip.in_(busy_ips)),
        )
    return (
        query.order_by(job.c.priority.desc(), job.c.created.asc(), job.c.id.asc())
        .limit(1)
        .with_for_update(of=job, skip_locked=True)
    )


@functools.cache
def _first_eligible(organization_owned: bool, images_only: bool) -> Direct:
    return Direct(_eligible_jobs(organization_owned, images_only=images_only))


MAX_TIER_LOCK_ATTEMPTS = 16
"""Candidates tried per claim whose tier limit turned out busy; past that the claim returns
None and the dispatcher's next wake-up (or its safety tick) tries again."""


def _best_eligible(
    conn: Connection, runner_id: int, runner_org: int | None, images_only: bool
) -> Any | None:
    """The best pending job this runner may claim, row-locked, with its tier limit locked
    (after ``runner_claim_state`` in the same transaction)."""
    owned = runner_org is not None
    params: dict[str, Any] = {"runner_id": runner_id}
    if owned:
        params["runner_org"] = runner_org
    row = _first_eligible(owned, images_only).first(conn, params)
    busy_orgs: set[int] = set()
    busy_ips: set[str] = set()
    for _ in range(MAX_TIER_LOCK_ATTEMPTS):
        if row is None or not tier_locks.needs_tier_lock(conn, row.priority):
            return row
        if tier_locks.claim_within_tier_limit(
            conn, row.priority, row.organization_id, row.source_ip
        ):
            return row
        if row.priority >= PER_ORGANIZATION_MIN_PRIORITY:
            busy_orgs.add(row.organization_id)
        else:
            busy_ips.add(row.source_ip)
        params.update(busy_orgs=sorted(busy_orgs), busy_ips=sorted(busy_ips))
        row = conn.execute(_eligible_jobs(owned, True, images_only), params).first()
    return None


_CLAIM_STATE_COLUMNS = (runner.c.paused, runner.c.archived, runner.c.organization_id)


@functools.cache
def _runner_claim_state(holding_none: bool) -> Direct:
    also = [_holds_jobs().label("holds_jobs")] if holding_none else []
    return Direct(
        sa.select(*_CLAIM_STATE_COLUMNS, *also).where(runner.c.id == sa.bindparam("runner_id"))
    )


def runner_claim_state(conn: Connection, runner_id: int, holding_none: bool = False) -> Any | None:
    """The runner's paused, archived and organization_id, read first in every claim; with
    ``holding_none``, also ``holds_jobs``: whether a job is in flight for it."""
    return _runner_claim_state(holding_none).first(conn, {"runner_id": runner_id})


def job_claim(
    conn: Connection,
    runner_id: int,
    nonce: str,
    now: dt.datetime,
    actor: str,
    templates: bool = True,
    holding_none: bool = False,
) -> Claim | None:
    """Claim the best eligible pending job for this runner (docs/decisions/claims.md), or None; a
    template job only if ``templates`` (the runner announced it runs them).

    Raises RunnerUnavailable if the runner may not claim at all, and, with ``holding_none``
    (a channel's claim), RunnerHoldsJobs while a job is in flight for it. Atomic on SQLite
    because the write transaction is ``BEGIN IMMEDIATE``; on PostgreSQL by the row lock of
    ``FOR UPDATE SKIP LOCKED``, the guarded transition, and the tier locks of ``tier_locks``.
    """
    owner = runner_claim_state(conn, runner_id, holding_none)
    if owner is None or owner.paused or owner.archived is not None:
        raise RunnerUnavailable
    if holding_none and owner.holds_jobs:
        raise RunnerHoldsJobs
    row = _best_eligible(conn, runner_id, owner.organization_id, not templates)
    if row is None:
        return None
    claimed_values: dict[str, Any] = {
        "runner_id": runner_id,
        "claimed": now,
        "last_heartbeat": now,
        "nonce": nonce,
    }
    spec_row = transition(
        conn,
        row.id,
        JobStatus.CLAIMED,
        now,
        [Event(TRANSITION_EVENT[JobStatus.CLAIMED], CLAIM_MESSAGE, actor)],
        values=claimed_values,
        then=runners.SPEC_BY_ID,
        then_params={"spec_id": row.spec_id},
    )
    if spec_row is None:  # cannot happen under the row lock; stay honest if it does
        return None
    claimed = dataclasses.replace(
        JobRow.from_row(row), status=JobStatus.CLAIMED, modified=now, **claimed_values
    )
    return Claim(claimed, spec_row)


@functools.cache
def _claim_pick(organization_owned: bool, images_only: bool, holding_none: bool) -> Pick:
    """The claim query's best job, moved by the same statement unless it is in a limited tier
    (``needs_tier_lock``), with the runner's claim state: one statement (bind ``runner_id``,
    and ``runner_org`` when ``organization_owned``). It picks no job for a runner that is
    paused, archived, gone, or not of ``runner_org``, nor, with ``holding_none``, for one that
    has a job in flight (``runner_holds_jobs``)."""
    owner = (
        sa.select(*_CLAIM_STATE_COLUMNS)
        .where(runner.c.id == sa.bindparam("runner_id"))
        .cte("owner")
    )
    runner_org = sa.bindparam("runner_org") if organization_owned else sa.null()
    usable: sa.ColumnElement[bool] = sa.exists(
        sa.select(owner.c.organization_id).where(
            owner.c.paused.is_(False),
            owner.c.archived.is_(None),
            owner.c.organization_id.is_not_distinct_from(runner_org),
        )
    )
    holds: sa.ColumnElement[bool] = _holds_jobs() if holding_none else sa.false()
    if holding_none:
        usable = sa.and_(usable, ~_holds_jobs())
    picked = _eligible_jobs(organization_owned, images_only=images_only).where(usable).cte("picked")
    unlimited = picked.c.priority >= UNLIMITED_MIN_PRIORITY

    def read(moved: sa.CTE) -> sa.Select[Any]:
        return sa.select(
            owner.c.paused.label("runner_paused"),
            owner.c.archived.label("runner_archived"),
            owner.c.organization_id.label("runner_org"),
            holds.label("runner_holds_jobs"),
            *picked.c,
            moved.c.id.label("moved_id"),
            *(column.label(f"{SPEC_PREFIX}{column.name}") for column in spec.c),
        ).select_from(
            owner.outerjoin(picked, sa.true())
            .outerjoin(moved, sa.true())
            .outerjoin(spec, spec.c.id == picked.c.spec_id)
        )

    return Pick(sa.select(picked.c.id).where(unlimited).scalar_subquery(), read)


def job_claim_alone(
    conn: Connection,
    runner_id: int,
    runner_org: int | None,
    nonce: str,
    now: dt.datetime,
    actor: str,
    templates: bool = True,
    holding_none: bool = False,
) -> Claim | None:
    """``job_claim`` as one statement, which stands on its own (PostgreSQL: it commits by
    itself, ``Database.write_each``) for a runner of organization ``runner_org`` (None: a
    shared runner).

    Raises RunnerUnavailable and RunnerHoldsJobs as ``job_claim`` does, and ClaimInTransaction
    (nothing written) when the claim needs ``job_claim``: a limited tier's job, or another
    organization. Where statements cannot write in CTEs (SQLite, whose caller runs this in a
    transaction) it is ``job_claim``."""
    if not capabilities.of(conn).writes_in_ctes:
        return job_claim(conn, runner_id, nonce, now, actor, templates, holding_none)
    claimed_values: dict[str, Any] = {
        "runner_id": runner_id,
        "claimed": now,
        "last_heartbeat": now,
        "nonce": nonce,
    }
    params: dict[str, Any] = {"runner_id": runner_id}
    if runner_org is not None:
        params["runner_org"] = runner_org
    row = transition(
        conn,
        _claim_pick(runner_org is not None, not templates, holding_none),
        JobStatus.CLAIMED,
        now,
        [Event(TRANSITION_EVENT[JobStatus.CLAIMED], CLAIM_MESSAGE, actor)],
        values=claimed_values,
        then_params=params,
    )
    if row is None or row.runner_paused or row.runner_archived is not None:
        raise RunnerUnavailable
    if row.runner_org != runner_org:
        raise ClaimInTransaction
    if row.runner_holds_jobs:
        raise RunnerHoldsJobs
    if row.id is None:
        return None
    if row.moved_id is None:
        raise ClaimInTransaction
    claimed = dataclasses.replace(
        JobRow.from_row(row), status=JobStatus.CLAIMED, modified=now, **claimed_values
    )
    spec_row = spec_read(row)
    return Claim(claimed, spec_row)


def claimed_by_insert(created: CreatedRun, params: NewJob, claim_for: ClaimFor) -> Claim | None:
    """The claim that ``jobs.job_create_with_report`` made in the job's insert for
    ``claim_for``'s runner (``insert_claims``), as a claim reads it; None if it did not."""
    if created.claimed is None:
        return None
    # As stored and read back, so that the runner gets what a claim of it would read.
    config = JsonJobConfig.model_validate_json(params.config.model_dump_json(exclude_none=True))
    claimed = JobRow(
        id=created.job_id,
        uuid=created.job_uuid,
        report_id=created.report.id,
        organization_id=params.organization_id,
        source_ip=params.origin.source_ip,
        spec_id=params.spec_id,
        config=config,
        timeout=config.timeout,
        priority=params.priority,
        status=JobStatus.CLAIMED,
        runner_id=claim_for.runner_id,
        claimed=params.now,
        started=None,
        completed=None,
        last_heartbeat=params.now,
        nonce=claim_for.nonce,
        kind=config.kind,
        created=params.now,
        modified=params.now,
        project_id=created.report.project_id,
        project_uuid=created.report.project_uuid,
    )
    return Claim(claimed, created.claimed)
