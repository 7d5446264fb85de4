"""A host's /sys, /proc and /dev as a directory tree, for the tuning code's injectable root.

``bare_metal`` builds what an untuned bare-metal server shows; ``FakeKernelFs`` adds the two
things a plain directory cannot do the way the kernel does: a cgroup directory that comes with
its interface files, and ``cgroup.subtree_control``'s ``+cpuset``/``-cpuset`` grammar.
``DeniedFs`` refuses to read chosen files, as a kernel or LSM refuses a file to a process (the
tests run as root, whom a file's mode cannot refuse).
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from pathlib import Path

from benchrunner.runner.tuning.hostfs import HostFs

CORES = 4
_CGROUP_FILES = ("cpuset.cpus", "cpuset.cpus.partition", "cgroup.procs")


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
    def make_directory(self, relative: str) -> None:
        super().make_directory(relative)
        for name in _CGROUP_FILES:
            (self.path(relative) / name).write_text("member" if "partition" in name else "")

    def remove_directory(self, relative: str) -> None:
        for name in _CGROUP_FILES:
            (self.path(relative) / name).unlink(missing_ok=True)
        super().remove_directory(relative)

    def write(self, relative: str, value: str) -> None:
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
