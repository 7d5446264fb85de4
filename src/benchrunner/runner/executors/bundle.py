"""The OCI runtime ``config.json`` of a sandboxed job: pure functions of the image config, the
job's overrides and the spec, so they are tested without a runtime.

Choices made here, within docs/decisions/executors.md:

- process: Docker's rules. A job ``entrypoint`` replaces the image's Entrypoint *and* drops the
  image's Cmd; a job ``cmd`` replaces the image's Cmd. Env: the image's, then the job's on top.
- network: ``spec.network`` false gives the container a new, empty network namespace (only
  ``lo``); true leaves it in the host's network namespace (no bridge, NAT or DNS set-up to
  maintain; the host's ``resolv.conf`` is bound read-only).
- capabilities: Docker's default set minus ``NET_RAW`` and ``MKNOD``; ``noNewPrivileges``.
- no ``process.rlimits``: the runner's own limits are inherited (root here lacks
  CAP_SYS_RESOURCE, so raising one would make the start fail).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

OCI_VERSION = "1.0.2"
HOSTNAME = "benchrunner"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

CAPABILITIES = (
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_AUDIT_WRITE",
    "CAP_SETFCAP",
)

# What runc's own default spec masks: kernel interfaces a container has no business reading.
MASKED_PATHS = (
    "/proc/acpi",
    "/proc/asound",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
)
READONLY_PATHS = (
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
)


class BundleError(ValueError):
    """The job cannot be expressed as a runtime config (no command, bad user...)."""


@dataclass(frozen=True)
class Process:
    args: list[str]
    env: list[str]
    cwd: str
    uid: int
    gid: int


@dataclass(frozen=True)
class Limits:
    """``cpus``: the cores of the job's cpuset; ``memory`` and ``pids``: hard limits."""

    cpus: frozenset[int]
    memory: int
    pids: int


def process_args(
    image_entrypoint: Sequence[str],
    image_cmd: Sequence[str],
    entrypoint: Sequence[str] | None,
    cmd: Sequence[str] | None,
) -> list[str]:
    """The container's argv by Docker's override rules; BundleError if it is empty."""
    if entrypoint is not None:
        args = [*entrypoint, *(cmd or [])]
    else:
        args = [*image_entrypoint, *(image_cmd if cmd is None else cmd)]
    if not args:
        raise BundleError("the image has no Entrypoint or Cmd and the job gives no command")
    return args


def process_env(image_env: Iterable[str], job_env: Mapping[str, str] | None) -> list[str]:
    """``NAME=value`` entries: the image's, overridden by the job's; PATH defaulted."""
    merged: dict[str, str] = {}
    for item in image_env:
        name, sep, value = item.partition("=")
        if sep and name:
            merged[name] = value
    for name, value in (job_env or {}).items():
        if not name or "=" in name or "\x00" in name or "\x00" in value:
            raise BundleError(f"env variable {name!r} is not a valid name=value pair")
        merged[name] = value
    merged.setdefault("PATH", DEFAULT_PATH)
    return [f"{name}={value}" for name, value in merged.items()]


def working_dir(image_working_dir: str) -> str:
    if not image_working_dir:
        return "/"
    path = PurePosixPath(image_working_dir)
    if not path.is_absolute():
        # Docker resolves a relative WorkingDir against /.
        path = PurePosixPath("/") / path
    return str(path)


def cpuset(cores: Iterable[int]) -> str:
    return ",".join(str(core) for core in sorted(cores))


