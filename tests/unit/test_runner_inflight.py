"""What a killed runner left behind, stopped from its in-flight records, with real processes: a
recorded group is killed only while it provably is the job's, and a process of the job that
left the group is found by its environment."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchrunner.runner import procfs
from benchrunner.runner.inflight import JOB_VARIABLE, InFlight, JobRecord
from tests.harness import wait_until

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
    assert list(in_flight.directory.iterdir()) == []
