"""Heartbeat and hard timeouts (seed 000): the heartbeat tests set a short (2 s) heartbeat
timeout of their own; the hard timeout is a 1 s job timeout plus the harness's 1 s grace."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import SHORT_HEARTBEAT_TIMEOUT, Deployment, deploy, wait_until


@pytest.fixture
def short_heartbeat(tmp_path: Path, database_url: str) -> Iterator[Deployment]:
    with deploy(tmp_path, database_url, heartbeat_timeout=SHORT_HEARTBEAT_TIMEOUT) as deployment:
        yield deployment


def _reasons(job: dict[str, Any]) -> list[str]:
    return [str(e["message"]) for e in job["events"]]


def test_silent_runner_fails_its_job_and_the_channel_closes(short_heartbeat: Deployment) -> None:
    deployment = short_heartbeat
    channel = deployment.channel("silent")
    job_uuid = deployment.submit("bench.noop")
    channel.claim()
    assert channel.ask({"event": "running"})["event"] == "ack"
    code, reason = channel.wait_closed(timeout=15)
    assert reason == "heartbeat_timeout", (code, reason)
    job = deployment.wait_status(job_uuid, "failed")
    assert any("heartbeat_timeout" in r for r in _reasons(job))


def test_invalid_messages_do_not_keep_a_job_alive(short_heartbeat: Deployment) -> None:
    deployment = short_heartbeat
    channel = deployment.channel("chatty")
    job_uuid = deployment.submit("bench.noop")
    channel.claim()
    channel.ask({"event": "running"})
    replies: list[dict[str, Any]] = []

    def failed_while_chattering() -> bool:
        replies.append(channel.ask('{"event": "heartbeat", "oops"'))
        return deployment.status(job_uuid) == "failed"

    # Five heartbeat timeouts: ample for the server, far short of "kept alive for ever".
    wait_until(
        failed_while_chattering,
        timeout=5 * SHORT_HEARTBEAT_TIMEOUT,
        interval=0.2,
        message="the job to fail although invalid heartbeats keep coming",
    )
    assert replies and all(r["event"] == "error" for r in replies)


def test_hard_timeout_cancels_a_job_that_keeps_heartbeating(deployment: Deployment) -> None:
    channel = deployment.channel("forever")
    job_uuid = deployment.submit("bench.noop", timeout=1)
    channel.claim()
    channel.ask({"event": "running"})
    replies: list[dict[str, Any]] = []

    def canceled_while_heartbeating() -> bool:
        replies.append(channel.ask({"event": "heartbeat"}))
        return bool(replies[-1]["event"] == "cancel")

    wait_until(canceled_while_heartbeating, timeout=15, interval=0.25, message="a cancel")
    assert replies[-1] == {"event": "cancel", "job": job_uuid}
    assert all(r["event"] == "ack" for r in replies[:-1]), replies
    job = deployment.wait_status(job_uuid, "canceled")
    assert any("job_timeout_exceeded" in r for r in _reasons(job))
    assert channel.ask({"event": "canceled", "job": job_uuid})["event"] == "ack"


def test_runner_killed_mid_job_fails_after_the_heartbeat_timeout(
    short_heartbeat: Deployment,
) -> None:
    deployment = short_heartbeat
    runner = deployment.runner_process("doomed").start()
    job_uuid = deployment.submit("bench.sleep", {"ms": 30000})
    deployment.wait_status(job_uuid, "running")
    runner.kill(signal.SIGKILL)
    killed = time.monotonic()
    job = deployment.wait_status(job_uuid, "failed", timeout=20)
    # not before the heartbeat timeout, give or take the last heartbeat's age
    assert time.monotonic() - killed >= SHORT_HEARTBEAT_TIMEOUT - 1.0
    assert any("heartbeat_timeout" in r for r in _reasons(job))
