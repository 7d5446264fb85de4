"""The heartbeat timeout (docs/decisions/timeouts-recovery.md) against real processes, with a short
(2 s) heartbeat timeout of its own. The channel's heartbeat and hard timeouts are tested on a driven
clock in ``test_channel_clock.py``."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchrunner.api.jobs import Job
from tests.harness import SHORT_HEARTBEAT_TIMEOUT, Deployment, deploy


@pytest.fixture
def short_heartbeat(tmp_path: Path, database_url: str) -> Iterator[Deployment]:
    with deploy(tmp_path, database_url, heartbeat_timeout=SHORT_HEARTBEAT_TIMEOUT) as deployment:
        yield deployment


@pytest.fixture
def short_heartbeat_each_transport(short_heartbeat: Deployment, transport: str) -> Deployment:
    short_heartbeat.transport = transport
    return short_heartbeat


def _reasons(job: Job) -> list[str]:
    return [str(e.message) for e in job.events or []]


def test_runner_killed_mid_job_fails_after_the_heartbeat_timeout(
    short_heartbeat_each_transport: Deployment,
) -> None:
    deployment = short_heartbeat_each_transport
    runner = deployment.runner_process("doomed").start()
    job_uuid = deployment.submit("bench.sleep", {"ms": 30000})
    deployment.wait_status(job_uuid, "running")
    runner.kill(signal.SIGKILL)
    killed = time.monotonic()
    job = deployment.wait_status(job_uuid, "failed", timeout=20)
    # not before the heartbeat timeout, give or take the last heartbeat's age
    assert time.monotonic() - killed >= SHORT_HEARTBEAT_TIMEOUT - 1.0
    assert any("heartbeat_timeout" in r for r in _reasons(job))
