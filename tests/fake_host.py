"""A host's /sys, /proc and /dev as a directory tree, for the tuning code's injectable root.

``bare_metal`` builds what an untuned bare-metal server shows (``cgroup_v1`` turns its cgroups
into a v1 hybrid layout); ``FakeKernelFs`` adds what a plain directory cannot do the way the
kernel does: a cgroup directory that comes with its interface files, ``cgroup.subtree_control``'s
``+cpuset``/``-cpuset`` grammar, and v1 ``tasks`` files (a thread written to one leaves the
other cpusets and is allowed the new one's CPUs; a kernel thread bound to a CPU is refused).
``DeniedFs`` refuses to read chosen files, as a kernel or LSM refuses a file to a process (the
tests run as root, whom a file's mode cannot refuse).
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from pathlib import Path

from benchrunner.runner.tuning.cpulist import format_cpulist
from benchrunner.runner.tuning.hostfs import HostFs

CORES = 4
_CGROUP_FILES = ("cpuset.cpus", "cpuset.cpus.partition", "cgroup.procs")
_CGROUP1_FILES = {
    "cpuset.cpus": "",
    "cpuset.mems": "",
    "cpuset.cpu_exclusive": "0",
    "cpuset.sched_load_balance": "1",
    "tasks": "",
    "cgroup.procs": "",
}
CPUSET1 = "sys/fs/cgroup/cpuset"


def bare_metal(root: Path, cores: int = CORES) -> dict[str, str]:
    """Write an untuned bare-metal host under ``root``; returns the files written."""
    last = cores - 1
    files = {
        "sys/devices/system/cpu/online": f"0-{last}",
        "sys/devices/system/cpu/cpufreq/boost": "1",
        "sys/devices/system/cpu/smt/control": "on",
        "sys/devices/system/cpu/smt/active": "1",
        "sys/devices/system/cpu/isolated": "",
        "sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never",
        "sys/kernel/mm/ksm/run": "0",
        "sys/devices/virtual/workqueue/cpumask": format(2**cores - 1, "x"),
        "sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory pids",
        "sys/fs/cgroup/cgroup.subtree_control": "cpu memory",
        "proc/self/mounts": "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n",
        "proc/sys/kernel/randomize_va_space": "2",
        "proc/sys/kernel/nmi_watchdog": "1",
        "proc/sys/kernel/numa_balancing": "1",
        "proc/swaps": "Filename\tType\tSize\tUsed\tPriority\n/dev/sda2 partition 1024 0 -2\n",
        "proc/cpuinfo": "processor\t: 0\nflags\t\t: fpu vme de pse\n",
        "proc/irq/default_smp_affinity": format(2**cores - 1, "x"),
        "proc/irq/24/smp_affinity_list": f"0-{last}",
        "proc/irq/25/smp_affinity_list": f"0-{last}",
        "proc/stat": "cpu  0 0 0 0 0 0 0 0 0 0\n"
        + "".join(f"cpu{n} 100 0 50 1000 0 0 0 0 0 0\n" for n in range(cores)),
        "proc/100/comm": "irqbalance",
        "proc/100/stat": "100 (irqbalance) S 1 100 100 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5",
        "proc/100/status": f"Name:\tirqbalance\nCpus_allowed_list:\t0-{last}\n",
        "dev/cpu_dma_latency": "",
    }
    for core in range(cores):
        files[f"sys/devices/system/cpu/cpu{core}/cpufreq/scaling_governor"] = "powersave"
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return files


def cgroup_v1(root: Path, threads: dict[int, str], cores: int = CORES) -> None:
    """Make the host under ``root`` a cgroup v1 hybrid (the cpuset controller on its own v1
    mount, cgroup2 without it) whose root cpuset holds ``threads`` (id -> allowed CPU list)."""
    last = cores - 1
    files = {
        "proc/self/mounts": "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nosuid 0 0\n"
        f"cgroup /{CPUSET1} cgroup rw,nosuid,cpuset 0 0\n",
        "sys/fs/cgroup/unified/cgroup.controllers": "",
        "sys/fs/cgroup/unified/cgroup.subtree_control": "",
        f"{CPUSET1}/cpuset.cpus": f"0-{last}",
        f"{CPUSET1}/cpuset.effective_cpus": f"0-{last}",
        f"{CPUSET1}/cpuset.mems": "0",
        f"{CPUSET1}/cpuset.cpu_exclusive": "1",
        f"{CPUSET1}/cpuset.sched_load_balance": "1",
        f"{CPUSET1}/tasks": "".join(f"{thread}\n" for thread in threads),
    }
    for thread, allowed in threads.items():
        files[f"proc/{thread}/status"] = f"Name:\tt{thread}\nCpus_allowed_list:\t{allowed}\n"
    for name in ("cgroup.controllers", "cgroup.subtree_control"):
        (root / "sys/fs/cgroup" / name).unlink()
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def snapshot_tree(root: Path) -> dict[str, str]:
    """Every file and directory under ``root`` with its content (directories as ``<dir>``)."""
    found: dict[str, str] = {}
    for directory, subdirectories, names in os.walk(root):
        for name in subdirectories:
            found[os.path.relpath(Path(directory, name), root)] = "<dir>"
        for name in names:
            path = Path(directory, name)
            found[os.path.relpath(path, root)] = path.read_text(errors="replace")
    return found


def host_files(root: Path) -> dict[str, str]:
    """The host's kernel files: the tuning's own state and lock (``run/``) and the held
    C-state device (written, never restored: the kernel keeps no value in it) left out."""
    return {
        path: text
        for path, text in snapshot_tree(root).items()
        if not path.startswith("run") and path != "dev/cpu_dma_latency"
    }


@dataclass(frozen=True)
class FakeKernelFs(HostFs):
    bound: frozenset[int] = frozenset()
    """Kernel threads bound to a CPU: a v1 cpuset refuses them (EINVAL)."""

    def make_directory(self, relative: str) -> None:
        super().make_directory(relative)
        if self._v1(relative):
            for name, text in _CGROUP1_FILES.items():
                (self.path(relative) / name).write_text(text)
            return
        for name in _CGROUP_FILES:
            (self.path(relative) / name).write_text("member" if "partition" in name else "")

    def remove_directory(self, relative: str) -> None:
        if self._v1(relative):
            if self.read(f"{relative}/tasks"):
                raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(self.path(relative)))
            names: tuple[str, ...] = tuple(_CGROUP1_FILES)
        else:
            names = _CGROUP_FILES
        for name in names:
            (self.path(relative) / name).unlink(missing_ok=True)
        super().remove_directory(relative)

    def set_affinity(self, task: int, cores: frozenset[int]) -> None:
        self._allow(str(task), format_cpulist(cores))

    def _v1(self, relative: str) -> bool:
        return relative.startswith(CPUSET1)

    def _allow(self, task: str, cpus: str) -> None:
        status = self.path(f"proc/{task}/status")
        if not status.exists():
            raise ProcessLookupError(errno.ESRCH, os.strerror(errno.ESRCH))
        lines = [
            f"Cpus_allowed_list:\t{cpus}" if line.startswith("Cpus_allowed_list:") else line
            for line in status.read_text().splitlines()
        ]
        status.write_text("\n".join(lines) + "\n")

    def _attach(self, tasks_file: str, task: str) -> None:
        if int(task) in self.bound:
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), tasks_file)
        cgroup = tasks_file.removesuffix("/tasks")
        self._allow(task, self.read(f"{cgroup}/cpuset.cpus") or "")
        for other in [CPUSET1, *(f"{CPUSET1}/{name}" for name in self.names(CPUSET1))]:
            members = (self.read(f"{other}/tasks") or "").split()
            if task in members:
                members.remove(task)
                self.path(f"{other}/tasks").write_text("".join(f"{m}\n" for m in members))
        with self.path(tasks_file).open("a") as handle:
            handle.write(f"{task}\n")

    def write(self, relative: str, value: str) -> None:
        if self._v1(relative) and relative.endswith("/tasks"):
            self._attach(relative, value.strip())
            return
        menu = (self.read(relative) or "").replace("[", "").replace("]", "").split()
        if "[" in (self.read(relative) or "") and value in menu:
            # A menu file ("always [madvise] never") shows the choice in brackets.
            super().write(relative, " ".join(f"[{c}]" if c == value else c for c in menu))
            return
        if not relative.endswith("cgroup.subtree_control"):
            super().write(relative, value)
            return
        enabled = (self.read(relative) or "").split()
        name = value[1:]
        if value.startswith("+") and name not in enabled:
            enabled.append(name)
        elif value.startswith("-") and name in enabled:
            enabled.remove(name)
        super().write(relative, " ".join(enabled))


@dataclass(frozen=True)
class DeniedFs(HostFs):
    denied: frozenset[str] = field(default_factory=frozenset)
    """Relative paths that exist and raise EACCES when read."""

    def read_present(self, relative: str) -> str | None:
        if relative in self.denied and self.path(relative).exists():
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self.path(relative)))
        return super().read_present(relative)
