"""A runner matches each reply to the message it answers: the refusal of its job's last ``log``,
which the server sends after the runner has already sent the job's result, is not the refusal
of the result, which stays spooled until the server answers the result itself.

The order is forced, not timed. The job's output ends with the first two bytes of a three-byte
UTF-8 character, which the live log's decoder holds until the job has ended: the runner sends
that last ``log`` and then the result in one step, before it reads any reply. A user cancels
the job while it waits at its gate, and the runner (heartbeats a minute apart) does not learn
it, so the server refuses that ``log`` (no longer in flight) and then acknowledges the result
(one that crossed the cancel).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchrunner.runner.agent import Agent
from benchrunner.runner.options import RunnerOptions
from tests.harness import Deployment, deploy, wait_until

LIMIT = 128 * 1024
"""The server's message size limit: a live log chunk (64 KiB) fits, a 200 KB result does not."""


@pytest.fixture
def running_agent(
    tmp_path: Path, database_url: str, caplog: pytest.LogCaptureFixture
) -> Iterator[tuple[Deployment, Path]]:
    """A server and an agent of our runner in this process, heartbeating once a minute."""
    caplog.set_level(logging.INFO, logger="benchrunner.runner")
    with deploy(tmp_path, database_url, request_body_max_bytes=LIMIT) as deployment:
        slug, key = deployment.new_runner("matcher")
        spool = tmp_path / "spool"
        options = RunnerOptions(
            host=deployment.server.url,
            runner=slug,
            key=key,
            templates=deployment.server.templates,
            spool=spool,
            poll_timeout=30,
            heartbeat_interval=60.0,
            noise_guard=False,
        )
        agent = Agent(options)
        exit_codes: list[int] = []
        thread = threading.Thread(target=lambda: exit_codes.append(agent.run()), daemon=True)
        thread.start()
        try:
            yield deployment, spool
        finally:
            agent.request_drain()
            thread.join(30)
        assert exit_codes == [0]


def _run_past_a_cancel(deployment: Deployment, tmp_path: Path, size: int) -> str:
    """Submit a gated job, cancel it once it runs, then open its gate; its uuid."""
    gate = tmp_path / f"gate-{size}"
    job = deployment.submit("bench.gated_tail", {"gate": str(gate), "size": size})
    deployment.wait_status(job, "running")
    with deployment.admin() as client:
        client.cancel_job(deployment.project, job)
    deployment.wait_status(job, "canceled")
    gate.touch()
    return job


def _result_line(caplog: pytest.LogCaptureFixture, job: str) -> str | None:
    """The runner's line saying what became of the job's result, once it has one."""
    for record in caplog.records:
        message = record.getMessage()
        if job in message and (" result " in message or "refused the result" in message):
            return message
    return None


@pytest.mark.engine_independent
def test_the_refusal_of_the_last_log_does_not_drop_the_result(
    running_agent: tuple[Deployment, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    deployment, spool = running_agent
    job = _run_past_a_cancel(deployment, tmp_path, size=10)

    line = wait_until(lambda: _result_line(caplog, job), timeout=60, message="the result's fate")

    assert line == f"job {job}: completed result delivered"
    assert f"server refused live output: log: job {job} is no longer in flight" in caplog.text
    assert not (spool / f"{job}.json").exists()  # forgotten on its ack


@pytest.mark.engine_independent
def test_a_result_whose_connection_ends_before_it_is_stored_stays_spooled(
    running_agent: tuple[Deployment, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The result is over the server's limit: after refusing the ``log``, the server closes the
    connection (1009) without storing it. The runner still holds it, shrinks it to a ``failed``
    and delivers that on its next connection."""
    deployment, spool = running_agent
    job = _run_past_a_cancel(deployment, tmp_path, size=200_000)

    line = wait_until(lambda: _result_line(caplog, job), timeout=60, message="the result's fate")

    assert line == f"job {job}: failed result delivered"
    assert "result too large for the server; sending a failure instead" in caplog.text
    assert not (spool / f"{job}.json").exists()
