"""A new job claimed by the statement that inserts it (PostgreSQL; docs/decisions/claims.md).

A submission that reserved an idle runner of this replica (``scheduling.hand_off``) inserts its
job already claimed for that runner when the claim query would have picked the new job for it:
the runner may claim (not paused, not archived, holding no job, of no organization or of the
job's), it runs the job's spec, and no pending job it may take comes first (as high a
priority, created earlier). The insert writes what a claim writes (status, runner, ``claimed``,
``last_heartbeat``, nonce, and the claim's event row after the job's ``job_created``); when the
runner may not have the job, the same statement inserts it pending, and the caller claims as
before. Only an unlimited tier's job is claimed so: a limited tier's claim takes its tier's
lock in a transaction (``tier_locks``)."""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from benchrunner.core.events import TRANSITION_EVENT
from benchrunner.core.states import JobStatus
from benchrunner.core.tiers import UNLIMITED_MIN_PRIORITY
from benchrunner.server.store.tables import in_flight, job, pending, runner, runner_spec

CLAIM_MESSAGE = "claimed by runner"
"""The claim's event message, as ``claims.job_claim`` writes it."""


@dataclass(frozen=True)
class ClaimFor:
    """The runner a submission reserved, for its job's insert to claim for."""

    runner_id: int
    runner_slug: str
    nonce: str
    templates: bool
    """The runner runs template jobs too (not only image jobs)."""


def claimable(priority: int) -> bool:
    """Whether a job of ``priority`` may be claimed by its insert (no tier lock to take)."""
    return priority >= UNLIMITED_MIN_PRIORITY


@functools.cache
def claimant(images_only: bool) -> sa.CTE:
    """One row, the claim's columns for the new job, when the runner ``claim_runner_id`` may
    have it (see the module); no row otherwise. Bind ``claim_runner_id``, ``claim_now``,
    ``claim_nonce`` and the new job's ``job_spec_id``, ``job_organization_id`` and
    ``job_priority``."""
    runner_id = sa.bindparam("claim_runner_id", type_=runner.c.id.type)
    now = sa.bindparam("claim_now", type_=job.c.claimed.type)
    held = job.alias("held")
    ahead = job.alias("ahead")
    runs_spec = sa.select(runner_spec.c.spec_id).where(runner_spec.c.runner_id == runner_id)
    same_organization = sa.or_(
        runner.c.organization_id.is_(None),
        runner.c.organization_id == ahead.c.organization_id,
    )
    first = [
        pending(ahead.c.status),
        ahead.c.spec_id.in_(runs_spec),
        ahead.c.priority >= sa.bindparam("job_priority"),
        same_organization,
    ]
    if images_only:
        first.append(ahead.c.kind == "image")
    return (
        sa.select(
            sa.literal(int(JobStatus.CLAIMED), job.c.status.type).label("status"),
            runner.c.id.label("runner_id"),
            now.label("claimed"),
            now.label("last_heartbeat"),
            sa.bindparam("claim_nonce", type_=job.c.nonce.type).label("nonce"),
        )
        .where(
            runner.c.id == runner_id,
            runner.c.paused.is_(False),
            runner.c.archived.is_(None),
            sa.or_(
                runner.c.organization_id.is_(None),
                runner.c.organization_id == sa.bindparam("job_organization_id"),
            ),
            sa.bindparam("job_spec_id").in_(runs_spec),
            ~sa.exists().where(held.c.runner_id == runner.c.id, in_flight(held.c.status)),
            ~sa.exists().where(*first),
        )
        .cte("claimant")
    )


def claim_params(claim_for: ClaimFor, now: dt.datetime) -> dict[str, Any]:
    """``claimant``'s own parameters, and the claim event's (``claim_event_*``)."""
    return {
        "claim_runner_id": claim_for.runner_id,
        "claim_now": now,
        "claim_nonce": claim_for.nonce,
        "claim_event_type": str(TRANSITION_EVENT[JobStatus.CLAIMED]),
        "claim_event_message": CLAIM_MESSAGE,
        "claim_event_actor": claim_for.runner_slug,
    }
