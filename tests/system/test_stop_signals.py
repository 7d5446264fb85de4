"""Escalating stop signals on a real runner process (docs/decisions/drain.md): the first drains, the
second cancels the running job now and reports it, the third exits at once, and the spool keeps
what was not acknowledged for the next start."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.harness import Deployment, RunnerProcess, output_json, process_gone, wait_until

pytestmark = pytest.mark.engine_independent

FORCED_EXIT = 1
SHUT_DOWN = "runner shut down: job canceled"


def _signal_and_see(runner: RunnerProcess, line: str) -> None:
    """One SIGTERM, and wait until the runner logged that it acted on it: signals sent back to
    back may merge into one."""
    assert runner.proc is not None
    runner.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: line in runner.output(), message=f"the runner to log {line!r}")


def _start_stubborn(deployment: Deployment, tmp_path: Path) -> tuple[str, int]:
    """A job that ignores SIGTERM, running; its uuid and pid."""
    started = tmp_path / "stubborn.pid"
    job_uuid = deployment.submit("bench.stubborn", {"started": str(started)})
    deployment.wait_status(job_uuid, "running")
    pid = int(wait_until(lambda: started.exists() and started.read_text(), message="job pid"))
    return job_uuid, pid


def test_the_second_signal_cancels_the_job_now_and_reports_it_failed(
    deployment: Deployment, tmp_path: Path
) -> None:
    runner = deployment.runner_process("r1")
    runner.drain_grace = 600  # the drain alone would let the job run ten minutes
    runner.start()
    job_uuid, started, finished = _stage(deployment, tmp_path)
    pid = int(wait_until(lambda: started.exists() and started.read_text(), message="job start"))
    _signal_and_see(runner, "draining: the running job may take")
    assert not process_gone(pid)
    _signal_and_see(runner, "second stop request: canceling now")
    assert runner.proc is not None and runner.proc.wait(timeout=60) == 0
    assert process_gone(pid) and not finished.exists()
    job = deployment.wait_status(job_uuid, "failed")
    # Reported by the runner (its reason, its event), not found out by the server later.
    assert output_json(job)["error"] == SHUT_DOWN
    assert job.events[-1].event_type == "job_failed"
    assert SHUT_DOWN in str(job.events[-1].message)


def _stage(deployment: Deployment, tmp_path: Path) -> tuple[str, Path, Path]:
    started, finished = tmp_path / "started", tmp_path / "finished"
    job_uuid = deployment.submit(
        "bench.stage", {"started": str(started), "finished": str(finished), "ms": 600_000}
    )
    return job_uuid, started, finished


def test_the_third_signal_exits_at_once_and_the_guard_stops_the_job(
    deployment: Deployment, tmp_path: Path
) -> None:
    runner = deployment.runner_process("r1")
    runner.drain_grace = 600
    runner.extra_args = ["--kill-grace", "600"]  # the canceled job would hold the runner 10 min
    runner.start()
    job_uuid, pid = _start_stubborn(deployment, tmp_path)
    _signal_and_see(runner, "draining: the running job may take")
    _signal_and_see(runner, "second stop request: canceling now")
    assert not process_gone(pid)  # it ignored the SIGTERM of the cancel
    assert runner.proc is not None
    runner.proc.send_signal(signal.SIGTERM)
    assert runner.proc.wait(timeout=60) == FORCED_EXIT
    assert "third stop request: exiting at once" in runner.output()
    assert f"job {job_uuid} left unreported" in runner.output()
    wait_until(lambda: process_gone(pid), message="the guard to stop the job")
    # Nothing reported it: the server fails it once the runner's channel is gone for good.
    job = deployment.wait_status(job_uuid, "failed", timeout=60)
    assert "runner reported failure" not in str(job.events[-1].message)


def test_the_third_signal_keeps_unacknowledged_results_for_the_next_start(
    deployment: Deployment, tmp_path: Path
) -> None:
    runner = deployment.runner_process("r1")
    runner.drain_grace = 600
    # The canceled job dies 1 s after its SIGTERM; its result then waits for an ack up to 600 s.
    runner.extra_args = ["--kill-grace", "1", "--delivery-grace", "600"]
    runner.start()
    job_uuid, pid = _start_stubborn(deployment, tmp_path)
    deployment.server.kill(signal.SIGKILL)  # nothing will be acknowledged
    _signal_and_see(runner, "draining: the running job may take")
    _signal_and_see(runner, "second stop request: canceling now")
    spooled = runner.spool / f"{job_uuid}.json"
    # The job's thread spools the result before the runner's loop takes it into its outbox.
    finished = f"job {job_uuid} finished: failed"
    wait_until(lambda: finished in runner.output(), message="the runner to take the result")
    assert spooled.exists()
    assert process_gone(pid)
    assert runner.proc is not None and runner.proc.poll() is None  # still trying to deliver
    runner.proc.send_signal(signal.SIGTERM)
    assert runner.proc.wait(timeout=60) == FORCED_EXIT
    assert "1 result(s) stay in the spool for the next start" in runner.output()
    message = json.loads(spooled.read_text())
    assert (message["event"], message["error"]) == ("failed", SHUT_DOWN)

    deployment.server.start()
    runner.start()
    assert runner.proc is not None
    wait_until(lambda: not spooled.exists(), timeout=60, message="the result acknowledged")
    job = deployment.wait_status(job_uuid, "failed")
    assert output_json(job)["error"] == SHUT_DOWN
    _signal_and_see(runner, "draining: idle, stopping")
    assert runner.proc.wait(timeout=60) == 0
