"""The dispatcher's hand-off rules, with the claim query replaced by a scripted one."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from benchrunner.server.scheduling.dispatcher import Dispatcher
from benchrunner.server.store.claims import Claim


def claim_for(job_id: int, spec_id: int = 1) -> Claim:
    class Row:
        id = job_id

    row: Any = Row()
    row.spec_id = spec_id
    return Claim(job=row, spec=None)


async def settle() -> None:
    """Let every ready task run a few steps: event-loop turns, not time."""
    for _ in range(20):
        await asyncio.sleep(0)


async def until(condition: Callable[[], bool]) -> None:
    """Wait until ``condition`` holds, for at most 5 seconds (nothing here signals it)."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("condition not reached within 5 s")


def run(test: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(test())


def test_a_runner_that_cannot_take_a_job_does_not_block_one_that_can() -> None:
    async def scenario() -> None:
        jobs = {2: [claim_for(10)]}  # only runner 2 (server-scoped) may take job 10

        async def claim(runner_id: int, _slug: str, _nonce: str, _templates: bool) -> Claim | None:
            found = jobs.get(runner_id)
            return found.pop() if found else None

        dispatcher = Dispatcher(claim, on_abandoned=lambda _c: None, safety_interval=3600)
        dispatcher.start()
        owned = asyncio.create_task(dispatcher.wait_for_job(1, "owned", frozenset({1}), 7, 5))
        await settle()
        scoped = asyncio.create_task(dispatcher.wait_for_job(2, "scoped", frozenset({1}), None, 5))
        await settle()
        dispatcher.job_created(1)
        result = await asyncio.wait_for(scoped, 1)
        assert result is not None and result.job.id == 10
        owned.cancel()
        await dispatcher.stop()

    run(scenario)


def test_a_claim_for_a_connection_that_went_away_is_handed_over() -> None:
    async def scenario() -> None:
        abandoned: list[Claim] = []
        gate = asyncio.Event()

        async def claim(_runner: int, _slug: str, _nonce: str, _templates: bool) -> Claim | None:
            await gate.wait()  # the claim is "in the database" while the connection drops
            return claim_for(11)

        dispatcher = Dispatcher(claim, on_abandoned=abandoned.append, safety_interval=3600)
        dispatcher.start()
        waiting = asyncio.create_task(dispatcher.wait_for_job(1, "r", frozenset({1}), None, 5))
        await settle()
        waiting.cancel()
        await settle()
        gate.set()
        await settle()
        assert [c.job.id for c in abandoned] == [11]
        await dispatcher.stop()

    run(scenario)


def test_a_claim_that_lands_as_the_poll_times_out_is_not_lost() -> None:
    async def scenario() -> None:
        gate = asyncio.Event()

        async def claim(_runner: int, _slug: str, _nonce: str, _templates: bool) -> Claim | None:
            await gate.wait()
            return claim_for(12)

        dispatcher = Dispatcher(claim, on_abandoned=lambda _c: None, safety_interval=3600)
        dispatcher.start()
        waiting = asyncio.create_task(dispatcher.wait_for_job(1, "r", frozenset({1}), None, 0.5))
        await settle()  # it waits, its claim in the database
        assert dispatcher.waiting == 1
        await until(lambda: dispatcher.waiting == 0)  # the poll timed out, the claim in flight
        assert not waiting.done()
        gate.set()
        result = await asyncio.wait_for(waiting, 1)
        assert result is not None and result.job.id == 12
        await dispatcher.stop()

    run(scenario)


def test_a_poll_that_times_out_with_an_empty_claim_answers_none() -> None:
    async def scenario() -> None:
        gate = asyncio.Event()

        async def claim(_runner: int, _slug: str, _nonce: str, _templates: bool) -> Claim | None:
            await gate.wait()
            return None

        dispatcher = Dispatcher(claim, on_abandoned=lambda _c: None, safety_interval=3600)
        dispatcher.start()
        waiting = asyncio.create_task(dispatcher.wait_for_job(1, "r", frozenset({1}), None, 0.5))
        await settle()  # it waits, its claim in the database
        assert dispatcher.waiting == 1
        await until(lambda: dispatcher.waiting == 0)  # the poll timed out, the claim open
        gate.set()
        assert await asyncio.wait_for(waiting, 1) is None
        await dispatcher.stop()

    run(scenario)


def test_a_pool_known_empty_costs_no_claim_until_a_job_is_created_for_it() -> None:
    async def scenario() -> None:
        jobs: list[Claim] = []
        claimed_for: list[int] = []

        async def claim(runner_id: int, _slug: str, _nonce: str, _templates: bool) -> Claim | None:
            claimed_for.append(runner_id)
            return jobs.pop() if jobs else None

        dispatcher = Dispatcher(claim, on_abandoned=lambda _c: None, safety_interval=3600)
        dispatcher.start()
        first = asyncio.create_task(dispatcher.wait_for_job(1, "a", frozenset({1}), None, 5))
        await settle()
        assert claimed_for == [1]  # found nothing: the pool is known empty
        second = asyncio.create_task(dispatcher.wait_for_job(2, "b", frozenset({1}), None, 5))
        other = asyncio.create_task(dispatcher.wait_for_job(3, "c", frozenset({2}), None, 5))
        await settle()
        assert claimed_for == [1, 3]  # runner 2's pool is known empty; runner 3's is another
        dispatcher.job_created(2)  # not a spec of that pool
        await settle()
        assert claimed_for == [1, 3, 3]
        jobs.append(claim_for(20))
        dispatcher.job_created(1)
        result = await asyncio.wait_for(first, 1)
        assert result is not None and result.job.id == 20
        await settle()
        assert claimed_for == [1, 3, 3, 1]  # one job created, one claim
        dispatcher.capacity_freed()  # everyone looks again, known empty or not
        await settle()
        assert sorted(claimed_for[4:]) == [2, 3]
        for task in (second, other):
            task.cancel()
        await dispatcher.stop()

    run(scenario)


def test_a_job_created_while_a_claim_finds_nothing_is_claimed() -> None:
    async def scenario() -> None:
        gate = asyncio.Event()
        answers: list[Claim | None] = [claim_for(30), None]  # popped from the end

        async def claim(_runner: int, _slug: str, _nonce: str, _templates: bool) -> Claim | None:
            await gate.wait()
            return answers.pop()

        dispatcher = Dispatcher(claim, on_abandoned=lambda _c: None, safety_interval=3600)
        dispatcher.start()
        waiting = asyncio.create_task(dispatcher.wait_for_job(1, "a", frozenset({1}), None, 5))
        await settle()
        dispatcher.job_created(1)  # committed while the claim above looks: it finds nothing
        gate.set()
        result = await asyncio.wait_for(waiting, 1)
        assert result is not None and result.job.id == 30
        await dispatcher.stop()

    run(scenario)


# ------------------------------------------------ reservations (server/scheduling/hand_off.py)


def finding_nothing(abandoned: list[Claim]) -> Dispatcher:
    """A started dispatcher whose own claims find nothing; what is abandoned goes to
    ``abandoned``."""
    dispatcher = Dispatcher(
        lambda *_: asyncio.sleep(0, None), on_abandoned=abandoned.append, safety_interval=3600
    )
    dispatcher.start()
    return dispatcher


def test_a_reservation_takes_the_longest_waiting_runner_of_the_spec_and_hands_it_the_claim() -> (
    None
):
    async def scenario() -> None:
        claimed_for: list[int] = []

        async def claim(runner_id: int, _slug: str, _nonce: str, _templates: bool) -> Claim | None:
            claimed_for.append(runner_id)
            return None

        dispatcher = Dispatcher(claim, on_abandoned=lambda _c: None, safety_interval=3600)
        dispatcher.start()
        other = asyncio.create_task(dispatcher.wait_for_job(1, "a", frozenset({2}), None, 5))
        await settle()
        first = asyncio.create_task(dispatcher.wait_for_job(2, "b", frozenset({1}), None, 5))
        await settle()
        second = asyncio.create_task(dispatcher.wait_for_job(3, "c", frozenset({1}), None, 5))
        await settle()
        assert dispatcher.reserve(3, template=True) is None  # no runner of spec 3 waits
        waiter = dispatcher.reserve(1, template=True)
        assert waiter is not None and waiter.runner_id == 2
        assert dispatcher.waiting == 2
        dispatcher.capacity_freed()  # a round meanwhile claims for the others only
        await settle()
        assert 2 not in claimed_for[3:]
        dispatcher.settle(waiter, claim_for(40))
        result = await asyncio.wait_for(first, 1)
        assert result is not None and result.job.id == 40
        assert not second.done() and dispatcher.waiting == 2
        for task in (other, second):
            task.cancel()
        await dispatcher.stop()

    run(scenario)


def test_a_reservation_that_claimed_nothing_waits_again_and_is_claimed_for() -> None:
    async def scenario() -> None:
        jobs: list[Claim] = []

        async def claim(_runner: int, _slug: str, _nonce: str, _templates: bool) -> Claim | None:
            return jobs.pop() if jobs else None

        dispatcher = Dispatcher(claim, on_abandoned=lambda _c: None, safety_interval=3600)
        dispatcher.start()
        waiting = asyncio.create_task(dispatcher.wait_for_job(1, "a", frozenset({1}), None, 5))
        await settle()
        waiter = dispatcher.reserve(1, template=True)
        assert waiter is not None and dispatcher.waiting == 0
        jobs.append(claim_for(50))
        dispatcher.settle(waiter, None)  # it waits again
        assert dispatcher.waiting == 1
        dispatcher.job_created(1)  # as a submission whose claim took nothing wakes it
        result = await asyncio.wait_for(waiting, 1)
        assert result is not None and result.job.id == 50
        await dispatcher.stop()

    run(scenario)


def test_a_claim_for_a_reserved_runner_is_kept_when_its_poll_ends_or_its_connection_goes() -> None:
    async def scenario() -> None:
        abandoned: list[Claim] = []
        dispatcher = finding_nothing(abandoned)
        expiring = asyncio.create_task(dispatcher.wait_for_job(1, "a", frozenset({1}), None, 0.5))
        going = asyncio.create_task(dispatcher.wait_for_job(2, "b", frozenset({1}), None, 5))
        await settle()
        first, second = dispatcher.reserve(1, template=True), dispatcher.reserve(1, template=True)
        assert first is not None and second is not None
        await until(lambda: first.expired)  # the scenario: the first poll ends while reserved
        assert not expiring.done()
        going.cancel()
        await settle()
        dispatcher.settle(first, claim_for(60))
        dispatcher.settle(second, claim_for(61))
        result = await asyncio.wait_for(expiring, 1)
        assert result is not None and result.job.id == 60
        assert [c.job.id for c in abandoned] == [61]
        assert first.done.is_set() and dispatcher.waiting == 0
        await dispatcher.stop()

    run(scenario)


def test_a_template_job_reserves_only_a_runner_that_runs_templates() -> None:
    async def scenario() -> None:
        dispatcher = finding_nothing([])
        images_only = asyncio.create_task(
            dispatcher.wait_for_job(1, "a", frozenset({1}), None, 5, templates=False)
        )
        both = asyncio.create_task(dispatcher.wait_for_job(2, "b", frozenset({1}), None, 5))
        await settle()
        image_runner = dispatcher.reserve(1, template=False)
        assert image_runner is not None and image_runner.runner_id == 1  # waited longest
        dispatcher.settle(image_runner, None)  # back, and first again
        template_runner = dispatcher.reserve(1, template=True)
        assert template_runner is not None and template_runner.runner_id == 2
        dispatcher.settle(template_runner, None)  # back, and now first
        assert dispatcher.reserve(1, template=False) is template_runner
        dispatcher.settle(template_runner, None)
        for task in (images_only, both):
            task.cancel()
        await dispatcher.stop()

    run(scenario)


def test_a_runner_whose_poll_ended_while_reserved_and_then_went_away_loses_no_job() -> None:
    async def scenario() -> None:
        abandoned: list[Claim] = []
        dispatcher = finding_nothing(abandoned)
        waiting = asyncio.create_task(dispatcher.wait_for_job(1, "a", frozenset({1}), None, 0.5))
        await settle()
        waiter = dispatcher.reserve(1, template=True)
        assert waiter is not None
        await until(lambda: waiter.expired)  # the scenario: the poll ends while reserved
        waiting.cancel()  # then the connection goes, before the claim lands
        await settle()
        dispatcher.settle(waiter, claim_for(70))
        assert [c.job.id for c in abandoned] == [70]
        await dispatcher.stop()

    run(scenario)


def test_settled_once_the_claim_for_a_new_waiter_is_over() -> None:
    async def scenario() -> None:
        gate = asyncio.Event()

        async def claim(_runner: int, _slug: str, _nonce: str, _templates: bool) -> Claim | None:
            await gate.wait()
            return None

        dispatcher = Dispatcher(claim, on_abandoned=lambda _c: None, safety_interval=3600)
        assert dispatcher.settled
        waiting = asyncio.create_task(dispatcher.wait_for_job(1, "r", frozenset({1}), None, 5))
        await settle()
        # due, the dispatcher not started yet: waiting, not idle (the health check's count)
        assert not dispatcher.settled and (dispatcher.waiting, dispatcher.idle) == (1, 0)
        dispatcher.start()
        await settle()
        assert not dispatcher.settled and dispatcher.idle == 0  # running
        gate.set()
        await until(lambda: dispatcher.settled)
        assert (dispatcher.waiting, dispatcher.idle) == (1, 1)
        waiting.cancel()
        await dispatcher.stop()

    run(scenario)


def test_not_settled_while_a_submission_claims_for_a_runner_it_reserved() -> None:
    """A reserved runner leaves the waiting set while the submission's claim for it runs:
    that claim still runs for a waiting runner, until its ``settle``."""

    async def scenario() -> None:
        dispatcher = finding_nothing([])
        waiting = asyncio.create_task(dispatcher.wait_for_job(1, "a", frozenset({1}), None, 5))
        await until(lambda: dispatcher.waiting == 1 and dispatcher.settled)
        waiter = dispatcher.reserve(1, template=True)
        assert waiter is not None and dispatcher.waiting == 0
        assert not dispatcher.settled
        dispatcher.settle(waiter, None)  # nothing claimed: it waits again
        await until(lambda: dispatcher.waiting == 1 and dispatcher.settled)
        waiting.cancel()
        await dispatcher.stop()

    run(scenario)
