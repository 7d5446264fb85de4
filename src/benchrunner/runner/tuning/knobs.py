"""Preflight checks of kernel settings: each reads a few files through ``HostFs`` and says
what it found. A missing file is "cannot read" unless its absence itself answers the question
(a kernel built without KSM has no KSM to turn off); a file that exists but cannot be read
(no permission) is always "cannot read", with the error."""

from __future__ import annotations

from collections.abc import Callable

from benchrunner.runner.tuning.check import Check, Status, unreadable
from benchrunner.runner.tuning.cpulist import format_cpulist, parse_cpulist
from benchrunner.runner.tuning.hostfs import HostFs

CPU = "sys/devices/system/cpu"
THP = "sys/kernel/mm/transparent_hugepage/enabled"
TUNE = "benchrunner runner up --tune"


def governor(fs: HostFs, cores: frozenset[int]) -> Check:
    what = "CPU frequency governor of the job cores"
    fix = f"cpupower frequency-set -g performance (or {TUNE})"
    found = {core: fs.read(f"{CPU}/cpu{core}/cpufreq/scaling_governor") for core in cores}
    readable = {core: value for core, value in found.items() if value is not None}
    if not readable:
        first = min(cores, default=0)
        why = (
            f"/{CPU}/cpu{first}/cpufreq is absent (no cpufreq driver: in a VM the host "
            "decides the frequency)"
            if not fs.exists(f"{CPU}/cpu{first}/cpufreq")
            else why_unreadable(fs, f"{CPU}/cpu{first}/cpufreq/scaling_governor")
        )
        return unreadable("governor", what, "performance", fix, why)
    slow = {core: value for core, value in readable.items() if value != "performance"}
    actual = ", ".join(f"cpu{core}={value}" for core, value in sorted(readable.items()))
    return Check("governor", what, actual, "performance", fix, Status.BAD if slow else Status.OK)


def turbo(fs: HostFs, cores: frozenset[int]) -> Check:
    what = "turbo/boost (frequency above nominal, varies with temperature and load)"
    no_turbo = fs.read(f"{CPU}/intel_pstate/no_turbo")
    if no_turbo is not None:
        on = no_turbo == "0"
        fix = f"echo 1 > /{CPU}/intel_pstate/no_turbo (or {TUNE})"
        actual = "on (intel_pstate no_turbo=0)" if on else "off (intel_pstate no_turbo=1)"
        return Check("turbo", what, actual, "off", fix, Status.BAD if on else Status.OK)
    boost = fs.read(f"{CPU}/cpufreq/boost")
    if boost is not None:
        on = boost == "1"
        fix = f"echo 0 > /{CPU}/cpufreq/boost (or {TUNE})"
        actual = "on (cpufreq boost=1)" if on else "off (cpufreq boost=0)"
        return Check("turbo", what, actual, "off", fix, Status.BAD if on else Status.OK)
    fix = f"echo 0 > /{CPU}/cpufreq/boost (or {TUNE})"
    for path in (f"{CPU}/intel_pstate/no_turbo", f"{CPU}/cpufreq/boost"):
        if fs.exists(path):
            return unreadable("turbo", what, "off", fix, why_unreadable(fs, path))
    return unreadable(
        "turbo",
        what,
        "off",
        fix,
        f"neither /{CPU}/intel_pstate/no_turbo nor /{CPU}/cpufreq/boost exists",
    )


def smt(fs: HostFs, cores: frozenset[int]) -> Check:
    what = "SMT (hyper-threading): a sibling thread shares the job core's pipeline"
    fix = f"echo off > /{CPU}/smt/control (or {TUNE})"
    control = fs.read(f"{CPU}/smt/control")
    if control is None:
        return unreadable("smt", what, "off", fix, why_unreadable(fs, f"{CPU}/smt/control"))
    if control in ("off", "forceoff", "notsupported", "notimplemented"):
        return Check("smt", what, control, "off", fix, Status.OK)
    active = fs.read(f"{CPU}/smt/active")
    status = Status.OK if active == "0" else Status.WARN
    return Check("smt", what, f"{control} (active={active})", "off", fix, status)


def aslr(fs: HostFs, cores: frozenset[int]) -> Check:
    what = "ASLR: address layout randomized on every start (kernel.randomize_va_space)"
    fix = (
        f"{TUNE} (turns it off for the job's processes only), or sysctl kernel.randomize_va_space=0"
    )
    path = "proc/sys/kernel/randomize_va_space"
    value = fs.read(path)
    if value is None:
        return unreadable("aslr", what, "0", fix, why_unreadable(fs, path))
    return Check("aslr", what, value, "0", fix, Status.OK if value == "0" else Status.WARN)


def irqbalance(fs: HostFs, cores: frozenset[int]) -> Check:
    what = "irqbalance daemon: moves interrupts onto any core, the job's included"
    fix = "systemctl stop irqbalance"
    listed = [name for name in fs.names("proc") if name.isdigit()]
    if not listed:
        return unreadable("irqbalance", what, "not running", fix, "/proc lists no process")
    pids = [pid for pid in listed if fs.read(f"proc/{pid}/comm") == "irqbalance"]
    actual = f"running (pid {', '.join(pids)})" if pids else "not running"
    return Check("irqbalance", what, actual, "not running", fix, Status.WARN if pids else Status.OK)


