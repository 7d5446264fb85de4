"""The reversible host settings ``runner up --tune`` applies, each planned as a list of
``Change``s to kernel files (or ``Blocked`` with the reason it cannot be done here).

What is *not* here, because it is held by the runner process and ends with it, so nothing needs
restoring after a crash: C-states (``dma_latency.py``) and ASLR, which is turned off for the
job's processes only through the personality flag they inherit (``personality.py``) rather than
through the host-wide ``kernel.randomize_va_space``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from benchrunner.runner.tuning.cpulist import (
    format_cpulist,
    format_cpumask,
    parse_cpulist,
    parse_cpumask,
)
from benchrunner.runner.tuning.hostfs import HostFs
from benchrunner.runner.tuning.knobs import CPU, THP, cgroup1_cpuset_mounts, cgroup2_mounts

PARTITION = "benchrunner-jobs"
"""The cpuset holding the job cores, directly under the cgroup2 (or v1 cpuset) mount."""
HOUSEKEEPING = "benchrunner-housekeeping"
"""On cgroup v1, the cpuset of the other cores, where every task the root held is moved."""


class Form(StrEnum):
    """How a file's current value is read and compared with the wanted one."""

    TEXT = "text"
    MENU = "menu"  # "always [madvise] never": the bracketed choice
    CPULIST = "cpulist"
    CPUMASK = "cpumask"
    DIRECTORY = "directory"  # created by the change, removed by the restore


@dataclass(frozen=True)
class Change:
    path: str
    value: str
    form: Form = Form.TEXT
    undo: str | None = None
    """What restores it; None: the value found before the change."""
    required: bool = True
    """False: the kernel may refuse this one (an IRQ bound to its core) without the setting
    counting as not applied."""
    recorded: bool = True
    """False: inside something the restore removes anyway (a file of the partition)."""


@dataclass(frozen=True)
class MoveTasks:
    """Move every task of the cgroup v1 directory ``source`` that the kernel lets go into
    ``target``; the restore moves the tasks of ``back_from`` into ``source`` again and gives
    the moved threads back their own CPU affinity (a move to a v1 cpuset resets it)."""

    source: str
    target: str
    back_from: tuple[str, ...]


@dataclass(frozen=True)
class Blocked:
    reason: str


@dataclass(frozen=True)
class CoreSplit:
    job: frozenset[int]
    housekeeping: frozenset[int]


Step = Change | MoveTasks
Plan = list[Step] | Blocked


def governor(fs: HostFs, cores: CoreSplit) -> Plan:
    changes: list[Step] = []
    for core in sorted(cores.job):
        path = f"{CPU}/cpu{core}/cpufreq/scaling_governor"
        if not fs.exists(path):
            return Blocked(f"/{CPU}/cpu{core}/cpufreq is absent (no cpufreq driver; a VM?)")
        changes.append(Change(path, "performance"))
    return changes


def turbo(fs: HostFs, cores: CoreSplit) -> Plan:
    if fs.exists(f"{CPU}/intel_pstate/no_turbo"):
        return [Change(f"{CPU}/intel_pstate/no_turbo", "1")]
    if fs.exists(f"{CPU}/cpufreq/boost"):
        return [Change(f"{CPU}/cpufreq/boost", "0")]
    return Blocked(f"neither /{CPU}/intel_pstate/no_turbo nor /{CPU}/cpufreq/boost exists")


def smt(fs: HostFs, cores: CoreSplit) -> Plan:
    control = fs.read(f"{CPU}/smt/control")
    if control is None:
        return Blocked(f"/{CPU}/smt/control is absent")
    if control in ("off", "forceoff", "notsupported", "notimplemented"):
        return []  # nothing to turn off, or firmware decides
    return [Change(f"{CPU}/smt/control", "off")]


def transparent_hugepages(fs: HostFs, cores: CoreSplit) -> Plan:
    if not fs.exists(THP):
        return Blocked(f"/{THP} is absent")
    return [Change(THP, "never", Form.MENU)]


def irq_affinity(fs: HostFs, cores: CoreSplit) -> Plan:
    if not cores.housekeeping:
        return Blocked("no housekeeping core to move interrupts to")
    if not fs.exists("proc/irq/default_smp_affinity"):
        return Blocked("/proc/irq/default_smp_affinity is absent")
    changes: list[Step] = [
        Change("proc/irq/default_smp_affinity", format_cpumask(cores.housekeeping), Form.CPUMASK)
    ]
    for irq in fs.names("proc/irq"):
        path = f"proc/irq/{irq}/smp_affinity_list"
        if irq.isdigit() and fs.exists(path):
            housekeeping = format_cpulist(cores.housekeeping)
            changes.append(Change(path, housekeeping, Form.CPULIST, required=False))
    return changes


