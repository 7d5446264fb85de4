"""Preflight checks that watch the host for a moment: steal time (a hypervisor running someone
else on our virtual CPU) and other processes busy on the job cores. Two snapshots of
``/proc/stat`` and ``/proc/PID/stat``, ``interval`` seconds apart."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from benchrunner.runner.tuning.check import Check, Status, unreadable
from benchrunner.runner.tuning.cpulist import parse_cpulist
from benchrunner.runner.tuning.hostfs import HostFs

STEAL_LIMIT = 0.01
"""More than 1 % of a job core's time stolen by the hypervisor: the host is not fit."""
BUSY_LIMIT = 0.05
"""A process using more than 5 % of a core on the job cores is a competitor."""
_SHOWN = 5


@dataclass(frozen=True)
class CoreTimes:
    total: int
    steal: int


@dataclass(frozen=True)
class Snapshot:
    cores: dict[int, CoreTimes]
    process_ticks: dict[int, int]


def snapshot(fs: HostFs) -> Snapshot:
    cores: dict[int, CoreTimes] = {}
    for line in (fs.read("proc/stat") or "").splitlines():
        name, *values = line.split()
        if not name.startswith("cpu") or name == "cpu" or not name[3:].isdigit():
            continue
        ticks = [int(value) for value in values]
        # user nice system idle iowait irq softirq steal guest guest_nice: guest time is
        # already inside user time.
        cores[int(name[3:])] = CoreTimes(sum(ticks[:8]), ticks[7] if len(ticks) > 7 else 0)
    ticks_by_pid: dict[int, int] = {}
    for name in fs.names("proc"):
        if name.isdigit() and (used := _process_ticks(fs, name)) is not None:
            ticks_by_pid[int(name)] = used
    return Snapshot(cores, ticks_by_pid)


def _process_ticks(fs: HostFs, pid: str) -> int | None:
    raw = fs.read(f"proc/{pid}/stat")
    if raw is None:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    try:
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (IndexError, ValueError):
        return None


def sample(fs: HostFs, interval: float, wait: Callable[[float], None]) -> tuple[Snapshot, Snapshot]:
    before = snapshot(fs)
    wait(interval)
    return before, snapshot(fs)


def steal(before: Snapshot, after: Snapshot, cores: frozenset[int]) -> Check:
    what = "steal time: the hypervisor ran another guest on the job cores' virtual CPUs"
    expected = f"under {STEAL_LIMIT:.0%}"
    fix = "run on bare metal or a dedicated host"
    shares: dict[int, float] = {}
    for core in sorted(cores):
        first, last = before.cores.get(core), after.cores.get(core)
        if first is None or last is None or last.total <= first.total:
            continue
        shares[core] = (last.steal - first.steal) / (last.total - first.total)
    if not shares:
        why = (
            "no clock tick passed on the job cores during the sample"
            if any(core in after.cores for core in cores)
            else "/proc/stat has no line for the job cores"
        )
        return unreadable("steal", what, expected, fix, why)
    worst = max(shares.values())
    actual = ", ".join(f"cpu{core} {share:.1%}" for core, share in shares.items())
    return Check(
        "steal", what, actual, expected, fix, Status.BAD if worst > STEAL_LIMIT else Status.OK
    )


def busy_processes(
    fs: HostFs,
    before: Snapshot,
    after: Snapshot,
    interval: float,
    cores: frozenset[int],
    ignored: frozenset[int],
) -> Check:
    what = "other processes using the job cores"
    expected = f"none above {BUSY_LIMIT:.0%} of a core"
    fix = "stop them, or pin them to the housekeeping cores (taskset -pc HOUSEKEEPING PID)"
    if not after.process_ticks:
        return unreadable("busy_processes", what, expected, fix, "/proc lists no process")
    tick = os.sysconf("SC_CLK_TCK")
    busy: list[tuple[float, int, str]] = []
    for pid, ticks in after.process_ticks.items():
        if pid in ignored or pid not in before.process_ticks:
            continue
        share = (ticks - before.process_ticks[pid]) / tick / interval
        if share <= BUSY_LIMIT or not _may_run_on(fs, pid, cores):
            continue
        busy.append((share, pid, fs.read(f"proc/{pid}/comm") or "?"))
    if not busy:
        return Check("busy_processes", what, "none", expected, fix, Status.OK)
    busy.sort(reverse=True)
    shown = ", ".join(f"{comm} (pid {pid}) {share:.0%}" for share, pid, comm in busy[:_SHOWN])
    more = f" and {len(busy) - _SHOWN} more" if len(busy) > _SHOWN else ""
    return Check("busy_processes", what, shown + more, expected, fix, Status.BAD)


def _may_run_on(fs: HostFs, pid: int, cores: frozenset[int]) -> bool:
    for line in (fs.read(f"proc/{pid}/status") or "").splitlines():
        if line.startswith("Cpus_allowed_list:"):
            try:
                return bool(parse_cpulist(line.split(":", 1)[1]) & cores)
            except ValueError:
                return True
    return True  # unknown affinity: assume it may
