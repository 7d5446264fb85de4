"""A new job handed to an idle runner by its own submission (docs/decisions/claims.md).

Without this, a submission commits, wakes the dispatcher, and the dispatcher claims the job for
the waiting runner in a second transaction. Here the submission reserves the longest-waiting
runner of the job's spec before its transaction, claims for it inside that transaction (the
same claim query, so the runner gets the best job it may take, which is usually the new one),
and hands the claim over once it commits. A rolled-back submission, or a claim that found
nothing, gives the runner back to the dispatcher; a job that no reserved runner took wakes the
dispatcher (and the other replicas) as before.

On PostgreSQL statements cost round trips: there the submission's own insert claims the job
for the reserved runner when the claim query would have picked it for that runner
(``store.insert_claims``; ``claim_for``, then ``claimed_by_insert``), so that the job reaches
the runner after one statement. When it may not (a limited tier's job, a job ahead of it in
the queue for that runner), the claim for the reserved runner is one statement of its own,
made once the submission's job has committed (``claim_apart``), with the submission's time.
SQLite claims in the submission's transaction (``claim``), which costs no round trip.

Which spec a submission names is known only inside its transaction, so the reservation goes by
the spec id the same name resolved to last time: a stale one costs one claim that finds
nothing, never a wrong claim.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import secrets
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

from sqlalchemy.engine import Connection

from benchrunner.server.moves import move
from benchrunner.server.moves.move import Move, Moves
from benchrunner.server.scheduling.dispatcher import Dispatcher, Waiter
from benchrunner.server.scheduling.wakeups import Wakeups
from benchrunner.server.store import claims, insert_claims, jobs
from benchrunner.server.store.engine import Database
from benchrunner.server.store.insert_claims import ClaimFor

log = logging.getLogger(__name__)

HAND_OVER_WAIT = 1.0
"""Seconds a submission waits, at most, for its runner's channel to take the claimed job, so
that the job goes out before the submission's answer; the channel takes it in the next steps
of the event loop, so this bound is only a guard."""

MAX_REMEMBERED_SPECS = 1024
"""Spec names remembered; past this the memory starts again (a cost, never a wrong claim)."""
MAX_SPEC_REF = 128
"""Longer spec references (a UUID can be written many ways) are not remembered."""


class Written(Protocol):
    """What a submission's transaction tells of its job."""

    @property
    def job_uuid(self) -> UUID | None: ...
    @property
    def spec_id(self) -> int | None: ...


@dataclass
class HandOff:
    """A runner reserved by one submission, and what its claim found."""

    waiter: Waiter
    claim: claims.Claim | None = None


