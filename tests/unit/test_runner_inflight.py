"""What a killed runner left behind, stopped from its in-flight records, with real processes: a
recorded group is killed only while it provably is the job's, and a process of the job that
left the group is found by its environment."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchrunner.runner import inflight, procfs
from benchrunner.runner.inflight import JOB_VARIABLE, InFlight, JobRecord
from tests.harness import wait_until
from tests.thread_clock import ManualThreadClock

# The leader starts a child in its group and another that leaves it (setsid), writes the three
# pids to a file and sleeps: the family of a job, as a benchmark harness would start it.
FAMILY = """
import os, subprocess, sys, time
sleep = [sys.executable, "-c", "import time; time.sleep(600)"]
child = subprocess.Popen(sleep)
escaped = subprocess.Popen(sleep, start_new_session=True)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {child.pid} {escaped.pid}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)
"""


def gone(pid: int) -> bool:
    info = procfs.process(pid)
    return info is None or info.ended


class Family:
    def __init__(self, tmp_path: Path, job: uuid.UUID | None) -> None:
        self.job = job
        pidfile = tmp_path / f"family-{uuid.uuid4()}"
        env = {"PATH": os.environ["PATH"]}
        if job is not None:
            env[JOB_VARIABLE] = str(job)
        self.leader = subprocess.Popen(
            [sys.executable, "-c", FAMILY, str(pidfile)], env=env, start_new_session=True
        )
        wait_until(pidfile.exists, message="family pids")
        self.pids = [int(pid) for pid in pidfile.read_text().split()]

    @property
    def group(self) -> int:
        return self.leader.pid

    def alive(self) -> list[bool]:
        self.leader.poll()  # reap the leader if it died: it is our child
        return [not gone(pid) for pid in self.pids]

    def kill(self) -> None:
        for pid in self.pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.leader.wait(10)


@pytest.fixture
def families(tmp_path: Path) -> Iterator[list[Family]]:
    started: list[Family] = []
    yield started
    for family in started:
        family.kill()


@pytest.fixture
def in_flight(tmp_path: Path) -> InFlight:
    return InFlight(tmp_path / "spool" / "in-flight")


def start(tmp_path: Path, families: list[Family], job: uuid.UUID | None) -> Family:
    family = Family(tmp_path, job)
    families.append(family)
    return family


def test_a_recorded_group_and_the_jobs_escaped_process_are_killed(
    tmp_path: Path, families: list[Family], in_flight: InFlight
) -> None:
    family = start(tmp_path, families, uuid.uuid4())
    assert family.job is not None
    in_flight.job(family.job)
    in_flight.group(family.job, family.group)
    assert family.alive() == [True, True, True]
    assert in_flight.stop_leftovers() == 3
    assert family.alive() == [False, False, False]  # stop_leftovers waited for them
    assert in_flight.records() == []


def test_a_job_recorded_before_its_group_started_is_found_by_its_environment(
    tmp_path: Path, families: list[Family], in_flight: InFlight
) -> None:
    family = start(tmp_path, families, uuid.uuid4())
    assert family.job is not None
    in_flight.job(family.job)  # the runner died before it could record the group
    assert in_flight.stop_leftovers() == 3
    assert family.alive() == [False, False, False]


def test_a_group_whose_id_now_belongs_to_someone_else_is_left_alone(
    tmp_path: Path, families: list[Family], in_flight: InFlight
) -> None:
    # The job's group ended long ago and its id went to another program's group: neither is its
    # leader the recorded process (another start time) nor does any member carry the job.
    stranger = start(tmp_path, families, None)
    job = uuid.uuid4()
    leader = procfs.process(stranger.group)
    assert leader is not None
    record = JobRecord(job, procfs.boot_id(), group=stranger.group, leader_start=leader.start - 1)
    (in_flight.directory / f"{job}.json").write_text(record.to_json())
    assert in_flight.stop_leftovers() == 0
    assert stranger.alive() == [True, True, True]
    assert in_flight.records() == []


def test_a_record_from_an_earlier_boot_stops_nothing(
    tmp_path: Path, families: list[Family], in_flight: InFlight
) -> None:
    family = start(tmp_path, families, uuid.uuid4())
    assert family.job is not None
    record = JobRecord(family.job, "another-boot", group=family.group)
    (in_flight.directory / f"{family.job}.json").write_text(record.to_json())
    assert in_flight.stop_leftovers() == 0
    assert family.alive() == [True, True, True]
    assert in_flight.records() == []


def test_an_unreadable_record_is_removed(in_flight: InFlight) -> None:
    (in_flight.directory / f"{uuid.uuid4()}.json").write_text("{not json")
    job = uuid.uuid4()
    (in_flight.directory / f"{job}.json").write_text(
        JobRecord(job, procfs.boot_id(), group=1).to_json()  # never init's group
    )
    assert in_flight.records() == []
    assert list(in_flight.directory.iterdir()) == []


def test_a_forgotten_job_leaves_no_record(in_flight: InFlight) -> None:
    job = uuid.uuid4()
    in_flight.job(job)
    in_flight.container(job, "benchrunner-x-0", ("/usr/sbin/runc", "--root", "/state"))
    assert in_flight.records() == [
        JobRecord(
            job,
            procfs.boot_id(),
            container="benchrunner-x-0",
            runtime=("/usr/sbin/runc", "--root", "/state"),
        )
    ]
    in_flight.forget(job)
    in_flight.forget(job)  # twice is no error
    assert in_flight.records() == []
    left = [path.name for path in in_flight.directory.iterdir()]
    assert all(name.startswith(".in-flight-spare-") for name in left)  # to be written over


# ---------------------------------------------------------------- on the runner's clock


def stop_leftovers_in_thread(in_flight: InFlight) -> tuple[threading.Thread, list[int]]:
    stopped: list[int] = []
    thread = threading.Thread(target=lambda: stopped.append(in_flight.stop_leftovers()))
    thread.start()
    return thread, stopped


def finish_on_the_clock(thread: threading.Thread, clock: ManualThreadClock) -> None:
    """Move ``clock`` on through each wait ``thread`` makes until it ends."""
    while thread.is_alive():
        wait_until(lambda: not thread.is_alive() or bool(clock.waiting()), message="a wait")
        waiting = clock.waiting()
        if waiting:
            clock.advance(waiting[0] - clock.monotonic())
    thread.join()


def test_the_second_look_for_a_leader_caught_before_exec_waits_on_the_runners_clock(
    tmp_path: Path, families: list[Family]
) -> None:
    clock = ManualThreadClock(start=1000.0)
    in_flight = InFlight(tmp_path / "spool" / "in-flight", clock=clock)
    job = uuid.uuid4()
    in_flight.job(job)  # no group recorded: the leader may have been between vfork and exec
    thread, stopped = stop_leftovers_in_thread(in_flight)
    wait_until(lambda: clock.waiting() == [1000.05], message="the exec window's wait")
    # The job's processes show up (with their environment) only within the window.
    family = start(tmp_path, families, job)
    assert thread.is_alive()
    finish_on_the_clock(thread, clock)
    assert stopped == [3]
    assert family.alive() == [False, False, False]


FREEZER = Path("/sys/fs/cgroup/freezer")


@pytest.mark.skipif(
    os.geteuid() != 0 or not (FREEZER / "cgroup.procs").exists(),
    reason="needs root and the cgroup v1 freezer",
)
def test_processes_that_do_not_end_after_sigkill_are_waited_for_on_the_runners_clock(
    tmp_path: Path, families: list[Family], caplog: pytest.LogCaptureFixture
) -> None:
    clock = ManualThreadClock(start=1000.0)
    in_flight = InFlight(tmp_path / "spool" / "in-flight", clock=clock)
    family = start(tmp_path, families, uuid.uuid4())
    assert family.job is not None
    in_flight.job(family.job)
    in_flight.group(family.job, family.group)
    # Frozen, the family takes its SIGKILL only once thawed: it outlives the wait.
    frozen = FREEZER / f"benchrunner-test-{uuid.uuid4()}"
    frozen.mkdir()
    try:
        for pid in family.pids:
            (frozen / "cgroup.procs").write_text(str(pid))
        (frozen / "freezer.state").write_text("FROZEN")
        wait_until(lambda: (frozen / "freezer.state").read_text().strip() == "FROZEN")
        thread, stopped = stop_leftovers_in_thread(in_flight)
        wait_until(lambda: clock.waiting() == [1000.02], message="the first look's wait")
        clock.advance(4.97)  # 1004.97: the processes still there, the deadline (1005) not yet
        wait_until(lambda: clock.waiting() == [pytest.approx(1004.99)], message="the next look")
        assert thread.is_alive()
        clock.advance(0.03)
        thread.join(10)
        assert not thread.is_alive()
        assert stopped == [3]
        assert "did not end after SIGKILL" in caplog.text
    finally:
        (frozen / "freezer.state").write_text("THAWED")
        wait_until(lambda: not any(family.alive()), message="the thawed family's end")
        frozen.rmdir()


def test_records_replaced_and_forgotten_leave_only_a_few_spare_files(tmp_path: Path) -> None:
    in_flight = InFlight(tmp_path)
    jobs = [uuid.uuid4() for _ in range(10)]
    for number, job in enumerate(jobs):
        in_flight.job(job)
        in_flight.group(job, os.getpid())
        in_flight.job(job)  # a second iteration
        assert [record.job for record in in_flight.records()] == [job]
        assert in_flight.records()[0].group is None
        in_flight.group(job, os.getpid() + number)
        assert in_flight.records()[0].group == os.getpid() + number
        in_flight.forget(job)
        assert in_flight.records() == []
    kept = [path.name for path in tmp_path.iterdir()]
    assert 0 < len(kept) <= 4
    assert all(name.startswith(".in-flight-spare-") for name in kept)
    in_flight.stop_leftovers()
    assert list(tmp_path.iterdir()) == []
    in_flight.job(jobs[0])  # after the spares are gone
    assert [record.job for record in in_flight.records()] == [jobs[0]]


def test_a_process_killed_already_is_not_counted_again_in_another_state(
    tmp_path: Path, families: list[Family]
) -> None:
    """The second look for a job's processes (after the exec window) sees one killed in the
    first dying: another state, the same process (its pid and start)."""
    family = start(tmp_path, families, uuid.uuid4())
    assert family.job is not None
    record = JobRecord(family.job, procfs.boot_id())
    table = [
        info
        for info in procfs.processes()
        if procfs.carries(info.pid, JOB_VARIABLE, str(family.job))
    ]
    assert table
    killed = [dataclasses.replace(info, state="X" if info.state != "X" else "R") for info in table]
    inflight._kill_carriers(record, table, killed)
    assert len(killed) == len(table)
    inflight._kill_carriers(record, table, [])  # the family's end
