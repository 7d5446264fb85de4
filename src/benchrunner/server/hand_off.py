"""A new job handed to an idle runner by its own submission (SPEC section 5).

Without this, a submission commits, wakes the dispatcher, and the dispatcher claims the job for
the waiting runner in a second transaction. Here the submission reserves the longest-waiting
runner of the job's spec before its transaction, claims for it inside that transaction (the
same claim query, so the runner gets the best job it may take, which is usually the new one),
and hands the claim over once it commits. A rolled-back submission, or a claim that found
nothing, gives the runner back to the dispatcher; a job that no reserved runner took wakes the
dispatcher (and the other replicas) as before.

Which spec a submission names is known only inside its transaction, so the reservation goes by
the spec id the same name resolved to last time: a stale one costs one claim that finds
nothing, never a wrong claim.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import secrets
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.server.context import ServerContext
from benchrunner.server.dispatcher import Dispatcher, Waiter
from benchrunner.server.store import claims
from benchrunner.server.transition_log import job_moved
from benchrunner.server.wakeups import Wakeups

HAND_OVER_WAIT = 1.0
"""Seconds a submission waits, at most, for its runner's channel to take the claimed job, so
that the job goes out before the submission's answer; the channel takes it in the next steps
of the event loop, so this bound is only a guard."""

MAX_REMEMBERED_SPECS = 1024
"""Spec names remembered; past this the memory starts again (a cost, never a wrong claim)."""


@dataclass
class HandOff:
    """A runner reserved by one submission, and what its claim found."""

    waiter: Waiter
    nonce: str
    claim: claims.Claim | None = None
    claimed_at: dt.datetime | None = None


class HandOffs:
    def __init__(self, ctx: ServerContext, dispatcher: Dispatcher, wakeups: Wakeups) -> None:
        self._ctx = ctx
        self._dispatcher = dispatcher
        self._wakeups = wakeups
        self._spec_ids: dict[str | None, int] = {}
        """The spec id each spec reference of a submission resolved to last (None: the
        fallback spec)."""

    def reserve(self, spec_ref: str | None) -> HandOff | None:
        """An idle runner for a job of the spec ``spec_ref`` names, or None (no runner of it
        waits, or the name was never seen)."""
        spec_id = self._spec_ids.get(spec_ref)
        if spec_id is None:
            return None
        waiter = self._dispatcher.reserve(spec_id)
        return None if waiter is None else HandOff(waiter, secrets.token_hex(16))

    @staticmethod
    def claim(conn: Connection, hand_off: HandOff, now: dt.datetime) -> None:
        """Inside the submission's transaction, after its job is created: claim for the
        reserved runner."""
        waiter = hand_off.waiter
        try:
            hand_off.claim = claims.job_claim(
                conn, waiter.runner_id, hand_off.nonce, now, waiter.runner_slug, waiter.templates
            )
        except claims.RunnerUnavailable:
            hand_off.claim = None
        hand_off.claimed_at = now

    def release(self, hand_off: HandOff | None) -> None:
        """The submission did not commit (or created no job): what its claim found was rolled
        back with it, and the runner waits again."""
        if hand_off is not None:
            self._dispatcher.settle(hand_off.waiter, None)

    def broadcast(self, hand_off: HandOff | None, spec_id: int) -> tuple[str, str] | None:
        """The notification a submission's job insert sends to the other replicas: none when a
        runner here is reserved for it (``committed`` sends one if its claim takes another
        job)."""
        return None if hand_off is not None else self._wakeups.job_broadcast(spec_id)

    async def committed(
        self,
        hand_off: HandOff | None,
        spec_ref: str | None,
        spec_id: int,
        job_uuid: UUID,
        *,
        broadcast: bool,
    ) -> None:
        """The submission committed its job ``job_uuid`` of spec ``spec_id`` (and sent the
        other replicas its notification if ``broadcast``): the claim goes to its runner, and
        unless that claim took this very job, the dispatcher is woken for it. Returns once the
        runner's channel has taken the job (or the dispatcher had its turn)."""
        if len(self._spec_ids) >= MAX_REMEMBERED_SPECS:
            self._spec_ids.clear()
        self._spec_ids[spec_ref] = spec_id
        claim = None if hand_off is None else hand_off.claim
        if hand_off is not None:
            if claim is not None:
                assert hand_off.claimed_at is not None
                job_moved(
                    self._ctx,
                    claim.job,
                    JobStatus.CLAIMED,
                    hand_off.claimed_at,
                    source=JobStatus.PENDING,
                    runner=hand_off.waiter.runner_slug,
                )
            self._dispatcher.settle(hand_off.waiter, claim)
        if broadcast:
            self._wakeups.job_created_here(spec_id)
        elif claim is None or claim.job.uuid != job_uuid:
            self._wakeups.job_created(spec_id)
        if hand_off is not None and claim is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(hand_off.waiter.done.wait(), HAND_OVER_WAIT)
        else:
            await asyncio.sleep(0)  # the dispatcher hands the job to an idle runner first
