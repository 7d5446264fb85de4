"""A job's leader started by ``posix_spawn`` (``executors/spawn.py``), with real children that
report what they got: the working directory, the environment, the descriptors, the session, the
signals and the CPU affinity, as ``subprocess.Popen`` would have given them."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar

import pytest

from benchrunner.runner.executors import spawn
from benchrunner.runner.executors.group import start_leader
from benchrunner.runner.executors.spawn import Leader, SpawnedLeader, spawn_leader

PY = sys.executable
REPORT = """
import json, os, sys
fds = []
for fd in range(3, 1024):
    try:
        os.fstat(fd)
    except OSError:
        continue
    fds.append(fd)
print(json.dumps({
    "cwd": os.getcwd(),
    "env": dict(os.environ),
    "stdin": os.readlink("/proc/self/fd/0"),
    "fds": fds,
    "sid": os.getsid(0),
    "pgid": os.getpgid(0),
    "pid": os.getpid(),
    "cores": sorted(os.sched_getaffinity(0)),
}))
sys.stderr.write("to stderr")
"""
ENV = {"PATH": os.defpath, "BENCHRUNNER_JOB": "a-job"}

T = TypeVar("T")


def on_a_thread(work: Callable[[], T]) -> T:
    """``work()`` on a new thread, as a job's thread runs it (not on pytest's own)."""
    results: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(work())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return results[0]


def report(leader: Leader) -> dict[str, Any]:
    assert leader.stdout is not None and leader.stderr is not None
    out, err = leader.stdout.read(), leader.stderr.read()
    assert leader.wait() == 0, err
    assert err == b"to stderr"
    leader.stdout.close()
    leader.stderr.close()
    data: dict[str, Any] = json.loads(out)
    return data


def test_the_child_gets_the_directory_environment_stdio_and_session_asked_for(
    tmp_path: Path,
) -> None:
    leader = on_a_thread(lambda: spawn_leader([PY, "-c", REPORT], ENV, tmp_path))
    assert isinstance(leader, SpawnedLeader)
    child = report(leader)
    assert child["cwd"] == str(tmp_path)
    # Python adds LC_CTYPE to its own environment at start where the locale is C.
    assert {k: v for k, v in child["env"].items() if k != "LC_CTYPE"} == ENV
    assert child["stdin"] == os.devnull
    assert child["fds"] == []
    assert child["sid"] == child["pgid"] == child["pid"] == leader.pid


def test_signals_ignored_by_the_runner_are_back_to_their_defaults_and_none_is_blocked(
    tmp_path: Path,
) -> None:
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN  # Python's own, at its start

    def spawned_with_sigusr1_blocked() -> SpawnedLeader | None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        # Not Python: it would ignore SIGPIPE again itself.
        return spawn_leader(["/bin/cat", "/proc/self/status"], ENV, tmp_path)

    leader = on_a_thread(spawned_with_sigusr1_blocked)
    assert leader is not None and leader.stdout is not None
    lines = leader.stdout.read().decode().splitlines()
    assert leader.wait() == 0
    status = dict(line.split(":\t", 1) for line in lines if ":\t" in line)
    for restored in (signal.SIGPIPE, signal.SIGXFSZ):
        assert not int(status["SigIgn"], 16) & (1 << (restored - 1))
    assert int(status["SigBlk"], 16) == 0


def _childs_descriptors(directory: Path) -> list[int]:
    """The descriptors beyond stdin, stdout and stderr that a leader spawned now holds."""
    leader = on_a_thread(lambda: spawn_leader([PY, "-c", REPORT], ENV, directory))
    assert leader is not None
    fds: list[int] = report(leader)["fds"]
    return fds


@pytest.fixture
def pipe_end() -> Iterator[int]:
    """The read end of a new pipe of the runner's (not inheritable), both ends closed after
    the test and the runner's descriptors surveyed again."""
    read, write = os.pipe()
    yield read
    os.close(read)
    os.close(write)
    spawn.survey_descriptors()


def test_an_inheritable_descriptor_of_the_runner_is_closed_in_the_child(
    tmp_path: Path, pipe_end: int
) -> None:
    os.set_inheritable(pipe_end, True)
    spawn.survey_descriptors()
    assert _childs_descriptors(tmp_path) == []


def test_one_made_inheritable_since_the_last_survey_is_closed_once_surveyed_again(
    tmp_path: Path, pipe_end: int
) -> None:
    # What the survey is for: without it, the descriptor would reach the child.
    spawn.survey_descriptors()
    os.set_inheritable(pipe_end, True)
    assert pipe_end in _childs_descriptors(tmp_path)
    spawn.survey_descriptors()
    assert _childs_descriptors(tmp_path) == []


