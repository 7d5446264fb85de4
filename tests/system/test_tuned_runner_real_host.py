"""``runner up --tune`` on the machine the tests run on (its real ``/sys``, ``/proc`` and
``/dev``), where a VM or container allows some settings and not others: strict tuning refuses and
changes nothing; best effort applies what it can, runs a job, and puts every setting back. On
a cgroup v1 host that is also the job cores' cpuset: the job runs inside it, every other task
moves to the housekeeping cpuset while tuned and back to the root afterwards.

Every file ``--tune`` may change is compared before and after, and the host is restored through
``runner restore`` even when a test fails. This module is the only user of the real host's
tuning lock: the other tuning tests give the runner a fake root (``--host-root``). Marked
``host_wide``: while tuned, every task on the machine is confined to the housekeeping core, so
``make test`` runs these tests alone, after the parallel suite, where no other test's runner
could find its job core taken away.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchrunner.runner.cores import CorePlan
from benchrunner.runner.tuning.cpulist import parse_cpulist, parse_cpumask
from benchrunner.runner.tuning.settings import HOUSEKEEPING, PARTITION
from benchrunner.runner.tuning.state import STATE_DIR, STATE_NAME
from tests.harness import Deployment, RunnerProcess, deploy, wait_until

REAL = Path("/")
STATE = REAL / STATE_DIR / STATE_NAME
DMA_LATENCY = REAL / "dev/cpu_dma_latency"
SETTINGS = {
    "governor",
    "turbo",
    "smt",
    "thp",
    "irq_affinity",
    "workqueues",
    "cpuset_partition",
    "c_states",
    "aslr",
}
TUNED_FILES = (
    "sys/devices/system/cpu/cpu*/cpufreq/scaling_governor",
    "sys/devices/system/cpu/intel_pstate/no_turbo",
    "sys/devices/system/cpu/cpufreq/boost",
    "sys/devices/system/cpu/smt/control",
    "sys/kernel/mm/transparent_hugepage/enabled",
    "proc/irq/default_smp_affinity",
    "proc/irq/*/smp_affinity_list",
    "sys/devices/virtual/workqueue/cpumask",
)

pytestmark = [
    pytest.mark.host_wide,
    pytest.mark.skipif(os.geteuid() != 0, reason="tuning the real host needs root"),
    pytest.mark.skipif(
        any(REAL.glob("sys/devices/system/cpu/cpu*/cpufreq")),
        reason="written for a VM without cpufreq, where strict tuning must refuse",
    ),
]


def read(path: Path) -> str:
    try:
        return path.read_bytes().decode(errors="replace").strip()
    except OSError as exc:
        return f"<{exc.strerror}>"


def cgroup2_mounts() -> list[Path]:
    fields = (line.split() for line in Path("/proc/self/mounts").read_text().splitlines())
    return [Path(f[1]) for f in fields if len(f) > 2 and f[2] == "cgroup2"]


def cpuset_v1_mounts() -> list[Path]:
    fields = (line.split() for line in Path("/proc/self/mounts").read_text().splitlines())
    return [
        Path(f[1])
        for f in fields
        if len(f) > 3 and f[2] == "cgroup" and "cpuset" in f[3].split(",")
    ]


def threads_in_our_cpusets() -> dict[str, str]:
    """Thread id -> cpuset and name, for every live thread of the host in a cpuset tuning
    made (a zombie still names the cpuset it died in, even once that is removed)."""
    found: dict[str, str] = {}
    for path in REAL.glob("proc/[0-9]*/task/[0-9]*/cpuset"):
        cpuset = read(path)
        status = read(path.parent / "status")
        state = status.split("State:")[1].split()[0] if "State:" in status else "?"
        if cpuset.startswith("/benchrunner-") and state not in ("Z", "X"):
            found[path.parent.name] = f"{cpuset} {read(path.parent / 'comm')} {state}"
    return found


def host_settings() -> dict[str, str]:
    """Every setting of the real host that ``--tune`` may change, as it reads now."""
    found = {str(path): read(path) for pattern in TUNED_FILES for path in REAL.glob(pattern)}
    for mount in cgroup2_mounts():
        found[str(mount / "cgroup.subtree_control")] = read(mount / "cgroup.subtree_control")
        found[str(mount / PARTITION)] = str((mount / PARTITION).exists())
    for mount in cpuset_v1_mounts():
        balance = mount / "cpuset.sched_load_balance"
        found[str(balance)] = read(balance)
        for name in (PARTITION, HOUSEKEEPING):
            found[str(mount / name)] = str((mount / name).exists())
    found[str(DMA_LATENCY)] = c_state_limit()
    found[str(STATE)] = str(STATE.exists())
    return found


def c_state_limit() -> str:
    """The latency the kernel currently allows idle cores (held at 0 by a tuned runner)."""
    try:
        with DMA_LATENCY.open("rb") as device:
            return str(int.from_bytes(device.read(4), sys.byteorder, signed=True))
    except OSError as exc:
        return f"<{exc.strerror}>"


def restore_host() -> None:
    """``runner restore`` until no state file is left (an untuned runner of another test may
    be restoring it at the same moment, holding the lock)."""
    command = [sys.executable, "-m", "benchrunner", "runner", "restore", "--host-root", "/"]

    def restored() -> bool:
        subprocess.run(command, capture_output=True, timeout=60, check=False)
        return not STATE.exists()

    wait_until(restored, timeout=60, interval=0.5, message="runner restore on the real host")


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    with deploy(tmp_path, f"sqlite:///{tmp_path / 'benchrunner.db'}") as deployment:
        yield deployment


@pytest.fixture
def real_host() -> Iterator[dict[str, str]]:
    """The real host's settings before the test; put back afterwards, whatever happened."""
    assert not STATE.exists(), f"{STATE} is left by an earlier tuned run: `runner restore`"
    before = host_settings()
    try:
        yield before
    finally:
        restore_host()


