"""Waiting claims and the wake-ups that end them (SPEC section 5).

Runners waiting for a job register a ``Waiter``. One dispatcher task performs every claim for
them, in FIFO order, whenever something may have made a job claimable: a job was created for a
spec, a limited-tier job left flight (capacity), a runner started waiting, or the slow safety-net
tick fired. Doing all claims in one task means a new job costs one claim query, not one per idle
runner.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from benchrunner.server.store.jobs import Claim, RunnerUnavailable

log = logging.getLogger(__name__)

ClaimFn = Callable[[int, str, str], Awaitable[Claim | None]]
"""(runner_id, runner_slug, nonce) -> claimed job, None, or raises RunnerUnavailable."""


@dataclass(eq=False)
class Waiter:
    runner_id: int
    runner_slug: str
    spec_ids: frozenset[int]
    future: asyncio.Future[Claim] = field(repr=False)
    claiming: bool = False


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
        self._created: collections.Counter[int] = collections.Counter()
        self._full_round = False
        self._kick = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self.claims = 0  # observed by /metrics and tests

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="dispatcher")
        self._ticker = asyncio.create_task(self._tick(), name="dispatcher-safety-net")

    async def stop(self) -> None:
        for task in (self._task, self._ticker):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    # ------------------------------------------------------------ notifications

    def job_created(self, spec_id: int) -> None:
        self._created[spec_id] += 1
        self._kick.set()

    def capacity_freed(self) -> None:
        """A limited-tier job left flight, or a runner was unpaused: everyone may look again."""
        self._full_round = True
        self._kick.set()

    # ------------------------------------------------------------ waiting

    async def wait_for_job(
        self, runner_id: int, runner_slug: str, spec_ids: frozenset[int], poll_timeout: float
    ) -> Claim | None:
        """The job claimed for this runner within ``poll_timeout`` seconds, or None."""
        loop = asyncio.get_running_loop()
        waiter = Waiter(runner_id, runner_slug, spec_ids, loop.create_future())
        self._waiters[waiter] = None
        self._fresh.add(waiter)
        self._kick.set()
        try:
            return await asyncio.wait_for(asyncio.shield(waiter.future), poll_timeout)
        except TimeoutError:
            if waiter.claiming:  # a claim for us is in the database right now: take its result
                return await waiter.future
            return waiter.future.result() if waiter.future.done() else None
        except asyncio.CancelledError:
            # The connection went away while a claim for it was in flight: whatever it claims
            # must still be watched, or it would sit in ``claimed`` until a restart.
            if waiter.claiming:
                waiter.future.add_done_callback(self._abandoned)
            raise
        finally:
            self._waiters.pop(waiter, None)
            self._fresh.discard(waiter)

    def _abandoned(self, future: asyncio.Future[Claim]) -> None:
        if not future.cancelled() and future.exception() is None:
            self._on_abandoned(future.result())

    # ------------------------------------------------------------ the claiming task

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self._safety_interval)
            if self._waiters:
                self.capacity_freed()

    async def _run(self) -> None:
        while True:
            await self._kick.wait()
            self._kick.clear()
            try:
                await self._round()
            except Exception:
                log.exception("dispatcher round failed; retrying on the next wake-up")

    async def _round(self) -> None:
        full, self._full_round = self._full_round, False
        fresh, self._fresh = self._fresh, set()
        created, self._created = self._created, collections.Counter()
        exhausted: set[frozenset[int]] = set()
        for waiter in list(self._waiters):
            if waiter.future.done() or waiter not in self._waiters:
                continue
            wanted = full or waiter in fresh or any(created[s] > 0 for s in waiter.spec_ids)
            if not wanted or waiter.spec_ids in exhausted:
                continue
            waiter.claiming = True
            try:
                job = await self._claim(waiter.runner_id, waiter.runner_slug, secrets.token_hex(16))
            except RunnerUnavailable:
                continue
            finally:
                waiter.claiming = False
            if job is None:
                exhausted.add(waiter.spec_ids)
                for spec_id in waiter.spec_ids:
                    created.pop(spec_id, None)
                continue
            self.claims += 1
            if created[job.job.spec_id] > 0:
                created[job.job.spec_id] -= 1
            self._waiters.pop(waiter, None)
            if not waiter.future.done():
                waiter.future.set_result(job)
