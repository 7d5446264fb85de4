"""What a job runs on this machine, recorded before it runs, so that whatever a killed runner
left behind is found and stopped: by the guard the moment the runner dies (``guard.py``) and at
the runner's next start, before it claims anything.

    <spool>/in-flight/<job uuid>.json    one record per job, replaced as the job goes on
    <spool>/in-flight/.in-flight-*       files being written, or kept to be written over

The ``process`` executor records the job before each iteration starts and its process group
as soon as the group's leader runs (in between, the guard finds the leader by its
``BENCHRUNNER_JOB``; a leader started while no guard runs is armed with a parent-death signal
and cannot outlive the runner); the ``sandbox`` executor records the container id and the
runtime command that manages it before the runtime starts. A record is forgotten when the job
is cleaned up.

Stopping what a record names:

- only within the boot that recorded it: after a reboot nothing of it can run;
- a container: ``<runtime> kill ID KILL`` then ``<runtime> delete --force ID``;
- the process group: SIGKILL, but only while it provably is the job's, as group ids are reused
  once a group is empty: its leader is the recorded process (same start time), or a member
  carries the job's ``BENCHRUNNER_JOB`` in its environment;
- any other process that carries the job's ``BENCHRUNNER_JOB``: a descendant that left the
  group (``setsid``) but kept its environment. One that also changed its environment is not
  found: out of reach without cgroups.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchrunner.core.clock import SystemThreadClock, ThreadClock
from benchrunner.runner import procfs
from benchrunner.runner.clock_timer import pause
from benchrunner.runner.durable import write_over
from benchrunner.runner.exchange import swap_in
from benchrunner.runner.spares import SpareFiles

log = logging.getLogger(__name__)

JOB_VARIABLE = "BENCHRUNNER_JOB"
"""Set to the job's UUID in the environment of every job process, container included."""

_SUFFIX = ".json"
_TEMP_PREFIX = ".in-flight-"
_SPARE_PREFIX = f"{_TEMP_PREFIX}spare-"
_STOP_WAIT = 5.0
_POLL = 0.02
_EXEC_WINDOW = 0.05
_RUNTIME_TIMEOUT = 30.0


