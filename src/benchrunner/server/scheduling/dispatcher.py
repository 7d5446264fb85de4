"""Waiting claims and the wake-ups that end them (docs/decisions/claims.md).

Runners waiting for a job register a ``Waiter``. One dispatcher task performs every claim for
them, in FIFO order, whenever something may have made a job claimable: a job was created for a
spec, a limited-tier job left flight (capacity), a runner started waiting, or the slow safety-net
tick fired. Doing all claims in one task means a new job costs one claim query, not one per idle
runner.

A pool whose claim found nothing stays known empty until a wake-up could have changed that (a
job created for one of its specs, capacity freed, the safety tick): a runner of it that starts
waiting meanwhile costs no claim query. On PostgreSQL a job another replica creates reaches
here as a wake-up too (``wakeups``), and a claim that was running when a wake-up came does not
mark its pool empty.

A submission may also claim for an idle runner itself, in its own transaction (``reserve`` and
``settle``; on PostgreSQL one statement right after it): the job reaches the runner without
waiting for the dispatcher's turn. The waiter it claims for leaves the waiting set for that
time, so no other claim runs for it; a reservation that claimed nothing puts it back as a
fresh waiter.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from benchrunner.server.store.claims import Claim, RunnerHoldsJobs, RunnerUnavailable
from benchrunner.server.tasks import cancel_and_wait

log = logging.getLogger(__name__)

STOP_TIMEOUT = 5.0
"""Seconds a stop lets a claim already under way finish before cancelling it."""

ClaimFn = Callable[[int, str, str, bool], Awaitable[Claim | None]]
"""(runner_id, runner_slug, nonce, templates) -> claimed job, None, or raises RunnerUnavailable;
``templates``: the runner runs template jobs too."""


@dataclass(eq=False)
class Waiter:
    runner_id: int
    runner_slug: str
    spec_ids: frozenset[int]
    organization_id: int | None
    templates: bool
    """The runner runs template jobs (it announced them), not only image jobs."""
    future: asyncio.Future[Claim] = field(repr=False)
    claiming: bool = False
    """A claim for this waiter is running in the database right now."""
    settled: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    """Set after every claim attempt for this waiter."""
    abandoned: bool = False
    """The connection went away: what is claimed for it goes to ``on_abandoned``."""
    expired: bool = False
    """Its poll timed out: it is not put back after a reservation."""
    done: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    """Set as its wait returns, with or without a job: its caller goes on in the same step (a
    channel sends the job before anything that waited on this runs)."""

    @property
    def pool(self) -> tuple[frozenset[int], int | None, bool]:
        """Waiters in the same pool see the same eligible jobs."""
        return self.spec_ids, self.organization_id, self.templates


class Dispatcher:
    def __init__(
        self,
        claim: ClaimFn,
        *,
        on_abandoned: Callable[[Claim], None],
        safety_interval: float = 5.0,
    ) -> None:
        self._claim = claim
        self._on_abandoned = on_abandoned
        self._safety_interval = safety_interval
        self._waiters: dict[Waiter, None] = {}  # insertion-ordered set: FIFO
        self._fresh: set[Waiter] = set()
        self._reserved: set[Waiter] = set()
        """Waiters a submission claims for (``reserve``), out of ``_waiters`` until ``settle``."""
        self._created: collections.Counter[int] = collections.Counter()
        self._full_round = False
        self._empty: set[tuple[frozenset[int], int | None, bool]] = set()
        """Pools whose last claim found nothing, no wake-up for them since."""
        self._wakeups = 0
        """Wake-ups so far: a claim during which one came proves no pool empty."""
        self._kick = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._stopping = False

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="dispatcher")
        self._ticker = asyncio.create_task(self._tick(), name="dispatcher-safety-net")

    async def stop(self) -> None:
        """Stop claiming. A claim under way is let finish (for ``STOP_TIMEOUT`` at most), so
        that its job reaches its waiter or ``on_abandoned``: cancelled halfway, its transaction
        could still commit, leaving the job claimed for no one."""
        self._stopping = True
        self._kick.set()
        if self._task is not None:
            await asyncio.wait({self._task}, timeout=STOP_TIMEOUT)
        # Nobody waits any more as far as claims go: a submission's hand-off finds no runner.
        self._waiters.clear()
        self._fresh.clear()
        self._reserved.clear()
        for task in (self._task, self._ticker):
            await cancel_and_wait(task)

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def idle(self) -> int:
        """Waiting runners with no claim under way or due for them: those a job submitted now
        goes to, by its submission's own claim (the health check's ``waiting_runners``)."""
        return sum(1 for w in self._waiters if not w.claiming and w not in self._fresh)

    @property
    def settled(self) -> bool:
        """No claim runs for a waiting runner, the dispatcher's or a submission's for one it
        reserved (until its ``settle``), and none is due for one that just started waiting:
        each waits with what its last claim found (a submission may reserve it)."""
        return (
            not self._fresh
            and not self._reserved
            and not any(waiter.claiming for waiter in list(self._waiters))
        )

    # ------------------------------------------------------------ notifications

    def job_created(self, spec_id: int) -> None:
        self._created[spec_id] += 1
        self._wakeups += 1
        self._empty = {pool for pool in self._empty if spec_id not in pool[0]}
        self._kick.set()

    def capacity_freed(self) -> None:
        """A limited-tier job left flight, or a runner was unpaused: everyone may look again."""
        self._full_round = True
        self._wakeups += 1
        self._empty.clear()
        self._kick.set()

    # ------------------------------------------------------------ waiting

    async def wait_for_job(
        self,
        runner_id: int,
        runner_slug: str,
        spec_ids: frozenset[int],
        organization_id: int | None,
        poll_timeout: float,
        *,
        templates: bool = True,
    ) -> Claim | None:
        """The job claimed for this runner within ``poll_timeout`` seconds, or None; a template
        job only if ``templates``.

        If the caller is cancelled (its connection went away), a job already or still being
        claimed for it is handed to ``on_abandoned`` so that it cannot sit in ``claimed``.
        """
        loop = asyncio.get_running_loop()
        waiter = Waiter(
            runner_id, runner_slug, spec_ids, organization_id, templates, loop.create_future()
        )
        self._waiters[waiter] = None
        self._fresh.add(waiter)
        self._kick.set()
        try:
            return await asyncio.wait_for(asyncio.shield(waiter.future), poll_timeout)
        except TimeoutError:
            waiter.expired = True
            self._waiters.pop(waiter, None)
            try:
                while waiter.claiming:  # a claim for us is in the database right now: take it
                    waiter.settled.clear()
                    await waiter.settled.wait()
            except asyncio.CancelledError:
                self._abandon(waiter)
                raise
            return waiter.future.result() if waiter.future.done() else None
        except asyncio.CancelledError:
            self._abandon(waiter)
            raise
        finally:
            self._waiters.pop(waiter, None)
            self._fresh.discard(waiter)
            waiter.done.set()

    def _abandon(self, waiter: Waiter) -> None:
        """The wait was cancelled (its connection went away): a claim made for it, now or
        still to come, goes to ``on_abandoned``."""
        waiter.abandoned = True
        if (
            waiter.future.done()
            and not waiter.future.cancelled()
            and waiter.future.exception() is None  # a claim refused (``RunnerHoldsJobs``)
        ):
            self._on_abandoned(waiter.future.result())

    # ------------------------------------------------------------ claims made elsewhere

    def reserve(self, spec_id: int, *, template: bool) -> Waiter | None:
        """The longest-waiting runner that may take a job of ``spec_id`` (a template job if
        ``template``), taken out of the waiting set so that no other claim runs for it until
        ``settle``; None if none waits."""
        for waiter in self._waiters:
            if (
                spec_id in waiter.spec_ids
                and (waiter.templates or not template)
                and not waiter.claiming
                and not waiter.future.done()
            ):
                del self._waiters[waiter]
                self._fresh.discard(waiter)
                self._reserved.add(waiter)
                waiter.claiming = True
                return waiter
        return None

    def settle(self, waiter: Waiter, claim: Claim | None) -> None:
        """The outcome of the claim made for a reserved ``waiter``: the job goes to it (or to
        ``on_abandoned`` if its connection went away); without one it waits again."""
        waiter.claiming = False
        self._reserved.discard(waiter)
        if claim is not None:
            if waiter.abandoned:
                self._on_abandoned(claim)
            elif not waiter.future.done():
                waiter.future.set_result(claim)
        elif not (waiter.abandoned or waiter.expired or waiter.future.done()):
            self._waiters = {waiter: None, **self._waiters}  # the longest-waiting of its spec
            self._fresh.add(waiter)
            self._kick.set()
        waiter.settled.set()

    # ------------------------------------------------------------ the claiming task

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self._safety_interval)
            if self._waiters:
                self.capacity_freed()

    async def _run(self) -> None:
        while not self._stopping:
            await self._kick.wait()
            self._kick.clear()
            if self._stopping:
                return
            try:
                await self._round()
            except Exception:
                log.exception("dispatcher round failed; retrying on the next wake-up")

    async def _round(self) -> None:
        full, self._full_round = self._full_round, False
        fresh, self._fresh = self._fresh, set()
        created, self._created = self._created, collections.Counter()
        exhausted: set[tuple[frozenset[int], int | None, bool]] = set()
        for waiter in list(self._waiters):
            if self._stopping:
                return
            if waiter.future.done() or waiter not in self._waiters:
                continue
            wanted = full or waiter in fresh or any(created[s] > 0 for s in waiter.spec_ids)
            if not wanted or waiter.pool in exhausted or waiter.pool in self._empty:
                continue
            waiter.claiming = True
            wakeups = self._wakeups
            try:
                claim = await self._claim(
                    waiter.runner_id, waiter.runner_slug, secrets.token_hex(16), waiter.templates
                )
            except RunnerHoldsJobs as exc:
                # Its wait ends with this error: the channel fails those jobs, then waits again.
                self._waiters.pop(waiter, None)
                if not (waiter.abandoned or waiter.future.done()):
                    waiter.future.set_exception(exc)
                continue
            except RunnerUnavailable:
                continue
            finally:
                waiter.claiming = False
                waiter.settled.set()
            if claim is None:
                exhausted.add(waiter.pool)
                if self._wakeups == wakeups:
                    self._empty.add(waiter.pool)
                for spec_id in waiter.spec_ids:
                    created.pop(spec_id, None)
                continue
            if created[claim.job.spec_id] > 0:
                created[claim.job.spec_id] -= 1
            self._waiters.pop(waiter, None)
            if waiter.abandoned:
                self._on_abandoned(claim)
            elif not waiter.future.done():
                waiter.future.set_result(claim)