def irq_affinity(fs: HostFs, cores: frozenset[int]) -> Check:
    what = "interrupts allowed on the job cores"
    expected = "none (all on housekeeping cores)"
    fix = f"echo HOUSEKEEPING > /proc/irq/N/smp_affinity_list for each N (or {TUNE})"
    irqs = [name for name in fs.names("proc/irq") if name.isdigit()]
    if not irqs:
        return unreadable("irq_affinity", what, expected, fix, "/proc/irq lists no interrupt")
    on_job_cores: list[str] = []
    for irq in irqs:
        text = fs.read(f"proc/irq/{irq}/smp_affinity_list")
        try:
            allowed = parse_cpulist(text) if text is not None else frozenset()
        except ValueError:
            continue
        if allowed & cores:
            on_job_cores.append(irq)
    if not on_job_cores:
        return Check("irq_affinity", what, "none", expected, fix, Status.OK)
    shown = ", ".join(on_job_cores[:8]) + (" ..." if len(on_job_cores) > 8 else "")
    actual = f"{len(on_job_cores)} of {len(irqs)} IRQs ({shown})"
    return Check("irq_affinity", what, actual, expected, fix, Status.WARN)


def isolation(fs: HostFs, cores: frozenset[int]) -> Check:
    what = "job cores isolated from the scheduler (isolcpus, nohz_full, cpuset partition)"
    expected = f"cores {format_cpulist(cores)} isolated"
    fix = (
        f"boot with isolcpus={format_cpulist(cores)} nohz_full={format_cpulist(cores)}, "
        f"or a cpuset partition ({TUNE})"
    )
    found: list[str] = []
    covered = False
    for name in ("isolated", "nohz_full"):
        text = fs.read(f"{CPU}/{name}")
        if text is None:
            continue
        listed = parse_cpulist(text)
        found.append(f"{name}={format_cpulist(listed) or 'none'}")
        covered |= bool(cores) and cores <= listed
    for partition, listed in cpuset_partitions(fs):
        found.append(f"partition {partition}={format_cpulist(listed)}")
        covered |= bool(cores) and cores <= listed
    v1_found, v1_covered = cpuset_v1_domains(fs, cores)
    found += v1_found
    covered |= v1_covered
    if not found:
        return unreadable(
            "isolation", what, expected, fix, f"/{CPU}/isolated and nohz_full are absent"
        )
    return Check(
        "isolation", what, "; ".join(found), expected, fix, Status.OK if covered else Status.WARN
    )


def why_unreadable(fs: HostFs, path: str) -> str:
    """Why ``fs.read(path)`` gave nothing: the file is absent, or the error reading it."""
    try:
        found = fs.read_present(path)
    except OSError as exc:
        return _error(path, exc)
    return f"/{path} is absent" if found is None else f"/{path} changed while read"


def _error(path: str, exc: OSError) -> str:
    return f"/{path} exists but cannot be read ({exc.strerror or exc})"


def cpuset_partitions(fs: HostFs) -> list[tuple[str, frozenset[int]]]:
    """cgroup v2 cpuset partitions (``root``/``isolated``) directly under the cgroup2 mount."""
    found: list[tuple[str, frozenset[int]]] = []
    for mount in cgroup2_mounts(fs):
        for name in fs.names(mount):
            kind = fs.read(f"{mount}/{name}/cpuset.cpus.partition")
            if kind is None or not kind.startswith(("root", "isolated")):
                continue
            text = fs.read(f"{mount}/{name}/cpuset.cpus.effective") or ""
            try:
                found.append((f"/{mount}/{name} ({kind})", parse_cpulist(text)))
            except ValueError:
                continue
    return found


def cgroup2_mounts(fs: HostFs) -> list[str]:
    """Where cgroup v2 is mounted, relative to the root (from ``/proc/self/mounts``)."""
    text = fs.read("proc/self/mounts") or ""
    return [
        fields[1].lstrip("/")
        for fields in (line.split() for line in text.splitlines())
        if len(fields) > 2 and fields[2] == "cgroup2"
    ]


def cgroup1_cpuset_mounts(fs: HostFs) -> list[str]:
    """Where a cgroup v1 hierarchy with the cpuset controller is mounted, relative to the root."""
    text = fs.read("proc/self/mounts") or ""
    return [
        fields[1].lstrip("/")
        for fields in (line.split() for line in text.splitlines())
        if len(fields) > 3 and fields[2] == "cgroup" and "cpuset" in fields[3].split(",")
    ]