@dataclass(frozen=True)
class JobRecord:
    job: uuid.UUID
    boot: str
    group: int | None = None
    leader_start: int | None = None
    container: str | None = None
    runtime: tuple[str, ...] = ()
    """The runtime command line before its verb, e.g. ``("/usr/sbin/runc", "--root", DIR)``."""

    def to_json(self) -> str:
        return json.dumps(
            {
                "job": str(self.job),
                "boot": self.boot,
                "group": self.group,
                "leader_start": self.leader_start,
                "container": self.container,
                "runtime": list(self.runtime),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> JobRecord:
        """Raises ValueError (KeyError and TypeError included) for anything else."""
        data = json.loads(text)
        group, start, container = data["group"], data["leader_start"], data["container"]
        record = cls(
            job=uuid.UUID(data["job"]),
            boot=str(data["boot"]),
            group=None if group is None else int(group),
            leader_start=None if start is None else int(start),
            container=None if container is None else str(container),
            runtime=tuple(str(part) for part in data["runtime"]),
        )
        if record.group is not None and record.group <= 1:
            raise ValueError(f"process group {record.group} is no job's")
        return record


class InFlight:
    """The records of one runner. One writer per job; ``stop_leftovers`` only while no job runs
    (at start, or in the guard once the runner is gone)."""

    def __init__(self, directory: Path, clock: ThreadClock | None = None) -> None:
        """``clock``: the runner's, on which ``stop_leftovers`` waits for what it killed."""
        self.directory = directory
        self._clock = clock or SystemThreadClock()
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._boot = procfs.boot_id()
        self._watcher: Callable[[], bool] | None = None
        # Files of records replaced or forgotten, written over by the next records.
        self._spares = SpareFiles(directory, _SPARE_PREFIX)
        self._recorded: set[uuid.UUID] = set()

    def watched_by(self, running: Callable[[], bool]) -> None:
        """A guard process watches these records: ``running()`` tells whether it still runs."""
        self._watcher = running

    def watched(self) -> bool:
        """Whether a running guard would stop what these records name if the runner died now."""
        return self._watcher is not None and self._watcher()

    def job(self, job: uuid.UUID) -> None:
        """Record that ``job`` is about to start processes, before it starts any."""
        self._write(JobRecord(job, self._boot))

    def group(self, job: uuid.UUID, pgid: int) -> None:
        """Record the process group ``pgid`` whose leader ``job`` has just started."""
        leader = procfs.process(pgid)
        start = leader.start if leader is not None and leader.pgid == pgid else None
        self._write(JobRecord(job, self._boot, group=pgid, leader_start=start))

    def container(self, job: uuid.UUID, container: str, runtime: tuple[str, ...]) -> None:
        """Record the container ``job`` is about to have the runtime create."""
        self._write(JobRecord(job, self._boot, container=container, runtime=runtime))

    def forget(self, job: uuid.UUID) -> None:
        self._recorded.discard(job)
        path = self.directory / f"{job}{_SUFFIX}"
        with contextlib.suppress(FileNotFoundError):
            self._spares.keep(path)

    def records(self) -> list[JobRecord]:
        """Every readable record; an unreadable one is logged and removed."""
        records: list[JobRecord] = []
        for path in sorted(self.directory.glob(f"*{_SUFFIX}")):
            try:
                records.append(JobRecord.from_json(path.read_text()))
            except FileNotFoundError:
                continue
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.error("in-flight record %s is unreadable (%s); removing it", path, exc)
                with contextlib.suppress(OSError):
                    path.unlink()
        return records

    def stop_leftovers(self) -> int:
        """Stop what every record names (see the module docstring), wait until the killed
        processes are gone (a few seconds at most), and forget the records. Returns how many
        processes and containers were stopped."""
        stopped = 0
        for record in self.records():
            if record.boot != self._boot:
                log.info("job %s was recorded before a reboot: nothing of it runs", record.job)
            else:
                stopped += _stop(record, self._clock)
            self._recorded.discard(record.job)
            with contextlib.suppress(FileNotFoundError):  # removed, not kept: see below
                (self.directory / f"{record.job}{_SUFFIX}").unlink()
        self._spares.forget()
        for temporary in self.directory.glob(f"{_TEMP_PREFIX}*"):  # a write cut short, a spare
            with contextlib.suppress(OSError):
                temporary.unlink()
        return stopped

    def _write(self, record: JobRecord) -> None:
        # Atomic, so a reader never sees half a record; no fsync: a record matters only while
        # this boot lasts, and a process's death does not lose the page cache. The temporary is
        # a spare, or named after the job (one writer per job): no random name to draw, nothing
        # to retry. A record that exists is exchanged, not renamed over (``exchange.py``).
        job = str(record.job)
        path = self.directory / f"{job}{_SUFFIX}"
        temp = self._spares.take() or self.directory / f"{_TEMP_PREFIX}{job}"
        data = record.to_json().encode()
        try:
            write_over(
                os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600), data, sync=False
            )
            if record.job not in self._recorded:  # no record to exchange: one syscall fewer
                temp.replace(path)
                self._recorded.add(record.job)
            elif swap_in(temp, path):  # the old record, under the temporary's name
                with contextlib.suppress(OSError):
                    self._spares.keep(temp)
        except BaseException:
            with contextlib.suppress(OSError):
                temp.unlink()
            raise


def _stop(record: JobRecord, clock: ThreadClock) -> int:
    stopped = 0
    if record.container is not None and _remove_container(record.runtime, record.container):
        log.warning("removed container %s left by job %s", record.container, record.job)
        stopped += 1
    table = [info for info in procfs.processes() if not info.ended and info.pid != os.getpid()]
    killed: list[procfs.ProcessInfo] = []
    if record.group is not None:
        members = [info for info in table if info.pgid == record.group]
        if any(_is_the_jobs(info, record) for info in members):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(record.group, signal.SIGKILL)
            killed += members
            log.warning(
                "killed process group %d (%d process(es)) left by job %s",
                record.group,
                len(members),
                record.job,
            )
    _kill_carriers(record, table, killed)
    if record.group is None and record.container is None:
        # The leader may have been between vfork and exec when the runner died, its
        # environment still the runner's, and unarmed (``executors/group.py``): look again
        # once that instant is surely over.
        pause(clock, _EXEC_WINDOW)
        table = [info for info in procfs.processes() if not info.ended and info.pid != os.getpid()]
        _kill_carriers(record, table, killed)
    _wait_gone(killed, clock)
    return stopped + len(killed)


def _kill_carriers(
    record: JobRecord, table: list[procfs.ProcessInfo], killed: list[procfs.ProcessInfo]
) -> None:
    for info in table:
        if info not in killed and procfs.carries(info.pid, JOB_VARIABLE, str(record.job)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(info.pid, signal.SIGKILL)
            killed.append(info)
            log.warning("killed process %d left by job %s", info.pid, record.job)


def _is_the_jobs(info: procfs.ProcessInfo, record: JobRecord) -> bool:
    if info.pid == record.group and info.start == record.leader_start:
        return True
    return procfs.carries(info.pid, JOB_VARIABLE, str(record.job))


def _wait_gone(killed: list[procfs.ProcessInfo], clock: ThreadClock) -> None:
    deadline = clock.monotonic() + _STOP_WAIT
    while True:
        left = [info for info in killed if _alive(info)]
        if not left:
            return
        if clock.monotonic() >= deadline:
            log.error("process(es) %s did not end after SIGKILL", [info.pid for info in left])
            return
        pause(clock, _POLL)  # the kernel offers no notification for another's process ending


def _alive(info: procfs.ProcessInfo) -> bool:
    now = procfs.process(info.pid)
    return now is not None and now.start == info.start and not now.ended


def _remove_container(runtime: tuple[str, ...], container: str) -> bool:
    """True if the container was still running."""
    if not runtime:
        return False
    existed = _runtime(runtime, "kill", container, "KILL")
    _runtime(runtime, "delete", "--force", container)
    return existed


def _runtime(runtime: tuple[str, ...], *args: str) -> bool:
    try:
        result = subprocess.run(
            [*runtime, *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_RUNTIME_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.error("%s %s failed: %s", runtime[0], args[0], exc)
        return False
    return result.returncode == 0
