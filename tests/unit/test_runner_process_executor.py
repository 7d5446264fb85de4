"""The ``process`` executor with real child processes: outputs, files, environment, process
groups, and what it refuses."""

from __future__ import annotations

import errno
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from benchrunner.core.templates import TemplateRegistry
from benchrunner.protocol import IterationResult, JsonClaimedJob
from benchrunner.runner import procfs
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.executors import ExecutorError, ProcessExecutor
from benchrunner.runner.executors.process import ENV_ALLOWLIST, ProcessJob
from benchrunner.runner.inflight import InFlight
from tests.harness import REPO, wait_until
from tests.thread_clock import ManualThreadClock
from tests.unit.claimed_jobs import claimed_job
from tests.unit.parent_death import READ_PDEATHSIG

PY = sys.executable
TEMPLATES = TemplateRegistry.parse(
    {
        "templates": {
            "script": {
                "command": [PY, "-c", "{code}"],
                "args": {"code": {"type": "string"}},
            },
            "bounded": {
                "command": [PY, "-c", "import sys; print(sys.argv[1])", "{n}"],
                "args": {"n": {"type": "int", "min": 1, "max": 10}},
            },
            "missing": {"command": ["/nonexistent/benchmark-binary"]},
        }
    }
)


def claimed(
    template: str | None = "script",
    *,
    args: dict[str, Any] | None = None,
    file_paths: list[str] | None = None,
    digest: str | None = None,
    **flags: bool,
) -> JsonClaimedJob:
    config: dict[str, Any] = {"timeout": 60, "template": template, "args": args, **flags}
    if digest is not None:
        config.update(digest=digest, registry="localhost", project=str(uuid.uuid4()))
    if file_paths is not None:
        config["file_paths"] = file_paths
    return claimed_job(config)


def executor(**options: Any) -> ProcessExecutor:
    return ProcessExecutor(TEMPLATES, **{"kill_grace": 2.0, **options})


def script(code: str, **kwargs: Any) -> JsonClaimedJob:
    return claimed("script", args={"code": code}, **kwargs)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def running(pid: int) -> procfs.ProcessInfo | None:
    info = procfs.process(pid)
    return None if info is None or info.ended else info


def run_in_thread(
    job: ProcessJob, index: int = 0
) -> tuple[threading.Thread, list[IterationResult]]:
    results: list[IterationResult] = []
    thread = threading.Thread(target=lambda: results.append(job.run_iteration(index)))
    thread.start()
    return thread, results


# A child that starts a grandchild in its own process group, records both pids in the working
# directory, then waits (optionally ignoring SIGTERM, as does the grandchild).
FAMILY = """
import os, signal, subprocess, sys, time
ignore = {ignore}
if ignore:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
grandchild = subprocess.Popen([sys.executable, "-c", {grandchild!r}])
with open("pids.tmp", "w") as f:
    f.write(f"{{os.getpid()}} {{grandchild.pid}}")
os.rename("pids.tmp", "pids")
{then}
"""
SLEEPER = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"


def family(*, ignore_term: bool, then: str = "time.sleep(60)") -> str:
    grandchild = SLEEPER if ignore_term else "import time; time.sleep(60)"
    return FAMILY.format(ignore=ignore_term, grandchild=grandchild, then=then)


def read_pids(job: ProcessJob) -> list[int]:
    pids = job.workdir / "pids"
    wait_until(pids.exists)
    return [int(pid) for pid in pids.read_text().split()]


# ---------------------------------------------------------------- outputs


def test_iterations_report_exit_code_stdout_and_stderr() -> None:
    code = (
        "import os, sys; i = os.environ['BENCHRUNNER_ITERATION']; "
        "print('iteration', i); sys.stderr.write('warn ' + i)"
    )
    job = executor().prepare(script(code))
    try:
        results = [job.run_iteration(index) for index in range(3)]
    finally:
        job.cleanup()
    assert results == [
        IterationResult(exit_code=0, stdout=f"iteration {i}\n", stderr=f"warn {i}")
        for i in range(3)
    ]


def test_non_zero_exit_code_is_reported() -> None:
    job = executor().prepare(script("import sys; print('bad'); sys.exit(3)"))
    try:
        result = job.run_iteration(0)
    finally:
        job.cleanup()
    assert (result.exit_code, result.stdout) == (3, "bad\n")