def workqueues(fs: HostFs, cores: CoreSplit) -> Plan:
    path = "sys/devices/virtual/workqueue/cpumask"
    if not cores.housekeeping:
        return Blocked("no housekeeping core to move unbound workqueues to")
    if not fs.exists(path):
        return Blocked(f"/{path} is absent")
    return [Change(path, format_cpumask(cores.housekeeping), Form.CPUMASK)]


def cpuset_partition(fs: HostFs, cores: CoreSplit) -> Plan:
    if not cores.housekeeping:
        return Blocked("no housekeeping core left outside a partition")
    v2 = _cpuset_partition_v2(fs, cores)
    if v2 is not None:
        return v2
    v1_mounts = cgroup1_cpuset_mounts(fs)
    if v1_mounts:
        return _cpuset_partition_v1(fs, cores, v1_mounts[0])
    return Blocked("no cgroup v2 mount offers the cpuset controller, nor is cgroup v1's mounted")


def _cpuset_partition_v1(fs: HostFs, cores: CoreSplit, mount: str) -> Plan:
    # v1 has no partitions: the job cores get a cpuset of their own, every task the kernel
    # lets go moves to a cpuset of the other cores, and the root stops balancing load so that
    # each of the two is a scheduler domain of its own (Documentation/cgroup-v1/cpusets).
    mems = fs.read(f"{mount}/cpuset.mems")
    if not mems:
        return Blocked(f"/{mount}/cpuset.mems cannot be read")
    jobs, housekeeping = f"{mount}/{PARTITION}", f"{mount}/{HOUSEKEEPING}"
    return [
        Change(jobs, "", Form.DIRECTORY),
        Change(f"{jobs}/cpuset.cpus", format_cpulist(cores.job), Form.CPULIST, recorded=False),
        Change(f"{jobs}/cpuset.mems", mems, recorded=False),
        # Refused while a sibling cpuset shares the cores; the cpus are the job's alone anyway.
        Change(f"{jobs}/cpuset.cpu_exclusive", "1", required=False, recorded=False),
        Change(housekeeping, "", Form.DIRECTORY),
        Change(
            f"{housekeeping}/cpuset.cpus",
            format_cpulist(cores.housekeeping),
            Form.CPULIST,
            recorded=False,
        ),
        Change(f"{housekeeping}/cpuset.mems", mems, recorded=False),
        MoveTasks(mount, housekeeping, back_from=(housekeeping, jobs)),
        Change(f"{mount}/cpuset.sched_load_balance", "0"),
    ]


def _cpuset_partition_v2(fs: HostFs, cores: CoreSplit) -> Plan | None:
    for mount in cgroup2_mounts(fs):
        controllers = (fs.read(f"{mount}/cgroup.controllers") or "").split()
        if "cpuset" not in controllers:
            continue
        group = f"{mount}/{PARTITION}"
        changes: list[Step] = []
        if "cpuset" not in (fs.read(f"{mount}/cgroup.subtree_control") or "").split():
            changes.append(Change(f"{mount}/cgroup.subtree_control", "+cpuset", undo="-cpuset"))
        changes += [
            Change(group, "", Form.DIRECTORY),
            Change(f"{group}/cpuset.cpus", format_cpulist(cores.job), recorded=False),
            Change(f"{group}/cpuset.cpus.partition", "isolated", recorded=False),
        ]
        return changes
    return None


SETTINGS: tuple[tuple[str, Callable[[HostFs, CoreSplit], Plan]], ...] = (
    ("governor", governor),
    ("turbo", turbo),
    ("smt", smt),
    ("thp", transparent_hugepages),
    ("irq_affinity", irq_affinity),
    ("workqueues", workqueues),
    ("cpuset_partition", cpuset_partition),
)


def current(fs: HostFs, change: Change) -> str | None:
    """The value ``change`` would replace, as the restore must write it back."""
    if change.form is Form.MENU:
        return fs.selected_value(change.path)
    return fs.read(change.path)


def already(found: str, change: Change) -> bool:
    try:
        if change.form is Form.CPULIST:
            return parse_cpulist(found) == parse_cpulist(change.value)
        if change.form is Form.CPUMASK:
            return parse_cpumask(found) == parse_cpumask(change.value)
    except ValueError:
        return False
    return found == change.value