def tuned_runner(deployment: Deployment, name: str, tune: str) -> RunnerProcess:
    runner = deployment.runner_process(name)
    runner.extra_args = [tune, "--host-root", "/"]
    return runner


def outcomes(output: str) -> tuple[dict[str, str], set[str]]:
    """What the runner said it tuned (setting -> detail) and what it could not."""
    applied: dict[str, str] = {}
    refused: set[str] = set()
    for line in output.splitlines():
        if line.startswith("tuned "):
            setting, detail = line.removeprefix("tuned ").split(": ", 1)
            applied[setting] = detail
        elif line.startswith("warning: cannot tune "):
            refused.add(line.removeprefix("warning: cannot tune ").split(" ", 1)[0])
    return applied, refused


def housekeeping_cores() -> frozenset[int]:
    """The cores a runner started by this process keeps for itself (not the job's); asked
    before tuning, which may confine this process to the housekeeping cores."""
    plan = CorePlan.detect()
    job = plan.job_cores or frozenset(os.sched_getaffinity(0))
    return parse_cpulist(read(REAL / "sys/devices/system/cpu/online")) - job


def stop(runner: RunnerProcess) -> int | None:
    if runner.proc is None or runner.proc.poll() is not None:
        return None if runner.proc is None else runner.proc.returncode
    try:
        return runner.kill(signal.SIGTERM)
    except subprocess.TimeoutExpired:
        return runner.kill(signal.SIGKILL)


def wait_tuned(runner: RunnerProcess) -> None:
    """Until the runner has tuned the host (its state file written, its last setting said)."""
    wait_until(
        lambda: STATE.exists() and "tuned aslr" in runner.output(),
        timeout=60,
        message="the runner to tune the host",
    )


def test_strict_tuning_of_this_vm_refuses_and_changes_nothing(
    deployment: Deployment, real_host: dict[str, str]
) -> None:
    runner = tuned_runner(deployment, "strict-real", "--tune").start()
    try:
        assert runner.proc is not None
        assert runner.proc.wait(timeout=60) == 2, runner.output()
    finally:
        stop(runner)
    output = runner.output()
    assert "cannot tune governor" in output and "cpufreq is absent" in output, output
    assert "--tune=best-effort goes on untuned" in output
    assert host_settings() == real_host