def cpuset_v1_domains(fs: HostFs, cores: frozenset[int]) -> tuple[list[str], bool]:
    """What cgroup v1 cpusets say about ``cores``, and whether a cpuset gives them a scheduler
    domain of their own: the root cpuset does not balance load (``sched_load_balance`` 0), a
    top-level cpuset holds them, and no other cpuset that balances load shares one of them."""
    found: list[str] = []
    covered = False
    for mount in cgroup1_cpuset_mounts(fs):
        balanced = fs.read(f"{mount}/cpuset.sched_load_balance")
        if balanced != "0":
            found.append(f"v1 cpuset /{mount} balances load on all cores")
            continue
        children: dict[str, tuple[frozenset[int], bool]] = {}
        for name in fs.names(mount):
            text = fs.read(f"{mount}/{name}/cpuset.cpus")
            if text is None:
                continue
            try:
                listed = parse_cpulist(text)
            except ValueError:
                continue
            own = fs.read(f"{mount}/{name}/cpuset.sched_load_balance") != "0"
            children[name] = (listed, own)
        for name, (listed, _) in children.items():
            if not listed or not cores or not cores <= listed:
                continue
            sharing = sorted(
                other
                for other, (theirs, balances) in children.items()
                if other != name and balances and theirs & cores
            )
            if sharing:
                found.append(f"v1 cpuset /{mount}/{name} shares them with {', '.join(sharing)}")
            else:
                found.append(f"v1 cpuset /{mount}/{name}={format_cpulist(listed)}")
                covered = True
    return found, covered


def hypervisor(fs: HostFs, cores: frozenset[int]) -> Check:
    what = "a hypervisor underneath: virtual CPUs share physical cores with other guests"
    fix = "run on bare metal"
    kind = fs.read("sys/hypervisor/type")
    cpuinfo = fs.read("proc/cpuinfo")
    if kind is None and cpuinfo is None:
        return unreadable("hypervisor", what, "none", fix, "/proc/cpuinfo is absent")
    flagged = cpuinfo is not None and any(
        line.startswith("flags") and " hypervisor" in line for line in cpuinfo.splitlines()
    )
    if kind or flagged:
        actual = f"yes ({kind or 'cpuinfo flag hypervisor'})"
        return Check("hypervisor", what, actual, "none", fix, Status.BAD)
    return Check("hypervisor", what, "none detected", "none", fix, Status.OK)


def transparent_hugepages(fs: HostFs, cores: frozenset[int]) -> Check:
    what = "transparent huge pages: khugepaged compacts memory behind the benchmark's back"
    fix = f"echo never > /{THP} (or {TUNE})"
    value = fs.selected_value(THP)
    if value is None:
        return unreadable("thp", what, "never", fix, why_unreadable(fs, THP))
    return Check("thp", what, value, "never", fix, Status.OK if value == "never" else Status.WARN)


def swap(fs: HostFs, cores: frozenset[int]) -> Check:
    what = "swap: a page out mid-run turns a memory access into disk I/O"
    fix = "swapoff -a"
    text = fs.read("proc/swaps")
    if text is None:
        return unreadable("swap", what, "off", fix, why_unreadable(fs, "proc/swaps"))
    devices = [line.split()[0] for line in text.splitlines()[1:] if line.split()]
    if devices:
        return Check("swap", what, f"on ({', '.join(devices)})", "off", fix, Status.WARN)
    return Check("swap", what, "off", "off", fix, Status.OK)


def _off_unless_absent(
    name: str, what: str, path: str, fix: str
) -> Callable[[HostFs, frozenset[int]], Check]:
    """A check of a kernel switch that should read 0; a kernel without the file has none, but
    a file there that cannot be read leaves the switch unknown."""

    def check(fs: HostFs, cores: frozenset[int]) -> Check:
        try:
            value = fs.read_present(path)
        except OSError as exc:
            return unreadable(name, what, "0", fix, _error(path, exc))
        if value is None:
            return Check(name, what, "absent (not in this kernel)", "0", fix, Status.OK)
        return Check(name, what, value, "0", fix, Status.OK if value == "0" else Status.WARN)

    return check


nmi_watchdog = _off_unless_absent(
    "nmi_watchdog",
    "NMI watchdog: a periodic non-maskable interrupt on every core",
    "proc/sys/kernel/nmi_watchdog",
    "sysctl kernel.nmi_watchdog=0",
)
ksm = _off_unless_absent(
    "ksm",
    "KSM: ksmd scans memory to merge identical pages",
    "sys/kernel/mm/ksm/run",
    "echo 0 > /sys/kernel/mm/ksm/run",
)
numa_balancing = _off_unless_absent(
    "numa_balancing",
    "automatic NUMA balancing: page faults injected to migrate memory",
    "proc/sys/kernel/numa_balancing",
    "sysctl kernel.numa_balancing=0",
)


KNOB_CHECKS: tuple[Callable[[HostFs, frozenset[int]], Check], ...] = (
    governor,
    turbo,
    smt,
    aslr,
    irqbalance,
    irq_affinity,
    isolation,
    hypervisor,
    nmi_watchdog,
    transparent_hugepages,
    swap,
    ksm,
    numa_balancing,
)
