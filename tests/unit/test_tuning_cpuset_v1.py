"""The job cores' partition on a cgroup v1 host (a cpuset mount of its own): the job cpuset and
the housekeeping one made, every task the kernel lets go moved out of the root (a kernel thread
bound to a CPU stays), the root's load balancing off; all of it put back on exit and by
``runner restore`` after a crash, each moved thread with its own CPU affinity again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrunner.runner.tuning import (
    CoreSplit,
    RestoreError,
    TuneMode,
    restore_leftovers,
    tuned_host,
)
from benchrunner.runner.tuning.check import Status
from benchrunner.runner.tuning.knobs import isolation
from benchrunner.runner.tuning.state import STATE_DIR, STATE_NAME, StateFile
from benchrunner.runner.tuning.tuner import apply_settings
from tests.fake_host import CPUSET1, FakeKernelFs, bare_metal, cgroup_v1, host_files

SPLIT = CoreSplit(job=frozenset({2, 3}), housekeeping=frozenset({0, 1}))
JOBS = f"{CPUSET1}/benchrunner-jobs"
HOUSEKEEPING = f"{CPUSET1}/benchrunner-housekeeping"
KTHREAD = 2  # ksoftirqd/1, say: bound to core 1
THREADS = {KTHREAD: "1", 10: "0-3", 11: "2", 12: "0-3"}  # 11 pinned to core 2 by its owner


@pytest.fixture
def fs(tmp_path: Path) -> FakeKernelFs:
    bare_metal(tmp_path)
    cgroup_v1(tmp_path, THREADS)
    return FakeKernelFs(tmp_path, bound=frozenset({KTHREAD}))


def tasks(fs: FakeKernelFs, cgroup: str) -> list[str]:
    return (fs.read(f"{cgroup}/tasks") or "").split()


def allowed(fs: FakeKernelFs, thread: int) -> str:
    status = fs.read(f"proc/{thread}/status") or ""
    return status.split("Cpus_allowed_list:")[1].strip()


def test_v1_partition_moves_every_movable_task_out_of_the_job_cores_and_back(
    fs: FakeKernelFs,
) -> None:
    before = host_files(fs.root)
    with tuned_host(fs, SPLIT, TuneMode.STRICT) as host:
        detail = {o.setting: o.detail for o in host.outcomes if o.applied}["cpuset_partition"]
        assert "3 task(s) moved" in detail and "1 bound to a CPU" in detail
        assert fs.read(f"{JOBS}/cpuset.cpus") == "2-3"
        assert fs.read(f"{JOBS}/cpuset.mems") == "0"
        assert fs.read(f"{JOBS}/cpuset.cpu_exclusive") == "1"
        assert fs.read(f"{HOUSEKEEPING}/cpuset.cpus") == "0-1"
        assert tasks(fs, HOUSEKEEPING) == ["10", "11", "12"]
        assert tasks(fs, CPUSET1) == [str(KTHREAD)]  # refused with EINVAL, left
        assert fs.read(f"{CPUSET1}/cpuset.sched_load_balance") == "0"
        assert allowed(fs, 11) == "0-1"  # the cpuset decides while tuned
        assert host.job_cgroup == f"{JOBS}/cgroup.procs"
        fs.write(f"{JOBS}/tasks", "12")  # a job process admitted to the job cores
        assert tasks(fs, JOBS) == ["12"]
        recorded = json.loads(fs.path(f"{STATE_DIR}/{STATE_NAME}").read_text())["entries"]
        partition = [e for e in recorded if e["setting"] == "cpuset_partition"]
        assert [(e["path"], e["undo"]) for e in partition] == [
            (JOBS, None),
            (HOUSEKEEPING, None),
            (CPUSET1, None),
            (f"{CPUSET1}/cpuset.sched_load_balance", "1"),
        ]
        assert partition[2]["tasks_from"] == [HOUSEKEEPING, JOBS]
        assert partition[2]["affinity"] == {"2": "1", "11": "2"}
    assert host_files(fs.root) == before  # tasks home, own affinity back, cpusets gone
    assert not StateFile(fs.path(STATE_DIR)).exists()


def test_runner_restore_after_a_crash_brings_back_tasks_forked_while_tuned(
    fs: FakeKernelFs,
) -> None:
    apply_settings(fs, SPLIT, StateFile(fs.path(STATE_DIR)), strict=True)
    # Forked by a housekeeping task after the move: it stays there until the restore.
    fs.path("proc/13/status").parent.mkdir()
    fs.path("proc/13/status").write_text("Name:\tt13\nCpus_allowed_list:\t0-1\n")
    fs.write(f"{HOUSEKEEPING}/tasks", "13")
    fs.write(f"{JOBS}/tasks", "10")
    assert "cpuset_partition" in restore_leftovers(fs)
    assert sorted(tasks(fs, CPUSET1), key=int) == ["2", "10", "11", "12", "13"]
    assert not fs.exists(JOBS) and not fs.exists(HOUSEKEEPING)
    assert fs.read(f"{CPUSET1}/cpuset.sched_load_balance") == "1"
    assert allowed(fs, 11) == "2" and allowed(fs, 13) == "0-3"


def test_a_task_that_will_not_go_back_keeps_the_cpusets_for_another_restore(
    fs: FakeKernelFs,
) -> None:
    apply_settings(fs, SPLIT, StateFile(fs.path(STATE_DIR)), strict=True)
    stuck = FakeKernelFs(fs.root, bound=frozenset({KTHREAD, 12}))
    with pytest.raises(RestoreError, match="would not move back"):
        restore_leftovers(stuck)
    assert tasks(fs, HOUSEKEEPING) == ["12"]
    assert fs.exists(HOUSEKEEPING)
    assert "cpuset_partition" in restore_leftovers(fs)  # the next try, once it can
    assert not fs.exists(HOUSEKEEPING)


def test_preflight_sees_the_v1_cpuset_isolating_the_job_cores(fs: FakeKernelFs) -> None:
    untuned = isolation(fs, SPLIT.job)
    assert untuned.status is Status.WARN
    assert f"v1 cpuset /{CPUSET1} balances load on all cores" in untuned.actual
    with tuned_host(fs, SPLIT, TuneMode.STRICT):
        tuned = isolation(fs, SPLIT.job)
        assert tuned.status is Status.OK, tuned.actual
        assert f"v1 cpuset /{JOBS}=2-3" in tuned.actual
        fs.make_directory(f"{CPUSET1}/theirs")
        fs.write(f"{CPUSET1}/theirs/cpuset.cpus", "0-3")
        shared = isolation(fs, SPLIT.job)
        assert shared.status is Status.WARN
        assert "shares them with theirs" in shared.actual
        fs.remove_directory(f"{CPUSET1}/theirs")