def test_the_spawning_thread_returns_to_the_runners_directory_and_no_other_thread_moved(
    tmp_path: Path,
) -> None:
    before = Path.cwd()
    inside, looked = threading.Event(), threading.Event()
    seen_elsewhere: list[Path] = []

    def started() -> None:  # the spawning thread, still in the job's directory
        inside.set()
        assert looked.wait(30)

    def look() -> None:  # another thread meanwhile
        assert inside.wait(30)
        seen_elsewhere.append(Path.cwd())
        looked.set()

    watcher = threading.Thread(target=look)
    watcher.start()

    def spawn_and_look() -> Path:
        leader = spawn_leader([PY, "-c", "pass"], ENV, tmp_path, started)
        assert leader is not None
        leader.wait()
        return Path.cwd()  # this thread's own, back again

    assert on_a_thread(spawn_and_look) == before
    watcher.join(30)
    assert seen_elsewhere == [before]
    assert Path.cwd() == before


def test_the_child_runs_on_the_spawning_threads_cores(tmp_path: Path) -> None:
    allowed = sorted(os.sched_getaffinity(0))
    core = allowed[-1]

    def pinned() -> SpawnedLeader | None:
        os.sched_setaffinity(0, {core})
        return spawn_leader([PY, "-c", REPORT], ENV, tmp_path)

    leader = on_a_thread(pinned)
    assert leader is not None
    assert report(leader)["cores"] == [core]


def test_a_program_is_looked_up_in_the_childs_path_not_the_runners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "job-program"
    program.write_text(f"#!{PY}\n{REPORT}")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", os.defpath)
    env = {**ENV, "PATH": f"{bin_dir}{os.pathsep}{os.defpath}"}
    leader = on_a_thread(lambda: spawn_leader(["job-program"], env, tmp_path))
    assert leader is not None
    assert report(leader)["cwd"] == str(tmp_path)
    with pytest.raises(FileNotFoundError):
        on_a_thread(lambda: spawn_leader(["job-program"], ENV, tmp_path))
    program.chmod(0o644)
    with pytest.raises(PermissionError):
        on_a_thread(lambda: spawn_leader(["job-program"], env, tmp_path))


def test_a_missing_program_raises_and_leaves_no_descriptor_open(tmp_path: Path) -> None:
    before = sorted(Path("/proc/self/fd").iterdir())
    with pytest.raises(FileNotFoundError):
        on_a_thread(lambda: spawn_leader(["/nonexistent/program"], ENV, tmp_path))
    assert sorted(Path("/proc/self/fd").iterdir()) == before


def test_poll_wait_and_kill_say_what_popen_says(tmp_path: Path) -> None:
    leader = on_a_thread(
        lambda: spawn_leader([PY, "-c", "import time; time.sleep(60)"], ENV, tmp_path)
    )
    assert leader is not None
    assert leader.poll() is None
    leader.kill()
    assert leader.wait() == -signal.SIGKILL
    assert leader.poll() == -signal.SIGKILL
    leader.kill()  # reaped: nothing is signalled


@pytest.mark.parametrize("guarded", [True, False], ids=["guarded", "armed-by-the-shim"])
def test_start_leader_spawns_its_vfork_starts_with_posix_spawn(
    tmp_path: Path, guarded: bool
) -> None:
    def started_and_reported() -> tuple[Leader, dict[str, Any]]:
        # Read on the thread that started it: an armed leader dies with that thread.
        leader = start_leader([PY, "-c", REPORT], env=ENV, cwd=tmp_path, guarded=guarded)
        return leader, report(leader)

    leader, child = on_a_thread(started_and_reported)
    assert isinstance(leader, SpawnedLeader)
    assert child["cwd"] == str(tmp_path)


def test_a_thread_that_cannot_unshare_its_directory_falls_back_to_popen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spawn, "_unshare_fs", lambda: False)
    assert on_a_thread(lambda: spawn_leader([PY, "-c", REPORT], ENV, tmp_path)) is None
    leader = on_a_thread(
        lambda: start_leader([PY, "-c", REPORT], env=ENV, cwd=tmp_path, guarded=True)
    )
    assert not isinstance(leader, SpawnedLeader)
    assert report(leader)["cwd"] == str(tmp_path)


@pytest.mark.parametrize("way", ["posix_spawn", "popen"])
def test_started_is_called_once_the_child_exists_before_start_leader_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, way: str
) -> None:
    if way == "popen":
        monkeypatch.setattr(spawn, "_unshare_fs", lambda: False)
    calls: list[bool] = []

    def started_then_reported() -> tuple[Leader, dict[str, Any]]:
        before = set(children())

        def started() -> None:
            # The child exists: a child of this process that was not there before.
            calls.append(bool(set(children()) - before))

        leader = start_leader(
            [PY, "-c", REPORT], env=ENV, cwd=tmp_path, guarded=True, started=started
        )
        assert calls == [True]
        return leader, report(leader)

    leader, child = on_a_thread(started_then_reported)
    assert isinstance(leader, SpawnedLeader) == (way == "posix_spawn")
    assert child["cwd"] == str(tmp_path)


def children() -> list[int]:
    """This process's children, from the kernel's list of each of its threads."""
    found: list[int] = []
    for task in Path("/proc/self/task").iterdir():
        with suppress(FileNotFoundError):
            found += [int(pid) for pid in (task / "children").read_text().split()]
    return found
