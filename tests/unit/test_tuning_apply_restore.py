"""Every tuning setting applied to a fake host tree and put back: on exit, after a crash (the
state file left behind, restored by the next start), and refused whole in strict mode."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchrunner.runner.tuning import (
    CoreSplit,
    HostLockedError,
    TuneMode,
    TuningRefusedError,
    restore_leftovers,
    tuned_host,
)
from benchrunner.runner.tuning.personality import ADDR_NO_RANDOMIZE
from benchrunner.runner.tuning.state import STATE_DIR, STATE_NAME, StateFile, StateFileError
from benchrunner.runner.tuning.tuner import apply_settings
from tests.fake_host import FakeKernelFs, bare_metal, host_files

SPLIT = CoreSplit(job=frozenset({2, 3}), housekeeping=frozenset({0, 1}))
CPU = "sys/devices/system/cpu"

# setting -> (file, value after tuning, value before)
EXPECTED = {
    "governor": (f"{CPU}/cpu2/cpufreq/scaling_governor", "performance", "powersave"),
    "turbo": (f"{CPU}/cpufreq/boost", "0", "1"),
    "smt": (f"{CPU}/smt/control", "off", "on"),
    "thp": ("sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]", "madvise"),
    "irq_affinity": ("proc/irq/24/smp_affinity_list", "0-1", "0-3"),
    "workqueues": ("sys/devices/virtual/workqueue/cpumask", "3", "f"),
    "cpuset_partition": (
        "sys/fs/cgroup/cgroup.subtree_control",
        "cpu memory cpuset",
        "cpu memory",
    ),
}


@pytest.fixture
def fs(tmp_path: Path) -> FakeKernelFs:
    bare_metal(tmp_path)
    return FakeKernelFs(tmp_path)


def state_of(fs: FakeKernelFs) -> StateFile:
    return StateFile(fs.path(STATE_DIR))


@pytest.mark.parametrize("setting", sorted(EXPECTED))
def test_each_setting_is_applied_recorded_first_and_restored(
    fs: FakeKernelFs, setting: str
) -> None:
    before = host_files(fs.root)
    path, tuned, original = EXPECTED[setting]
    with tuned_host(fs, SPLIT, TuneMode.STRICT) as host:
        assert fs.read(path) == tuned
        assert {o.setting for o in host.outcomes if o.applied} >= set(EXPECTED)
        recorded = json.loads(fs.path(f"{STATE_DIR}/{STATE_NAME}").read_text())["entries"]
        undo = {e["path"]: e["undo"] for e in recorded if e["setting"] == setting}
        if setting == "cpuset_partition":
            assert undo[path] == "-cpuset"
            group = "sys/fs/cgroup/benchrunner-jobs"
            assert fs.read(f"{group}/cpuset.cpus") == "2-3"
            assert fs.read(f"{group}/cpuset.cpus.partition") == "isolated"
            assert host.job_cgroup == f"{group}/cgroup.procs"
        else:
            assert undo[path] == original
    assert host_files(fs.root) == before
    assert not state_of(fs).exists()


def test_held_c_states_and_aslr_off_for_children_only_while_tuned(fs: FakeKernelFs) -> None:
    def child_personality() -> int:
        out = subprocess.run(
            [sys.executable, "-c", "print(open('/proc/self/personality').read())"],
            capture_output=True,
            text=True,
            check=True,
        )
        return int(out.stdout, 16)

    assert not child_personality() & ADDR_NO_RANDOMIZE
    with tuned_host(fs, SPLIT, TuneMode.STRICT):
        assert fs.path("dev/cpu_dma_latency").read_bytes() == b"\0\0\0\0"
        assert child_personality() & ADDR_NO_RANDOMIZE
        assert fs.read("proc/sys/kernel/randomize_va_space") == "2"  # host-wide: untouched
    assert not child_personality() & ADDR_NO_RANDOMIZE


def test_a_crash_between_apply_and_restore_is_repaired_by_the_next_start(
    fs: FakeKernelFs,
) -> None:
    before = host_files(fs.root)
    # What a runner killed while tuned leaves: settings changed, their originals recorded.
    apply_settings(fs, SPLIT, state_of(fs), strict=True)
    assert host_files(fs.root) != before
    assert state_of(fs).exists()
    with tuned_host(fs, SPLIT, None) as host:  # the next `runner up`, untuned
        assert host.outcomes == []
        assert host_files(fs.root) == before
    assert not state_of(fs).exists()


def test_runner_restore_puts_a_crashed_tuning_back(fs: FakeKernelFs) -> None:
    before = host_files(fs.root)
    apply_settings(fs, SPLIT, state_of(fs), strict=True)
    assert set(restore_leftovers(fs)) == set(EXPECTED)
    assert host_files(fs.root) == before
    assert restore_leftovers(fs) == []


def test_strict_tuning_refuses_naming_the_setting_and_leaves_the_host_as_it_was(
    fs: FakeKernelFs,
) -> None:
    fs.path(f"{CPU}/cpufreq/boost").unlink()  # a host without a turbo switch
    before = host_files(fs.root)
    with pytest.raises(TuningRefusedError) as refused, tuned_host(fs, SPLIT, TuneMode.STRICT):
        pytest.fail("strict tuning started on a host it could not tune")
    assert refused.value.setting == "turbo"
    assert "cpufreq/boost" in str(refused.value)
    assert host_files(fs.root) == before  # the governor, applied first, was put back
    assert not state_of(fs).exists()


def test_best_effort_says_what_it_could_not_do_and_goes_on(fs: FakeKernelFs) -> None:
    fs.path(f"{CPU}/cpufreq/boost").unlink()
    before = host_files(fs.root)
    with tuned_host(fs, SPLIT, TuneMode.BEST_EFFORT) as host:
        failed = {o.setting: o.detail for o in host.outcomes if not o.applied}
        assert set(failed) == {"turbo"}
        assert "cpufreq/boost" in failed["turbo"]
        assert fs.read(f"{CPU}/cpu3/cpufreq/scaling_governor") == "performance"
    assert host_files(fs.root) == before


def test_a_knob_the_kernel_does_not_offer_is_a_setting_not_applied(fs: FakeKernelFs) -> None:
    # A directory in place of the file: neither readable nor writable, even by root.
    fs.path(f"{CPU}/smt/control").unlink()
    fs.path(f"{CPU}/smt/control").mkdir()
    (fs.path(f"{CPU}/smt/control") / "x").mkdir()
    before = host_files(fs.root)
    with pytest.raises(TuningRefusedError, match="smt"), tuned_host(fs, SPLIT, TuneMode.STRICT):
        pass
    assert host_files(fs.root) == before


def test_one_tuned_runner_per_host(fs: FakeKernelFs) -> None:
    with tuned_host(fs, SPLIT, TuneMode.BEST_EFFORT):
        second = tuned_host(fs, SPLIT, TuneMode.BEST_EFFORT)
        with pytest.raises(HostLockedError, match="another tuned runner"):
            second.__enter__()
        assert state_of(fs).exists()
        with pytest.raises(HostLockedError):
            restore_leftovers(fs)  # `runner restore` must not undo a live runner's tuning


def test_a_state_file_naming_a_path_outside_sys_and_proc_is_refused(fs: FakeKernelFs) -> None:
    path = fs.path(f"{STATE_DIR}/{STATE_NAME}")
    path.parent.mkdir(parents=True)
    entry = {"setting": "x", "path": "sys/../etc/passwd", "undo": "owned"}
    path.write_text(json.dumps({"version": 1, "entries": [entry]}))
    with pytest.raises(StateFileError, match="not a /sys or /proc file"):
        restore_leftovers(fs)


def test_a_partition_someone_else_made_is_neither_used_nor_removed(fs: FakeKernelFs) -> None:
    theirs = fs.path("sys/fs/cgroup/benchrunner-jobs")
    fs.make_directory("sys/fs/cgroup/benchrunner-jobs")
    before = host_files(fs.root)
    with tuned_host(fs, SPLIT, TuneMode.BEST_EFFORT) as host:
        failed = {o.setting: o.detail for o in host.outcomes if not o.applied}
        assert "already exists" in failed["cpuset_partition"]
        assert host.job_cgroup is None
        assert (theirs / "cpuset.cpus").read_text() == ""
        # Half a setting is undone at once: cpuset is not left enabled for the subtree.
        assert fs.read("sys/fs/cgroup/cgroup.subtree_control") == "cpu memory"
    assert host_files(fs.root) == before


def test_an_untuned_start_goes_on_when_leftovers_cannot_be_restored(
    fs: FakeKernelFs, caplog: pytest.LogCaptureFixture
) -> None:
    path = fs.path(f"{STATE_DIR}/{STATE_NAME}")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with tuned_host(fs, SPLIT, None) as host:
        assert host.outcomes == []
    assert "keeps settings of a previous tuned run" in caplog.text
    assert path.exists()  # left for `runner restore` and a person to look at
    with pytest.raises(StateFileError), tuned_host(fs, SPLIT, TuneMode.BEST_EFFORT):
        pytest.fail("tuned over a state file it could not read")
    assert path.read_text() == "{not json"
