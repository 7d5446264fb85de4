"""Heartbeat and hard timeouts (seed 000), with a 2 s heartbeat timeout and 1 s grace."""

from __future__ import annotations

import signal
import time
from typing import Any

from tests.harness import Deployment


def _reasons(job: dict[str, Any]) -> list[str]:
    return [str(e["message"]) for e in job["events"]]


def test_silent_runner_fails_its_job_and_the_channel_closes(deployment: Deployment) -> None:
    channel = deployment.channel("silent")
    job_uuid = deployment.submit("bench.noop")
    channel.claim()
    assert channel.ask({"event": "running"})["event"] == "ack"
    code, reason = channel.wait_closed(timeout=15)
    assert reason == "heartbeat_timeout", (code, reason)
    job = deployment.wait_status(job_uuid, "failed")
    assert any("heartbeat_timeout" in r for r in _reasons(job))


def test_invalid_messages_do_not_keep_a_job_alive(deployment: Deployment) -> None:
    channel = deployment.channel("chatty")
    job_uuid = deployment.submit("bench.noop")
    channel.claim()
    channel.ask({"event": "running"})
    started = time.monotonic()
    replies = []
    while deployment.status(job_uuid) == "running" and time.monotonic() - started < 15:
        replies.append(channel.ask('{"event": "heartbeat", "oops"'))
        time.sleep(0.2)
    assert deployment.status(job_uuid) == "failed"
    assert time.monotonic() - started < 10
    assert replies and all(r["event"] == "error" for r in replies)


def test_hard_timeout_cancels_a_job_that_keeps_heartbeating(deployment: Deployment) -> None:
    channel = deployment.channel("forever")
    job_uuid = deployment.submit("bench.noop", timeout=1)
    channel.claim()
    channel.ask({"event": "running"})
    deadline = time.monotonic() + 15
    reply: dict[str, object] = {}
    while time.monotonic() < deadline:
        reply = channel.ask({"event": "heartbeat"})
        if reply["event"] == "cancel":
            break
        time.sleep(0.25)
    assert reply == {"event": "cancel", "job": job_uuid}
    job = deployment.wait_status(job_uuid, "canceled")
    assert any("job_timeout_exceeded" in r for r in _reasons(job))
    assert channel.ask({"event": "canceled", "job": job_uuid})["event"] == "ack"


def test_runner_killed_mid_job_fails_after_the_heartbeat_timeout(deployment: Deployment) -> None:
    runner = deployment.runner_process("doomed").start()
    job_uuid = deployment.submit("bench.sleep", {"ms": 30000})
    deployment.wait_status(job_uuid, "running")
    runner.kill(signal.SIGKILL)
    killed = time.monotonic()
    job = deployment.wait_status(job_uuid, "failed", timeout=20)
    assert time.monotonic() - killed >= 1.0  # not before the (2 s) heartbeat timeout, give or take
    assert any("heartbeat_timeout" in r for r in _reasons(job))
