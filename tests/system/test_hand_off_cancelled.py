"""A submission's write, which hands its job to a runner it reserved
(``server/scheduling/hand_off.py``), runs as a task of its own; whatever cancels that task (a
server stopping), the hand-off's outcome reaches ``HandOffs.written``: cancelled before its
first step, the runner waits again instead of staying reserved; cancelled after its claim
committed, the claim reaches the runner instead of being dropped. A real server in this
process, so that the test can reach its tasks."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchrunner.server.moves import move
from benchrunner.server.scheduling.hand_off import HandOff, HandOffs
from benchrunner.server.store import claims
from tests.harness import RawChannel, wait_until
from tests.inprocess import InProcessServer, serve_in_process
from tests.metrics_scrape import scrape


def _writing() -> asyncio.Task[Any]:
    """The server's one submission write under way (its task: ``submit_run``'s
    ``write_and_claim``)."""
    [task] = [
        task
        for task in asyncio.all_tasks()
        if "write_and_claim" in getattr(task.get_coro(), "__qualname__", "")
    ]
    return task


def _run_one(channel: RawChannel, server: InProcessServer) -> None:
    """A job submitted, taken on ``channel`` and completed: the server learns which spec the
    name resolves to, and the runner holds no job."""
    job = server.submit("bench.noop")
    assert channel.claim()["uuid"] == job
    channel.ask({"event": "running"})
    channel.ask({"event": "completed", "job": job, "results": []})


def _waiting(server: InProcessServer) -> int:
    return int(server.state("services").dispatcher.waiting)


def _post_run(server: InProcessServer, project: str) -> httpx.Response:
    body = {"project": project, "spec": "small", "template": "bench.noop"}
    headers = {"Authorization": f"Bearer {server.token}"}
    return httpx.post(f"{server.url}/v0/run", json=body, headers=headers, timeout=30)


def test_a_submission_write_cancelled_before_its_first_step_gives_its_runner_back(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write is cancelled right after the submission reserved the runner, before the
    write's first step: nothing was written, and the runner's poll ends with ``no_job`` at its
    timeout, as it would had nothing reserved it (it stayed reserved, its wait never ended)."""
    cancelled: list[bool] = []
    reserve = HandOffs.reserve

    def reserve_then_cancel(
        self: HandOffs, spec_ref: str | None, *, template: bool
    ) -> HandOff | None:
        reserved = reserve(self, spec_ref, template=template)
        if reserved is not None:  # runs after this step, which creates the write's task
            asyncio.get_running_loop().call_soon(lambda: cancelled.append(_writing().cancel()))
        return reserved

    with serve_in_process(tmp_path, database_url) as server:
        channel = server.channel("idle")
        _run_one(channel, server)
        monkeypatch.setattr(HandOffs, "reserve", reserve_then_cancel)
        channel.send({"event": "ready", "poll_timeout": 2})
        wait_until(lambda: _waiting(server) == 1, timeout=10)
        assert _post_run(server, "bench").status_code == 500
        assert cancelled == [True]
        assert channel.recv(timeout=10) == {"event": "no_job"}
        with server.admin() as client:
            listed = client.list_jobs("bench")
        assert len(listed) == 1  # the first job's only


@pytest.mark.only_engine("postgresql")
def test_a_submission_write_cancelled_after_its_claim_committed_hands_the_claim_over(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL a limited tier's job is claimed for the reserved runner by a statement of
    its own after the submission committed (``HandOffs.claim_apart``); the write's task is
    cancelled once that claim committed, before its answer came back: the claim still reaches
    the runner, which gets the job (it was dropped: the job sat ``claimed`` for no one)."""
    claim_for_runner = move.claim_for_runner

    async def committed_then_cancelled(*args: Any, **kwargs: Any) -> claims.Claim | None:
        claim = await claim_for_runner(*args, **kwargs)
        _writing().cancel()
        await asyncio.sleep(0)  # where the cancellation reaches whoever awaits here
        return claim

    with serve_in_process(tmp_path, database_url) as server:
        with server.admin() as client:
            org = client.create_organization("cheap", "free").slug
            cheap = str(client.create_project(org, "cheap", "public").slug)
        channel = server.channel("idle")
        _run_one(channel, server)
        monkeypatch.setattr(move, "claim_for_runner", committed_then_cancelled)
        claims_before = scrape(server.url).value("benchrunner_job_claims_total")
        channel.send({"event": "ready", "poll_timeout": 30})
        wait_until(lambda: _waiting(server) == 1, timeout=10)
        assert _post_run(server, cheap).status_code == 500
        assigned = channel.recv(timeout=10)
        assert assigned["event"] == "job"
        with server.admin() as client:
            [job] = client.list_jobs(cheap)
        assert str(job.uuid) == assigned["uuid"] and job.status == "claimed"
        # The claim's move is announced all the same: counted once (``HandOffs.delivered``).
        wait_until(
            lambda: scrape(server.url).value("benchrunner_job_claims_total") == claims_before + 1,
            timeout=10,
        )
