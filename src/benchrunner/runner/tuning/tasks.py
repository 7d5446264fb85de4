"""Moving every task between cgroup v1 cpusets, through their ``tasks`` files (one thread id
per write), for the v1 form of the job cores' partition.

A thread the kernel keeps where it is (a kernel thread bound to one CPU answers EINVAL) is left
and counted; one that ended meanwhile (ESRCH) is gone and not counted. Tasks forked during a
pass are caught by the next one.
"""

from __future__ import annotations

import errno
import logging
from dataclasses import dataclass, field

from benchrunner.runner.tuning.cpulist import parse_cpulist
from benchrunner.runner.tuning.hostfs import HostFs

log = logging.getLogger(__name__)

_PASSES = 8


@dataclass
class Moved:
    moved: set[str] = field(default_factory=set)
    refused: set[str] = field(default_factory=set)
    """Threads the kernel would not move (bound to a CPU)."""


def task_ids(fs: HostFs, cgroup: str) -> list[str]:
    """The thread ids in ``cgroup``'s ``tasks`` file; none if it is absent."""
    return [line for line in (fs.read(f"{cgroup}/tasks") or "").split() if line.isdigit()]


def affinities(fs: HostFs, cgroup: str) -> dict[str, str]:
    """Thread id -> allowed CPU list, for the threads of ``cgroup`` not allowed all its CPUs
    (those a move to another v1 cpuset and back would not give back their own)."""
    try:
        everywhere = parse_cpulist(
            fs.read(f"{cgroup}/cpuset.effective_cpus") or fs.read(f"{cgroup}/cpuset.cpus") or ""
        )
    except ValueError:
        everywhere = frozenset()
    found: dict[str, str] = {}
    for task in task_ids(fs, cgroup):
        allowed = _allowed(fs, task)
        if allowed is None:
            continue
        try:
            if parse_cpulist(allowed) != everywhere:
                found[task] = allowed
        except ValueError:
            continue
    return found


def move_all(fs: HostFs, source: str, target: str) -> Moved:
    """Move every task of ``source`` into ``target`` that the kernel lets go. Raises OSError
    for any other refusal (the target cannot take tasks)."""
    result = Moved()
    for _ in range(_PASSES):
        waiting = [task for task in task_ids(fs, source) if task not in result.refused]
        if not waiting:
            break
        for task in waiting:
            try:
                fs.write(f"{target}/tasks", task)
            except OSError as exc:
                if exc.errno == errno.ESRCH:
                    continue
                if exc.errno != errno.EINVAL:
                    raise
                result.refused.add(task)
            else:
                result.moved.add(task)
    return result


def move_back(fs: HostFs, home: str, cgroups: tuple[str, ...], affinity: dict[str, str]) -> None:
    """Every task of ``cgroups`` back into ``home`` and the recorded ``affinity`` of those
    moved given back. Raises OSError naming what is still left out of ``home``."""
    moved: set[str] = set()
    for cgroup in cgroups:
        moved |= move_all(fs, cgroup, home).moved
    left = [task for cgroup in cgroups for task in task_ids(fs, cgroup)]
    for task in sorted(moved & affinity.keys(), key=int):
        try:
            fs.set_affinity(int(task), parse_cpulist(affinity[task]))
        except (OSError, ValueError) as exc:
            log.info("thread %s keeps the cpuset's CPUs, not its own: %s", task, exc)
    if left:
        raise OSError(errno.EBUSY, f"{len(left)} task(s) would not move back to /{home}")


def _allowed(fs: HostFs, task: str) -> str | None:
    for line in (fs.read(f"proc/{task}/status") or "").splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":", 1)[1].strip()
    return None
