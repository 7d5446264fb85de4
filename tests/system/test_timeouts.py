"""Heartbeat and hard timeouts (seed 000), with a 2 s heartbeat timeout and 1 s grace, against
real processes. The channel's own timeouts are tested with a driven clock in
``test_channel_clock.py``."""

from __future__ import annotations

import signal
import time
from typing import Any

from tests.harness import Deployment


def _reasons(job: dict[str, Any]) -> list[str]:
    return [str(e["message"]) for e in job["events"]]


def test_runner_killed_mid_job_fails_after_the_heartbeat_timeout(deployment: Deployment) -> None:
    runner = deployment.runner_process("doomed").start()
    job_uuid = deployment.submit("bench.sleep", {"ms": 30000})
    deployment.wait_status(job_uuid, "running")
    runner.kill(signal.SIGKILL)
    killed = time.monotonic()
    job = deployment.wait_status(job_uuid, "failed", timeout=20)
    assert time.monotonic() - killed >= 1.0  # not before the (2 s) heartbeat timeout, give or take
    assert any("heartbeat_timeout" in r for r in _reasons(job))
