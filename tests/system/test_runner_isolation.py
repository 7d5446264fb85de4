"""What a job can reach and outlive, through real server and runner processes: not the runner's
key or any file outside its directory, and not a runner killed with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from benchrunner.runner import procfs
from benchrunner.runner.agent import IN_FLIGHT_DIR
from benchrunner.runner.inflight import JOB_VARIABLE, InFlight
from tests.harness import Deployment, output_json, wait_until

pytestmark = pytest.mark.engine_independent


def gone(pid: int) -> bool:
    # A zombie is gone too: this test process may be the subreaper it was re-parented to.
    info = procfs.process(pid)
    return info is None or info.ended


def read_pids(pidfile: Path) -> list[int]:
    text = wait_until(lambda: pidfile.exists() and pidfile.read_text(), message="pid file")
    return [int(pid) for pid in text.split()]


def test_a_job_sees_none_of_the_runners_own_variables(deployment: Deployment) -> None:
    runner = deployment.runner_process("r1", BENCHRUNNER_TOKEN="admin-token-secret")
    runner.start(BENCHRUNNER_RUNNER_KEY=runner.key)
    job = deployment.wait_status(deployment.submit("bench.environ"), "processed")
    environ = json.loads(output_json(job)["results"][0]["stdout"])
    assert {name for name in environ if name.startswith("BENCHRUNNER_")} == {
        "BENCHRUNNER_JOB",
        "BENCHRUNNER_ITERATION",
        "BENCHRUNNER_WORKDIR",
    }
    assert runner.key not in job.model_dump_json()
    assert "admin-token-secret" not in job.model_dump_json()


def test_files_linked_in_from_outside_are_refused_and_the_jobs_own_collected(
    deployment: Deployment, tmp_path: Path
) -> None:
    secret = tmp_path / "config.toml"
    secret.write_text('token = "admin-token-secret"\n')
    deployment.runner_process("r1").start()
    job_uuid = deployment.submit(
        "bench.links",
        {"secret": str(secret)},
        file_paths=["environ", "linked", "hard", "result.json"],
    )
    result = output_json(deployment.wait_status(job_uuid, "processed"))["results"][0]
    assert result["output"] == {"result.json": "{}"}
    for name in ("environ", "linked", "hard"):
        assert f"[benchrunner: file_path '{name}' refused: " in result["stderr"]
    assert "admin-token-secret" not in json.dumps(result)


def test_a_runner_killed_by_sigkill_leaves_no_job_process_running(
    deployment: Deployment, tmp_path: Path
) -> None:
    runner = deployment.runner_process("r1").start()
    pidfile = tmp_path / "family.pids"
    job_uuid = deployment.submit("bench.family", {"pidfile": str(pidfile)})
    deployment.wait_status(job_uuid, "running")
    leader, child = read_pids(pidfile)
    assert not gone(leader) and not gone(child)
    try:
        runner.kill(signal.SIGKILL)
        # Both by the runner's guard: the leader was started unarmed, the guard watching.
        wait_until(lambda: gone(leader) and gone(child), timeout=20, message="the job to die")
    finally:
        for pid in (leader, child):
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)
    # The guard removes the job's record once what it names is gone: just after, not before.
    in_flight = runner.spool / IN_FLIGHT_DIR
    wait_until(lambda: not any(in_flight.iterdir()), timeout=20, message="the record removed")
    assert "killed process group" in runner.output()


def test_the_next_working_directory_is_made_while_idle_and_removed_at_the_stop(
    deployment: Deployment, tmp_path: Path
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    runner = deployment.runner_process("r1").start(TMPDIR=str(temp))
    first = deployment.wait_status(deployment.submit("bench.environ"), "processed")
    workdir = json.loads(output_json(first)["results"][0]["stdout"])["BENCHRUNNER_WORKDIR"]
    assert Path(workdir).parent == temp and Path(workdir).name.startswith(
        f"benchrunner-{first.uuid}-"
    )

    def made_ahead() -> list[str]:
        return [entry.name for entry in temp.iterdir() if entry.name.startswith("benchrunner-")]

    (ahead,) = wait_until(made_ahead, message="the next job's working directory")
    assert ahead.startswith("benchrunner-next-")
    second = deployment.wait_status(deployment.submit("bench.environ"), "processed")
    taken = json.loads(output_json(second)["results"][0]["stdout"])["BENCHRUNNER_WORKDIR"]
    assert Path(taken).name == ahead.replace("next", second.uuid, 1)
    wait_until(made_ahead, message="the one after it")
    assert runner.kill(signal.SIGTERM) == 0
    assert made_ahead() == []


def guard_of(spool: Path) -> int:
    """The pid of the guard watching ``spool``'s in-flight records."""

    def find() -> int | None:
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                argv = cmdline.read_bytes().split(b"\0")
            except OSError:
                continue
            if b"benchrunner.runner.guard" in argv and str(spool / IN_FLIGHT_DIR).encode() in argv:
                return int(cmdline.parent.name)
        return None

    return wait_until(find, message="the runner's guard")


def test_without_its_guard_a_runner_arms_the_leader_to_die_with_it(
    deployment: Deployment, tmp_path: Path
) -> None:
    runner = deployment.runner_process("r1").start()
    guard = guard_of(runner.spool)
    os.kill(guard, signal.SIGKILL)
    pidfile = tmp_path / "family.pids"
    job_uuid = deployment.submit("bench.family", {"pidfile": str(pidfile)})
    deployment.wait_status(job_uuid, "running")
    leader, child = read_pids(pidfile)
    try:
        runner.kill(signal.SIGKILL)
        # No guard is left to kill anything: the leader dies by its parent-death signal alone.
        wait_until(lambda: gone(leader), timeout=20, message="the leader to die")
    finally:
        for pid in (leader, child):
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)
    assert f"the guard (pid {guard}) exited with -9" in runner.output()


def test_a_job_left_running_is_killed_at_the_next_start_before_any_claim(
    deployment: Deployment, tmp_path: Path
) -> None:
    # A job whose runner died and whose guard could not act (killed too): its process group
    # still runs, recorded in the runner's spool.
    runner = deployment.runner_process("r1")
    job = uuid.uuid4()
    pidfile = tmp_path / "family.pids"
    family = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, subprocess, sys, time; "
            "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
            "open(sys.argv[1], 'w').write(f'{os.getpid()} {child.pid}'); time.sleep(600)",
            str(pidfile),
        ],
        env={"PATH": os.environ["PATH"], JOB_VARIABLE: str(job)},
        start_new_session=True,
    )
    try:
        leader, child = read_pids(pidfile)
        in_flight = InFlight(runner.spool / IN_FLIGHT_DIR)
        in_flight.job(job)
        in_flight.group(job, family.pid)
        waiting = deployment.submit("bench.noop")
        runner.start()
        wait_until(lambda: gone(leader) and gone(child), timeout=30, message="the leftover job")
        deployment.wait_status(waiting, "processed")
    finally:
        family.kill()
        family.wait(10)
        if not gone(child):
            os.kill(child, signal.SIGKILL)
    log = runner.output()
    assert log.index(f"killed process group {leader}") < log.index(f"job {waiting} received")