def runtime_config(
    process: Process, limits: Limits, *, network: bool, cgroups_path: str
) -> dict[str, Any]:
    """The ``config.json`` of a bundle whose root filesystem is ``<bundle>/rootfs``."""
    namespaces = [{"type": kind} for kind in ("pid", "ipc", "uts", "mount")]
    if not network:
        namespaces.append({"type": "network"})
    return {
        "ociVersion": OCI_VERSION,
        "root": {"path": "rootfs", "readonly": False},
        "hostname": HOSTNAME,
        "process": {
            "terminal": False,
            "user": {"uid": process.uid, "gid": process.gid},
            "args": process.args,
            "env": process.env,
            "cwd": process.cwd,
            "capabilities": {
                kind: list(CAPABILITIES) for kind in ("bounding", "effective", "permitted")
            },
            "noNewPrivileges": True,
        },
        "mounts": _mounts(network),
        "linux": {
            "namespaces": namespaces,
            "cgroupsPath": cgroups_path,
            "resources": {
                "devices": [{"allow": False, "access": "rwm"}],
                "memory": {"limit": limits.memory, "swap": limits.memory},
                "cpu": {"cpus": cpuset(limits.cpus)},
                "pids": {"limit": limits.pids},
            },
            "maskedPaths": list(MASKED_PATHS),
            "readonlyPaths": list(READONLY_PATHS),
        },
    }


def _mounts(network: bool) -> list[dict[str, Any]]:
    mounts: list[dict[str, Any]] = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {
            "destination": "/dev",
            "type": "tmpfs",
            "source": "tmpfs",
            "options": ["nosuid", "strictatime", "mode=755", "size=65536k"],
        },
        {
            "destination": "/dev/pts",
            "type": "devpts",
            "source": "devpts",
            "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"],
        },
        {
            "destination": "/dev/shm",  # noqa: S108 (a path inside the container)
            "type": "tmpfs",
            "source": "shm",
            "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"],
        },
        {
            "destination": "/dev/mqueue",
            "type": "mqueue",
            "source": "mqueue",
            "options": ["nosuid", "noexec", "nodev"],
        },
    ]
    if network:
        # sysfs can only be mounted fresh in a network namespace of one's own.
        mounts += [
            {
                "destination": "/sys",
                "type": "none",
                "source": "/sys",
                "options": ["rbind", "nosuid", "noexec", "nodev", "ro"],
            },
            {
                "destination": "/etc/resolv.conf",
                "type": "bind",
                "source": "/etc/resolv.conf",
                "options": ["bind", "ro"],
            },
        ]
    else:
        mounts += [
            {
                "destination": "/sys",
                "type": "sysfs",
                "source": "sysfs",
                "options": ["nosuid", "noexec", "nodev", "ro"],
            },
            {
                "destination": "/sys/fs/cgroup",
                "type": "cgroup",
                "source": "cgroup",
                "options": ["nosuid", "noexec", "nodev", "relatime", "ro"],
            },
        ]
    return mounts


def resolve_user(user: str, passwd: str | None, group: str | None) -> tuple[int, int]:
    """The image's ``User`` (``name|uid[:group|gid]``, empty: root) as numeric uid and gid, names
    looked up in the image's own ``/etc/passwd`` and ``/etc/group`` texts (None: absent).
    BundleError for a name the image does not define."""
    if not user:
        return 0, 0
    name, _, group_name = user.partition(":")
    users = _colon_table(passwd, 2)
    if name.isdigit():
        uid = int(name)
        gid = next((int(row[3]) for row in users.values() if row[2] == name), 0)
    elif name in users:
        uid, gid = int(users[name][2]), int(users[name][3])
    else:
        raise BundleError(f"image user {name!r} is not in the image's /etc/passwd")
    if group_name:
        if group_name.isdigit():
            gid = int(group_name)
        elif group_name in (groups := _colon_table(group, 1)):
            gid = int(groups[group_name][2])
        else:
            raise BundleError(f"image group {group_name!r} is not in the image's /etc/group")
    return uid, gid


def _colon_table(text: str | None, numeric: int) -> dict[str, list[str]]:
    """Rows of a passwd-like file by name; ``numeric`` fields from the third on must be ids."""
    rows: dict[str, list[str]] = {}
    for line in (text or "").splitlines():
        fields = line.split(":")
        if len(fields) >= 2 + numeric and all(f.isdigit() for f in fields[2 : 2 + numeric]):
            rows.setdefault(fields[0], fields)
    return rows