def test_file_paths_are_collected_after_each_iteration() -> None:
    code = (
        "import os, pathlib; i = os.environ['BENCHRUNNER_ITERATION']; "
        "pathlib.Path('out').mkdir(exist_ok=True); "
        "pathlib.Path('out/result.json').write_text('{\"i\": ' + i + '}'); "
        "os.path.lexists('link') or os.symlink('out/result.json', 'link')"
    )
    paths = ["out/result.json", "link", "never-written.txt"]
    job = executor().prepare(script(code, file_paths=paths))
    try:
        results = [job.run_iteration(index) for index in range(2)]
    finally:
        job.cleanup()
    for index, result in enumerate(results):
        assert result.output == {
            "out/result.json": f'{{"i": {index}}}',
            "link": f'{{"i": {index}}}',
        }
        assert result.stderr == "[benchrunner: file_path 'never-written.txt' not found]\n"


RUNNER_KEY = "bencher_runner_" + "ab" * 32


@pytest.fixture
def runner_secrets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The runner's key in its environment and a config file holding a token, as on a machine
    set up by ``benchrunner up``."""
    monkeypatch.setenv("BENCHRUNNER_RUNNER_KEY", RUNNER_KEY)
    config = tmp_path / "config.toml"
    config.write_text('token = "admin-token-secret"\n')
    config.chmod(0o600)
    return config


def test_file_paths_outside_the_working_directory_are_refused_one_by_one(
    runner_secrets: Path,
) -> None:
    # The job writes its own result, then links the runner's secrets into its directory in
    # every way it can; only its own file comes back, each refusal is a note.
    code = (
        "import os, pathlib; pathlib.Path('result.json').write_text('{}'); "
        "os.symlink('/proc/self/environ', 'environ'); "
        f"os.symlink({str(runner_secrets)!r}, 'config'); "
        "os.symlink('..', 'up'); "
        f"os.link({str(runner_secrets)!r}, 'hardlinked')"
    )
    paths = [
        "/proc/self/environ",
        str(runner_secrets),
        "../config.toml",
        "environ",
        "config",
        f"up/{runner_secrets.name}",
        "hardlinked",
        "result.json",
    ]
    job = executor().prepare(script(code, file_paths=paths))
    try:
        result = job.run_iteration(0)
    finally:
        job.cleanup()
    assert (result.exit_code, result.output) == (0, {"result.json": "{}"})
    refused = "[benchrunner: file_path {!r} refused: {}]"
    outside = "the job's working directory"
    assert result.stderr == "".join(
        refused.format(path, reason) + "\n"
        for path, reason in [
            ("/proc/self/environ", f"an absolute path, outside {outside}"),
            (str(runner_secrets), f"an absolute path, outside {outside}"),
            ("../config.toml", f"'..' on its path leaves {outside}"),
            ("environ", f"a symlink to an absolute path, outside {outside}"),
            ("config", f"a symlink to an absolute path, outside {outside}"),
            (f"up/{runner_secrets.name}", f"'..' on its path leaves {outside}"),
            ("hardlinked", f"a file with 2 hard links: it may be a file from outside {outside}"),
        ]
    )
    assert RUNNER_KEY not in str(result) and "admin-token-secret" not in str(result)


def test_build_time_and_file_size_are_measured_instead_of_reading_the_files(
    runner_secrets: Path,
) -> None:
    # Bencher's --build-time/--file-size: the command's wall time, the files' sizes (not their
    # contents), a missing or escaping file noted and left out.
    code = (
        "import pathlib, time; pathlib.Path('bin').mkdir(); "
        "pathlib.Path('bin/app').write_bytes(b'x' * 1234); time.sleep(0.2); "
        f"pathlib.Path('config').symlink_to({str(runner_secrets)!r})"
    )
    paths = ["bin/app", "never-built", "config"]
    job = executor().prepare(script(code, file_paths=paths, build_time=True, file_size=True))
    try:
        result = job.run_iteration(0)
    finally:
        job.cleanup()
    assert (result.exit_code, result.output, result.file_sizes) == (0, None, {"bin/app": 1234})
    assert result.build_time is not None
    ((command, seconds),) = result.build_time.items()
    assert command == shlex.join([PY, "-c", code])
    assert 0.2 <= seconds < 60
    assert result.stderr == (
        "[benchrunner: file_path 'never-built' not found]\n"
        "[benchrunner: file_path 'config' refused: a symlink to an absolute path, outside "
        "the job's working directory]\n"
    )


def test_no_file_paths_means_no_output_map() -> None:
    job = executor().prepare(script("pass"))
    try:
        assert job.run_iteration(0).output is None
    finally:
        job.cleanup()


def test_output_beyond_the_limit_is_truncated_with_a_marker_and_never_deadlocks() -> None:
    # Far more than a pipe buffer on both streams: reading them one after the other would hang.
    code = "import sys; sys.stderr.write('e' * 3_000_000); sys.stdout.write('o' * 3_000_000)"
    job = executor(max_output_bytes=1000).prepare(script(code))
    try:
        result = job.run_iteration(0)
    finally:
        job.cleanup()
    marker = "[benchrunner: output truncated at 1000 bytes]\n"
    assert result.exit_code == 0
    assert result.stdout == "o" * 1000 + "\n" + marker
    assert result.stderr == "e" * 1000 + "\n" + marker


def test_invalid_utf8_is_replaced() -> None:
    job = executor().prepare(script("import sys; sys.stdout.buffer.write(b'ok \\xff\\n')"))
    try:
        assert job.run_iteration(0).stdout == "ok \ufffd\n"
    finally:
        job.cleanup()


# ---------------------------------------------------------------- environment and workdir


def test_environment_is_an_allowlist(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BENCHRUNNER_RUNNER_KEY", RUNNER_KEY)
    monkeypatch.setenv("BENCHRUNNER_RUNNER_KEY_FILE", str(tmp_path / "key"))
    monkeypatch.setenv("BENCHRUNNER_TOKEN", "admin-token-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cret")
    monkeypatch.setenv("TZ", "UTC")
    job = executor().prepare(script("import json, os; print(json.dumps(dict(os.environ)))"))
    try:
        result = job.run_iteration(4)
    finally:
        job.cleanup()
    assert result.stdout is not None
    env = json.loads(result.stdout)
    assert "s3cret" not in result.stdout and "bencher_runner_" not in result.stdout
    assert "admin-token-secret" not in result.stdout and str(tmp_path) not in result.stdout
    # LC_CTYPE may be set by Python's own locale coercion inside the child.
    assert set(env) - set(ENV_ALLOWLIST) - {"LC_CTYPE"} == {
        "BENCHRUNNER_JOB",
        "BENCHRUNNER_ITERATION",
        "BENCHRUNNER_WORKDIR",
    }
    assert env["TZ"] == "UTC" and env["PATH"] == os.environ["PATH"]
    assert env["BENCHRUNNER_JOB"] == str(job.job)
    assert env["BENCHRUNNER_ITERATION"] == "4"
    assert env["BENCHRUNNER_WORKDIR"] == str(job.workdir)


def test_each_job_runs_in_a_fresh_working_directory_removed_at_cleanup(tmp_path: Path) -> None:
    code = "import os; print(os.getcwd()); print(sorted(os.listdir()))"
    first = executor(workdir_root=tmp_path).prepare(script(code))
    second = executor(workdir_root=tmp_path).prepare(script(code))
    try:
        assert first.workdir != second.workdir
        assert first.run_iteration(0).stdout == f"{first.workdir}\n[]\n"
    finally:
        first.cleanup()
        second.cleanup()
    assert list(tmp_path.iterdir()) == []


def test_the_next_jobs_working_directory_is_made_between_jobs_and_named_after_it(
    tmp_path: Path,
) -> None:
    ahead = executor(workdir_root=tmp_path)
    ahead.between_jobs()
    (made,) = tmp_path.iterdir()
    assert made.stat().st_mode & 0o777 == 0o700 and list(made.iterdir()) == []
    code = "import os; print(os.getcwd()); print(sorted(os.listdir()))"
    job = ahead.prepare(script(code))
    try:
        assert not made.exists() and job.workdir.parent == tmp_path
        assert job.workdir.name.startswith(f"benchrunner-{job.job}-")
        assert job.run_iteration(0).stdout == f"{job.workdir}\n[]\n"
        # Taken: the next job makes its own, unless one is made ahead again.
        second = ahead.prepare(script(code))
        assert second.workdir.name.startswith(f"benchrunner-{second.job}-")
        second.cleanup()
    finally:
        job.cleanup()
    assert list(tmp_path.iterdir()) == []


def test_the_working_directory_made_ahead_is_removed_when_the_executor_closes(
    tmp_path: Path,
) -> None:
    ahead = executor(workdir_root=tmp_path)
    ahead.between_jobs()
    ahead.between_jobs()  # one is enough
    assert len(list(tmp_path.iterdir())) == 1
    ahead.close()
    assert list(tmp_path.iterdir()) == []
    ahead.between_jobs()  # closed: nothing more is made
    assert list(tmp_path.iterdir()) == []


def test_job_process_runs_on_the_job_cores_only() -> None:
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        pytest.skip("needs two cores")
    plan = CorePlan.detect()
    job = executor(cores=plan).prepare(script("import os; print(sorted(os.sched_getaffinity(0)))"))
    try:
        result = job.run_iteration(0)
    finally:
        job.cleanup()
    assert result.stdout == f"{sorted(plan.job_cores)}\n"
    assert os.sched_getaffinity(0) == allowed  # the launching thread got its cores back


# ---------------------------------------------------------------- stopping process groups


@pytest.mark.parametrize(
    ("ignore_term", "exit_code", "stderr"),
    [
        (False, 128 + 15, "[benchrunner: killed by signal SIGTERM]\n"),
        (True, 128 + 9, None),  # ignores SIGTERM: SIGKILL after the grace
    ],
)
def test_cancel_stops_the_whole_process_group(
    ignore_term: bool, exit_code: int, stderr: str | None
) -> None:
    job = executor(kill_grace=0.3).prepare(script(family(ignore_term=ignore_term)))
    try:
        thread, results = run_in_thread(job)
        pids = read_pids(job)
        job.cancel()
        thread.join(10)
        assert not thread.is_alive()
    finally:
        job.cleanup()
    assert results[0].exit_code == exit_code
    if stderr is not None:
        assert results[0].stderr == stderr
    assert not any(alive(pid) for pid in pids)


def _ran_on(clock: ManualThreadClock, seconds: float) -> bool:
    """``clock`` moved on by ``seconds``: True, for a condition that waits with it."""
    clock.advance(seconds)
    return True


def test_the_kill_grace_runs_out_on_the_runners_clock() -> None:
    clock = ManualThreadClock(start=1000.0)
    job = executor(kill_grace=10.0, clock=clock).prepare(script(family(ignore_term=True)))
    try:
        thread, results = run_in_thread(job)
        pids = read_pids(job)
        job.cancel()
        wait_until(lambda: clock.waiting() == [1010.0], message="the kill grace's wait")
        clock.advance(9.0)
        wait_until(lambda: clock.waiting() == [1010.0], message="the kill grace waiting on")
        assert all(alive(pid) for pid in pids)  # both ignore SIGTERM; no SIGKILL before 1010
        assert thread.is_alive()
        clock.advance(1.0)
        # Past the grace, the group's processes die in their own time, and the runner waits for
        # the last ones between looks on its clock (a loaded machine makes it look): the clock
        # runs on from here.
        wait_until(
            lambda: _ran_on(clock, 0.01) and not thread.is_alive(),
            timeout=10,
            message="the cancelled job's end",
        )
    finally:
        job.cleanup()
    assert results[0].exit_code == 128 + 9
    assert not any(alive(pid) for pid in pids)


def test_processes_left_behind_by_a_finished_iteration_are_stopped() -> None:
    # The grandchild inherits stdout: an executor that only waits for EOF would hang here.
    job = executor().prepare(script(family(ignore_term=False, then="print('done')")))
    try:
        result = job.run_iteration(0)
        pids = read_pids(job)
    finally:
        job.cleanup()
    assert (result.exit_code, result.stdout) == (0, "done\n")
    assert not any(alive(pid) for pid in pids)


# A process left in the group that answers SIGTERM with more output than a pipe holds, started
# by a leader that exits once the process is ready: the output is read while the group is
# stopped, so the process ends on its own, well within the grace.
FLUSHER = (
    "import signal, sys, time\n"
    "def flush(*_):\n"
    "    sys.stdout.write('x' * 300_000); sys.stdout.flush(); sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, flush)\n"
    "open('ready', 'w').close()\n"
    "time.sleep(60)\n"
)
LEAVES_A_FLUSHER = (
    f"import os, subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {FLUSHER!r}])\n"
    "while not os.path.exists('ready'): time.sleep(0.01)\n"
)
# A leader that leaves a process of another session holding its stdout, its pid in a file.
LEAVES_AN_OUTSIDER = (
    "import os, subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
    '\'import os, time; open("outsider.tmp", "w").write(str(os.getpid())); '
    'os.rename("outsider.tmp", "outsider"); time.sleep(60)\'], start_new_session=True)\n'
    "while not os.path.exists('outsider'): time.sleep(0.01)\n"
    "print('done')\n"
)


def test_output_written_while_the_group_is_stopped_is_read_whole() -> None:
    job = executor(kill_grace=10.0, max_output_bytes=1_000_000).prepare(script(LEAVES_A_FLUSHER))
    try:
        result = job.run_iteration(0)
    finally:
        job.cleanup()
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == "x" * 300_000


def test_a_pipe_held_open_outside_the_group_is_given_up_when_the_runners_clock_says() -> None:
    clock = ManualThreadClock(start=1000.0)
    job = executor(kill_grace=10.0, clock=clock).prepare(script(LEAVES_AN_OUTSIDER))
    outsider: int | None = None
    try:
        thread, results = run_in_thread(job)
        wait_until(lambda: (job.workdir / "outsider").exists(), message="the outsider")
        outsider = int((job.workdir / "outsider").read_text())
        wait_until(lambda: clock.waiting() == [1010.0], message="the reading's deadline")
        clock.advance(9.0)
        wait_until(lambda: clock.waiting() == [1010.0], message="the reading waiting on")
        assert thread.is_alive()
        clock.advance(1.0)
        thread.join(10)
        assert not thread.is_alive()
        assert (results[0].exit_code, results[0].stdout) == (0, "done\n")
        assert results[0].stderr == (
            "[benchrunner: stdout is held open by a process outside the job's process group; "
            "stopped reading]\n[benchrunner: stderr is held open by a process outside the "
            "job's process group; stopped reading]\n"
        )
    finally:
        job.cleanup()
        if outsider is not None:
            os.kill(outsider, signal.SIGKILL)


def test_the_runner_refuses_a_host_without_pidfd_open(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(pid: int, flags: int = 0) -> int:
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", refused)
    with pytest.raises(ExecutorError) as raised:
        executor()
    assert str(raised.value) == (
        "the runner needs Linux 5.3 or later: os.pidfd_open is unusable here "
        "([Errno 38] Function not implemented)"
    )
    monkeypatch.delattr(os, "pidfd_open")
    with pytest.raises(ExecutorError, match=r"Linux 5\.3 or later.*\(not in this Python\)"):
        executor()


# A stand-in for the runner: it runs one iteration on a job thread, as the agent does, and
# nothing else (no guard, no in-flight records): only the parent-death signal can stop the job.
RUNNER_STAND_IN = """
import sys, threading, time
from pathlib import Path
from benchrunner.core.templates import TemplateRegistry
from benchrunner.runner.executors import ProcessExecutor
from tests.unit.claimed_jobs import claimed_job

code = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"
templates = TemplateRegistry.parse(
    {"templates": {"sleep": {"command": [sys.executable, "-c", code, sys.argv[1]]}}}
)
executor = ProcessExecutor(templates, workdir_root=Path(sys.argv[2]))
job = executor.prepare(claimed_job({"timeout": 600, "template": "sleep"}))
threading.Thread(target=job.run_iteration, args=(0,), name="job").start()
time.sleep(600)
"""


def test_the_job_leader_dies_with_a_runner_killed_by_sigkill(tmp_path: Path) -> None:
    pidfile = tmp_path / "leader.pid"
    runner = subprocess.Popen(
        [PY, "-c", RUNNER_STAND_IN, str(pidfile), str(tmp_path)],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )
    try:
        leader = int(wait_until(lambda: pidfile.exists() and pidfile.read_text()))
        assert alive(leader)
    finally:
        runner.kill()
        runner.wait(10)
    try:
        # Dead, or a zombie: this test process may be the subreaper it was re-parented to.
        wait_until(lambda: running(leader) is None, timeout=10, message="the job leader to die")
    finally:
        if running(leader) is not None:
            os.kill(leader, signal.SIGKILL)


@pytest.mark.parametrize(
    ("guard_running", "armed"),
    [
        pytest.param(True, "0", id="a-running-guard-watches"),
        pytest.param(False, "9", id="the-guard-is-gone"),
        pytest.param(None, "9", id="no-guard"),
    ],
)
def test_the_leader_is_armed_with_the_parent_death_signal_unless_a_running_guard_watches(
    tmp_path: Path, guard_running: bool | None, armed: str
) -> None:
    in_flight = InFlight(tmp_path / "in-flight")
    if guard_running is not None:
        in_flight.watched_by(lambda: guard_running)
    job = executor(in_flight=in_flight).prepare(script(READ_PDEATHSIG))
    try:
        result = job.run_iteration(0)
    finally:
        job.cleanup()
    assert (result.exit_code, (result.stdout or "").split()) == (0, [armed])


def test_cancel_before_an_iteration_starts_nothing() -> None:
    job = executor().prepare(script("open('ran', 'w').close()"))
    try:
        job.cancel()
        result = job.run_iteration(0)
        assert not (job.workdir / "ran").exists()
    finally:
        job.cleanup()
    assert result.exit_code is None


# ---------------------------------------------------------------- refusals


def test_template_not_approved_on_this_runner() -> None:
    with pytest.raises(ExecutorError) as refused:
        executor().prepare(claimed("bench.other"))
    assert str(refused.value) == (
        "template 'bench.other' is not approved on this runner "
        "(runner templates: bounded, missing, script)"
    )


def test_runner_without_templates_refuses_every_template() -> None:
    with pytest.raises(ExecutorError, match=r"\(runner templates: none\)"):
        ProcessExecutor(TemplateRegistry.empty()).prepare(claimed("script"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"n": 11}, "argument 'n' must be <= 10, got 11"),
        ({"n": 0}, "argument 'n' must be >= 1, got 0"),
        ({}, "template 'bounded' requires argument 'n'"),
        ({"n": 2, "extra": 1}, "template 'bounded' has no argument(s) ['extra']"),
    ],
)
def test_arguments_are_rechecked_against_the_runner_template(
    args: dict[str, Any], message: str
) -> None:
    with pytest.raises(ExecutorError) as refused:
        executor().prepare(claimed("bounded", args=args))
    assert str(refused.value).startswith(message)


def test_arguments_in_range_are_accepted() -> None:
    job = executor().prepare(claimed("bounded", args={"n": 10}))
    try:
        assert job.argv == [PY, "-c", "import sys; print(sys.argv[1])", "10"]
        assert job.run_iteration(0).stdout == "10\n"
    finally:
        job.cleanup()


def test_image_jobs_are_refused() -> None:
    with pytest.raises(ExecutorError) as refused:
        executor().prepare(claimed(None, digest="sha256:" + "0" * 64))
    assert str(refused.value) == (
        "executor 'process' cannot run image jobs; start the runner with --executor sandbox"
    )


def test_a_command_that_cannot_start_is_an_executor_error() -> None:
    job = executor().prepare(claimed("missing"))
    try:
        with pytest.raises(ExecutorError, match="could not start '/nonexistent/benchmark-binary'"):
            job.run_iteration(0)
    finally:
        job.cleanup()


def test_with_a_job_partition_each_iteration_process_is_moved_into_it(tmp_path: Path) -> None:
    # A plain file stands in for the partition's cgroup.procs: each write is one admitted pid.
    procs = tmp_path / "cgroup.procs"
    procs.write_text("")
    plan = CorePlan(housekeeping=0, job_cores=frozenset({1}), job_cgroup=procs)
    job = executor(cores=plan).prepare(script("import os; print(os.getpid())"))
    try:
        result = job.run_iteration(0)
    finally:
        job.cleanup()
    assert procs.read_text() == (result.stdout or "").strip()