class HandOffs:
    def __init__(self, moves: Moves, dispatcher: Dispatcher, wakeups: Wakeups) -> None:
        self._moves = moves
        self._dispatcher = dispatcher
        self._wakeups = wakeups
        self._spec_ids: dict[str | None, int] = {}
        """The spec id each spec reference of a submission resolved to last (None: the
        fallback spec)."""

    def reserve(self, spec_ref: str | None, *, template: bool) -> HandOff | None:
        """An idle runner for a job of the spec ``spec_ref`` names (a template job if
        ``template``), or None (no runner of it waits, or the name was never seen)."""
        spec_id = self._spec_ids.get(spec_ref)
        if spec_id is None:
            return None
        waiter = self._dispatcher.reserve(spec_id, template=template)
        return None if waiter is None else HandOff(waiter)

    @staticmethod
    def claim(conn: Connection, hand_off: HandOff, now: dt.datetime) -> None:
        """Inside the submission's transaction, after its job is created: claim for the
        reserved runner."""
        waiter = hand_off.waiter
        try:
            hand_off.claim = move.claim(
                conn,
                waiter.runner_id,
                secrets.token_hex(16),
                now,
                waiter.runner_slug,
                waiter.templates,
                holding_none=True,
            )
        except claims.RunnerUnavailable:  # or holds jobs: the dispatcher's claim says so
            hand_off.claim = None

    @staticmethod
    def claim_for(hand_off: HandOff, priority: int) -> ClaimFor | None:
        """What the submission's insert needs to claim its job (of ``priority``) for the
        reserved runner (PostgreSQL); None when that claim must be made apart (a limited
        tier's job)."""
        if not insert_claims.claimable(priority):
            return None
        waiter = hand_off.waiter
        nonce = secrets.token_hex(16)
        return ClaimFor(waiter.runner_id, waiter.runner_slug, nonce, waiter.templates)

    @staticmethod
    def claimed_by_insert(
        hand_off: HandOff, created: jobs.CreatedRun, params: jobs.NewJob, claim_for: ClaimFor
    ) -> None:
        """Inside the submission's unit, after its insert given ``claim_for``: what it claimed
        (None: nothing, and ``claim_apart`` claims once it committed)."""
        hand_off.claim = claims.claimed_by_insert(created, params, claim_for)

    @classmethod
    async def claim_apart(cls, db: Database, hand_off: HandOff, now: dt.datetime) -> None:
        """After the submission's job committed: claim for the reserved runner in a statement
        of its own (``store.claims.job_claim_alone``), or in a transaction where that claim
        says it must be one (a limited tier's job). A claim that fails leaves ``claim`` None:
        the job is committed whatever happens here, and ``written`` then wakes the dispatcher
        for it."""
        waiter = hand_off.waiter
        try:
            hand_off.claim = await move.claim_for_runner(
                db,
                waiter.runner_id,
                waiter.organization_id,
                secrets.token_hex(16),
                now,
                waiter.runner_slug,
                waiter.templates,
            )
        except claims.RunnerUnavailable:  # or holds jobs: the dispatcher's claim says so
            hand_off.claim = None
        except Exception:
            log.exception("claiming a submitted job for runner %s failed", waiter.runner_slug)
            hand_off.claim = None

    def broadcast(self, hand_off: HandOff | None, spec_id: int) -> tuple[str, str] | None:
        """The notification a submission's job insert sends to the other replicas: none when a
        runner here is reserved for it (``written`` sends one if its claim takes another
        job)."""
        return None if hand_off is not None else self._wakeups.job_broadcast(spec_id)

    def written(
        self, hand_off: HandOff | None, spec_ref: str | None, outcome: Written | None
    ) -> Move | None:
        """The submission's write ended (called by the shielded task that wrote, so that this
        runs even when the request was cancelled meanwhile, and in the same step of the event
        loop as the write's end): with its job committed (``outcome``), the claim goes to its
        runner and, unless that claim took this very job, the dispatcher is woken for it;
        otherwise (None: the write raised) what the claim found was rolled back, and the
        runner waits again.

        Returns the claim's move, for ``delivered`` to announce once the runner's channel has
        sent the job: its log line and counts are not on the job's way to the runner."""
        if outcome is None or outcome.job_uuid is None or outcome.spec_id is None:
            if hand_off is not None:
                self._dispatcher.settle(hand_off.waiter, None)
            return None
        if len(self._spec_ids) >= MAX_REMEMBERED_SPECS:
            self._spec_ids.clear()
        if spec_ref is None or len(spec_ref) <= MAX_SPEC_REF:
            self._spec_ids[spec_ref] = outcome.spec_id
        claim = None if hand_off is None else hand_off.claim
        if hand_off is not None:
            self._dispatcher.settle(hand_off.waiter, claim)
        if hand_off is None:  # the job's insert told the other replicas (``broadcast``)
            self._wakeups.job_created_here(outcome.spec_id)
        elif claim is None or claim.job.uuid != outcome.job_uuid:
            self._wakeups.job_created(outcome.spec_id)
        if hand_off is None or claim is None:
            return None
        return Move.claimed(claim, hand_off.waiter.runner_slug)

    async def delivered(self, hand_off: HandOff | None, claimed: Move | None) -> None:
        """Once ``written`` ran: returns when the runner's channel has taken the claimed job,
        so that it goes out before the submission's answer (or the dispatcher had its turn);
        then, or if cancelled meanwhile, announces ``claimed`` (what ``written`` returned)."""
        try:
            if hand_off is not None and hand_off.claim is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(hand_off.waiter.done.wait(), HAND_OVER_WAIT)
            else:
                await asyncio.sleep(0)  # the dispatcher hands the job to an idle runner first
        finally:
            if claimed is not None:
                self._moves.done(claimed)
