"""``runner up --tune`` against a real server, on a fake host tree (``--host-root``): the job runs
on the tuned host, and the tree is as it was after the runner ends — by a drain, and by a
SIGKILL followed by ``runner restore`` or the next start. Engine-independent: SQLite only."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchrunner.runner.tuning.personality import ADDR_NO_RANDOMIZE
from tests.fake_host import bare_metal, host_files
from tests.harness import Deployment, RunnerProcess, deploy, output_json, wait_until

CPU = "sys/devices/system/cpu"
STATE = "run/benchrunner/tune-state.json"


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    with deploy(tmp_path, f"sqlite:///{tmp_path / 'benchrunner.db'}") as deployment:
        yield deployment


@pytest.fixture
def host(tmp_path: Path) -> Path:
    root = tmp_path / "host"
    bare_metal(root, cores=max(os.sched_getaffinity(0)) + 1)
    # The runner writes these plain files as the kernel's own: no menu brackets to move, no
    # +cpuset grammar (tests.fake_host.FakeKernelFs does that for the unit tests).
    (root / "sys/kernel/mm/transparent_hugepage/enabled").write_text("madvise")
    (root / "sys/fs/cgroup/cgroup.subtree_control").write_text("cpu cpuset memory")
    return root


def tuned_runner(deployment: Deployment, host: Path, name: str, *tune: str) -> RunnerProcess:
    runner = deployment.runner_process(name)
    runner.extra_args = [*tune, "--host-root", str(host)]
    return runner


def governor(host: Path) -> str:
    core = max(os.sched_getaffinity(0))  # a job core whatever the machine's size
    return (host / f"{CPU}/cpu{core}/cpufreq/scaling_governor").read_text()


def test_a_best_effort_tuned_runner_runs_a_job_and_leaves_the_host_as_it_was(
    deployment: Deployment, host: Path
) -> None:
    before = host_files(host)
    runner = tuned_runner(deployment, host, "tuned", "--tune=best-effort").start()
    job = deployment.submit("bench.personality")
    done = deployment.wait_status(job, "processed", timeout=60)
    flags = json.loads(output_json(done)["results"][0]["stdout"])["personality"]["flags"]["value"]
    assert flags & ADDR_NO_RANDOMIZE, "the job ran with ASLR on"
    # The runner is still up: the host is tuned, and what could not be is said.
    if len(os.sched_getaffinity(0)) > 1:
        assert governor(host) == "performance"
    assert (host / f"{CPU}/cpufreq/boost").read_text() == "0"
    assert (host / "sys/kernel/mm/transparent_hugepage/enabled").read_text() == "never"
    assert (host / STATE).exists()
    assert "cannot tune cpuset_partition (going on untuned)" in runner.output()
    assert runner.kill(signal.SIGTERM) == 0
    assert host_files(host) == before
    assert not (host / STATE).exists()


def test_a_killed_tuned_runner_is_restored_by_runner_restore_and_by_the_next_start(
    deployment: Deployment, host: Path
) -> None:
    before = host_files(host)
    runner = tuned_runner(deployment, host, "crashing", "--tune=best-effort").start()
    wait_until(lambda: (host / f"{CPU}/cpufreq/boost").read_text() == "0", message="tuning")
    assert runner.kill(signal.SIGKILL) == -signal.SIGKILL
    assert host_files(host) != before and (host / STATE).exists()

    restore = [sys.executable, "-m", "benchrunner", "runner", "restore", "--host-root", str(host)]
    done = subprocess.run(restore, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "restored: " in done.stdout + done.stderr
    assert host_files(host) == before

    # Again, and this time the next (untuned) start puts the host back.
    runner.extra_args = ["--tune=best-effort", "--host-root", str(host)]
    runner.start()
    wait_until(lambda: (host / STATE).exists(), message="tuning")
    runner.kill(signal.SIGKILL)
    runner.extra_args = ["--host-root", str(host)]
    runner.start()
    wait_until(lambda: not (host / STATE).exists(), message="the next start to restore")
    assert host_files(host) == before
    # The state file goes first and the line after it: the line is waited for.
    wait_until(
        lambda: "restored settings a previous tuned run left" in runner.output(),
        message="the next start to say what it restored",
    )
    assert runner.kill(signal.SIGTERM) == 0


def test_a_tuned_runner_stopped_while_it_starts_drains_and_restores_the_host(
    deployment: Deployment, host: Path
) -> None:
    # SIGTERM once the state file says tuning has begun, before the agent is up: the stop is
    # kept and handed to the agent, which drains, and the host is put back.
    before = host_files(host)
    runner = tuned_runner(deployment, host, "stopped", "--tune=best-effort").start()
    wait_until(lambda: (host / STATE).exists(), interval=0.001, message="tuning")
    assert runner.kill(signal.SIGTERM) == 0, runner.output()
    assert host_files(host) == before
    assert not (host / STATE).exists()


def test_strict_tuning_that_cannot_apply_a_setting_refuses_to_start_and_changes_nothing(
    deployment: Deployment, host: Path
) -> None:
    before = host_files(host)
    runner = tuned_runner(deployment, host, "strict", "--tune").start()
    assert runner.proc is not None
    assert runner.proc.wait(timeout=60) == 2
    # A plain directory is no cgroup: the partition's files never appear.
    assert "cannot tune cpuset_partition" in runner.output()
    assert "--tune=best-effort goes on untuned" in runner.output()
    assert host_files(host) == before
