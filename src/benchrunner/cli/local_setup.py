"""What ``benchrunner up`` creates through the API: organization ``local``, project ``demo``, a
spec ``local`` matching this machine and runner ``local`` offering it. Everything is reused when
it already exists, so ``up`` can run again on the same data directory.
"""

from __future__ import annotations

import os
import platform
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal, TypeVar

from benchrunner.api.base import Answer
from benchrunner.client import ApiError, BenchrunnerClient

ORGANIZATION = "local"
PROJECT = "demo"
SPEC = "local"
RUNNER = "local"
TEMPLATES_FILE = "templates.toml"
RUNNER_KEY_FILE = "runner.key"

_ARCHITECTURES: dict[str, Literal["x86_64", "aarch64"]] = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "aarch64": "aarch64",
    "arm64": "aarch64",
}


@dataclass(frozen=True)
class MachineSpec:
    architecture: Literal["x86_64", "aarch64"]
    cpu: int
    memory: int
    disk: int


def architecture(machine: str) -> Literal["x86_64", "aarch64"]:
    """``platform.machine()`` as a spec architecture; ``ValueError`` for anything else."""
    try:
        return _ARCHITECTURES[machine.lower()]
    except KeyError:
        raise ValueError(
            f"unsupported architecture {machine!r}: specs are x86_64 or aarch64"
        ) from None


def memory_total(meminfo: Path = Path("/proc/meminfo")) -> int:
    """Physical memory in bytes: MemTotal of /proc/meminfo, else the page count (macOS)."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def this_machine(data_dir: Path) -> MachineSpec:
    """One CPU is left to the server, the runner agent and the operating system."""
    return MachineSpec(
        architecture=architecture(platform.machine()),
        cpu=max(1, (os.cpu_count() or 1) - 1),
        memory=memory_total(),
        disk=shutil.disk_usage(data_dir).total,
    )


def ensure_templates(data_dir: Path) -> Path:
    """``<data-dir>/templates.toml``, written from the packaged demo templates if missing; an
    existing file is the user's and is left as it is."""
    path = data_dir / TEMPLATES_FILE
    if not path.exists():
        demo = resources.files("benchrunner").joinpath("demo_templates.toml")
        path.write_text(demo.read_text(encoding="utf-8"), encoding="utf-8")
    return path


def write_runner_key(data_dir: Path, key: str) -> Path:
    """``<data-dir>/runner.key`` holding ``key``, mode 0600 from its creation on: how ``up``
    hands its runner the key. Neither the environment nor the command line would do: a job
    runs as the same user as its runner and could read them in ``/proc``."""
    path = data_dir / RUNNER_KEY_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(fd, 0o600)  # an older file may have had another mode
        handle.write(key + "\n")
    return path


Found = TypeVar("Found", bound=Answer)


def _get_or_create(get: Callable[[], Found], create: Callable[[], Found]) -> Found:
    try:
        return get()
    except ApiError as exc:
        if exc.status != 404:
            raise
    return create()


@dataclass(frozen=True)
class LocalSetup:
    project: str
    spec: str
    runner: str
    runner_token: str


def provision(client: BenchrunnerClient, machine: MachineSpec) -> LocalSetup:
    """Create or reuse the local resources; the runner's token is rotated on reuse, because a
    token is shown only when it is issued. Raises ``ApiError``.
    """
    _get_or_create(
        lambda: client.get_organization(ORGANIZATION),
        lambda: client.create_organization(ORGANIZATION, "enterprise", slug=ORGANIZATION),
    )
    project = _get_or_create(
        lambda: client.get_project(PROJECT),
        lambda: client.create_project(ORGANIZATION, PROJECT, "public", slug=PROJECT),
    )
    spec = _get_or_create(
        lambda: client.get_spec(SPEC),
        lambda: client.create_spec(
            SPEC,
            slug=SPEC,
            architecture=machine.architecture,
            cpu=machine.cpu,
            memory=machine.memory,
            disk=machine.disk,
            network=False,
        ),
    )
    if spec.archived:
        client.update_spec(SPEC, archived=False)
    try:
        runner = client.get_runner(RUNNER)
    except ApiError as exc:
        if exc.status != 404:
            raise
        created = client.create_runner(RUNNER, [SPEC], slug=RUNNER)
        return LocalSetup(project.slug, SPEC, created.slug, created.token)
    if runner.archived:
        runner = client.update_runner(RUNNER, archived=False)
    if runner.paused:
        runner = client.update_runner(RUNNER, paused=False)
    if SPEC not in {s.slug for s in runner.specs}:
        client.add_runner_spec(RUNNER, SPEC)
    token = client.rotate_runner_token(RUNNER).token
    return LocalSetup(project.slug, SPEC, runner.slug, token)