def job_process(text: str) -> int | None:
    """The pid of the ticker job started with ``text`` among its arguments."""
    for cmdline in REAL.glob("proc/[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if text.encode() in argv and b"python3" in argv[0]:
            return int(cmdline.parent.name)
    return None


def check_job_in_v1_partition(
    deployment: Deployment, tmp_path: Path, job_cores: frozenset[int]
) -> None:
    """A job's process runs inside the job cores' v1 cpuset, allowed the job cores only."""
    text = f"in-partition-{os.getpid()}"
    gate = tmp_path / "gate"
    job = deployment.submit("bench.ticker", {"gate": str(gate), "ms": 20, "text": text})
    pid = wait_until(lambda: job_process(text), timeout=60, message="the job's process")
    try:
        assert wait_until(
            lambda: read(REAL / f"proc/{pid}/cpuset") == f"/{PARTITION}",
            timeout=10,
            message="the job's process to be in the job cpuset",
        )
        allowed = read(REAL / f"proc/{pid}/status").split("Cpus_allowed_list:")[1].split()[0]
        assert parse_cpulist(allowed) == job_cores
    finally:
        gate.touch()
    deployment.wait_status(job, "processed", timeout=120)


def preflight_isolation(cores: frozenset[int]) -> str:
    cores_text = ",".join(str(core) for core in sorted(cores))
    command = [sys.executable, "-m", "benchrunner", "runner", "preflight", "--json"]
    command += ["--cores", cores_text]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    checks = {check["name"]: check for check in json.loads(done.stdout)["checks"]}
    return str(checks["isolation"]["actual"])


def test_best_effort_tuning_of_this_vm_applies_what_it_can_and_restores_it_exactly(
    deployment: Deployment, real_host: dict[str, str], tmp_path: Path
) -> None:
    housekeeping = housekeeping_cores()
    job_cores = parse_cpulist(read(REAL / "sys/devices/system/cpu/online")) - housekeeping
    runner = tuned_runner(deployment, "best-effort-real", "--tune=best-effort").start()
    try:
        wait_tuned(runner)
        job = deployment.submit("bench.personality")
        deployment.wait_status(job, "processed", timeout=120)
        applied, refused = outcomes(runner.output())
        assert applied.keys() | refused == SETTINGS, runner.output()
        assert {"governor", "turbo"} <= refused  # no cpufreq here
        assert "thp" in applied  # root may always change it
        during = host_settings()
        assert "[never]" in during["/sys/kernel/mm/transparent_hugepage/enabled"]
        if "changed" in applied.get("workqueues", ""):
            mask = during["/sys/devices/virtual/workqueue/cpumask"]
            assert parse_cpumask(mask) == housekeeping
        if "changed" in applied.get("irq_affinity", ""):
            assert parse_cpumask(during["/proc/irq/default_smp_affinity"]) == housekeeping
            moved = [
                path
                for path, value in during.items()
                if path.endswith("smp_affinity_list") and value != real_host[path]
            ]
            assert moved and all(parse_cpulist(during[path]) == housekeeping for path in moved)
        if "c_states" in applied:
            assert during[str(DMA_LATENCY)] == "0"
        for mount in cpuset_v1_mounts():
            assert "task(s) moved" in applied["cpuset_partition"], runner.output()
            assert parse_cpulist(read(mount / PARTITION / "cpuset.cpus")) == job_cores
            assert parse_cpulist(read(mount / HOUSEKEEPING / "cpuset.cpus")) == housekeeping
            assert during[str(mount / "cpuset.sched_load_balance")] == "0"
            assert runner.proc is not None
            assert read(REAL / f"proc/{runner.proc.pid}/cpuset") == f"/{HOUSEKEEPING}"
            check_job_in_v1_partition(deployment, tmp_path, job_cores)
            assert f"v1 cpuset /{str(mount / PARTITION).lstrip('/')}" in preflight_isolation(
                job_cores
            )
        assert stop(runner) == 0, runner.output()
    finally:
        stop(runner)
    assert host_settings() == real_host
    assert not STATE.exists()
    assert not any((mount / PARTITION).exists() for mount in cgroup2_mounts())
    assert threads_in_our_cpusets() == {}


def test_runner_restore_after_a_killed_tuned_runner_puts_every_task_back(
    deployment: Deployment, real_host: dict[str, str]
) -> None:
    runner = tuned_runner(deployment, "killed-real", "--tune=best-effort").start()
    try:
        wait_tuned(runner)
        if cpuset_v1_mounts():
            assert threads_in_our_cpusets(), "nothing moved to the housekeeping cpuset"
        runner.kill(signal.SIGKILL)
    finally:
        stop(runner)
    assert STATE.exists()  # nothing restored by a runner killed outright
    restore_host()
    assert host_settings() == real_host
    assert threads_in_our_cpusets() == {}
