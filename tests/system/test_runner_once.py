"""``runner up --once``: one job, its result delivered, then exit 0 — whatever else is queued."""

from __future__ import annotations

import pytest

from tests.harness import Deployment

pytestmark = pytest.mark.engine_independent


def test_a_once_runner_takes_one_job_delivers_it_and_exits(each_transport: Deployment) -> None:
    deployment = each_transport
    runner = deployment.runner_process("once")
    runner.extra_args = ["--once"]
    first = deployment.submit("bench.noop")
    second = deployment.submit("bench.noop")
    runner.start()
    assert runner.proc is not None
    assert runner.proc.wait(timeout=60) == 0
    assert deployment.wait_status(first, "processed").status == "processed"
    assert deployment.status(second) == "pending"
