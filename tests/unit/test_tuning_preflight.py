"""``runner preflight``'s checks read from a fake host tree: each status follows the files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from benchrunner.runner.tuning import HostFs, run_preflight
from benchrunner.runner.tuning.check import Status
from benchrunner.runner.tuning.preflight import EXIT_FIT, EXIT_UNFIT, EXIT_UNKNOWN
from tests.fake_host import DeniedFs, bare_metal

JOB = frozenset({2, 3})
CPU = "sys/devices/system/cpu"


def idle_sample(root: Path) -> Callable[[float], None]:
    """The sample's wait: 100 clock ticks pass on every core, all idle."""

    def wait(_: float) -> None:
        stat = root / "proc/stat"
        if not stat.exists():
            return
        lines = []
        for line in stat.read_text().splitlines():
            name, *ticks = line.split()
            ticks[3] = str(int(ticks[3]) + 100)
            lines.append(" ".join([name, *ticks]))
        stat.write_text("\n".join(lines) + "\n")

    return wait


def check_statuses(root: Path, wait: Callable[[float], None]) -> dict[str, Status]:
    result = run_preflight(HostFs(root), JOB, interval=1.0, wait=wait)
    return {check.name: check.status for check in result.checks}


def quiet(root: Path) -> None:
    """Everything a tuned, quiet bare-metal host shows."""
    for core in range(4):
        (root / f"{CPU}/cpu{core}/cpufreq/scaling_governor").write_text("performance")
    settings = {
        f"{CPU}/cpufreq/boost": "0",
        f"{CPU}/smt/control": "off",
        f"{CPU}/isolated": "2-3",
        "proc/sys/kernel/randomize_va_space": "0",
        "proc/sys/kernel/nmi_watchdog": "0",
        "proc/sys/kernel/numa_balancing": "0",
        "sys/kernel/mm/transparent_hugepage/enabled": "always madvise [never]",
        "proc/swaps": "Filename\tType\tSize\tUsed\tPriority\n",
        "proc/irq/24/smp_affinity_list": "0-1",
        "proc/irq/25/smp_affinity_list": "0",
        "proc/100/comm": "sshd",
    }
    for relative, text in settings.items():
        (root / relative).write_text(text)


def test_an_untuned_bare_metal_host_is_not_fit_and_each_line_says_why(tmp_path: Path) -> None:
    bare_metal(tmp_path)
    result = run_preflight(HostFs(tmp_path), JOB, interval=1.0, wait=idle_sample(tmp_path))
    found = {check.name: check for check in result.checks}
    assert {name: c.status for name, c in found.items()} == {
        "governor": Status.BAD,
        "turbo": Status.BAD,
        "smt": Status.WARN,
        "aslr": Status.WARN,
        "irqbalance": Status.WARN,
        "irq_affinity": Status.WARN,
        "isolation": Status.WARN,
        "hypervisor": Status.OK,
        "nmi_watchdog": Status.WARN,
        "thp": Status.WARN,
        "swap": Status.WARN,
        "ksm": Status.OK,
        "numa_balancing": Status.WARN,
        "steal": Status.OK,
        "busy_processes": Status.OK,
    }
    assert found["governor"].actual == "cpu2=powersave, cpu3=powersave"
    assert found["irq_affinity"].actual.startswith("2 of 2 IRQs")
    assert all(check.fix and check.expected and check.what for check in result.checks)
    assert result.exit_code == EXIT_UNFIT
    assert result.to_json()["verdict"] == "not fit"


def test_a_tuned_quiet_host_is_fit(tmp_path: Path) -> None:
    bare_metal(tmp_path)
    quiet(tmp_path)
    result = run_preflight(HostFs(tmp_path), JOB, interval=1.0, wait=idle_sample(tmp_path))
    assert {c.name: c.status for c in result.checks if c.status is not Status.OK} == {}
    assert result.exit_code == EXIT_FIT


def test_a_vm_without_cpufreq_says_it_cannot_read_the_governor(tmp_path: Path) -> None:
    bare_metal(tmp_path)
    quiet(tmp_path)
    for core in range(4):
        for name in ("scaling_governor",):
            (tmp_path / f"{CPU}/cpu{core}/cpufreq/{name}").unlink()
        (tmp_path / f"{CPU}/cpu{core}/cpufreq").rmdir()
    (tmp_path / f"{CPU}/cpufreq/boost").unlink()
    result = run_preflight(HostFs(tmp_path), JOB, interval=1.0, wait=idle_sample(tmp_path))
    found = {check.name: check for check in result.checks}
    assert found["governor"].status is Status.UNKNOWN
    assert "cpu2/cpufreq is absent" in found["governor"].actual
    assert found["turbo"].status is Status.UNKNOWN
    assert result.exit_code == EXIT_UNKNOWN


def test_a_hypervisor_and_its_steal_time_make_the_host_unfit(tmp_path: Path) -> None:
    bare_metal(tmp_path)
    quiet(tmp_path)
    (tmp_path / "proc/cpuinfo").write_text("flags\t\t: fpu hypervisor vme\n")

    def steal_during_sample(_: float) -> None:
        # cpu3: 100 ticks pass, 10 of them stolen.
        lines = (tmp_path / "proc/stat").read_text().splitlines()
        lines[4] = "cpu3 190 0 50 1000 0 0 0 10 0 0"
        (tmp_path / "proc/stat").write_text("\n".join(lines) + "\n")

    found = check_statuses(tmp_path, steal_during_sample)
    assert found["hypervisor"] is Status.BAD
    assert found["steal"] is Status.BAD


def test_a_process_busy_on_the_job_cores_is_named(tmp_path: Path) -> None:
    bare_metal(tmp_path)
    quiet(tmp_path)
    stat = tmp_path / "proc/100/stat"

    def busy_during_sample(_: float) -> None:
        # utime grows by half the clock ticks of the one-second sample: 50 % of a core.
        import os

        half = os.sysconf("SC_CLK_TCK") // 2
        stat.write_text(stat.read_text().replace(" 1 1 0 0 ", f" {1 + half} 1 0 0 ", 1))

    result = run_preflight(HostFs(tmp_path), JOB, interval=1.0, wait=busy_during_sample)
    busy = next(c for c in result.checks if c.name == "busy_processes")
    assert busy.status is Status.BAD
    assert "sshd (pid 100) 50%" in busy.actual
    # Pinned away from the job cores, it is no competitor.
    (tmp_path / "proc/100/status").write_text("Cpus_allowed_list:\t0-1\n")
    stat.write_text("100 (sshd) S 1 100 100 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5")
    again = run_preflight(HostFs(tmp_path), JOB, interval=1.0, wait=busy_during_sample)
    assert next(c for c in again.checks if c.name == "busy_processes").status is Status.OK


@pytest.mark.parametrize("missing", ["proc", "sys"])
def test_an_empty_tree_is_reported_unreadable_not_fit(tmp_path: Path, missing: str) -> None:
    bare_metal(tmp_path)
    import shutil

    shutil.rmtree(tmp_path / missing)
    result = run_preflight(HostFs(tmp_path), JOB, interval=1.0, wait=idle_sample(tmp_path))
    unknown = {c.name for c in result.checks if c.status is Status.UNKNOWN}
    expected = (
        {"aslr", "irqbalance", "irq_affinity", "hypervisor", "swap", "steal", "busy_processes"}
        if missing == "proc"
        else {"governor", "turbo", "smt", "isolation", "thp"}
    )
    assert unknown == expected
    assert result.exit_code in (EXIT_UNFIT, EXIT_UNKNOWN)


SWITCHES = {
    "nmi_watchdog": "proc/sys/kernel/nmi_watchdog",
    "ksm": "sys/kernel/mm/ksm/run",
    "numa_balancing": "proc/sys/kernel/numa_balancing",
}


@pytest.mark.parametrize("name", sorted(SWITCHES))
def test_a_switch_the_kernel_lacks_is_absent_and_fine(tmp_path: Path, name: str) -> None:
    bare_metal(tmp_path)
    quiet(tmp_path)
    (tmp_path / SWITCHES[name]).unlink()
    result = run_preflight(HostFs(tmp_path), JOB, interval=1.0, wait=idle_sample(tmp_path))
    found = next(check for check in result.checks if check.name == name)
    assert (found.status, found.actual) == (Status.OK, "absent (not in this kernel)")
    assert result.exit_code == EXIT_FIT


@pytest.mark.parametrize("name", sorted(SWITCHES))
def test_a_switch_denied_to_us_is_unknown_not_absent(tmp_path: Path, name: str) -> None:
    bare_metal(tmp_path)
    quiet(tmp_path)
    fs = DeniedFs(tmp_path, denied=frozenset({SWITCHES[name]}))
    result = run_preflight(fs, JOB, interval=1.0, wait=idle_sample(tmp_path))
    found = next(check for check in result.checks if check.name == name)
    assert found.status is Status.UNKNOWN
    assert found.actual == (
        f"cannot read: /{SWITCHES[name]} exists but cannot be read (Permission denied)"
    )
    assert result.exit_code == EXIT_UNKNOWN


@pytest.mark.parametrize("name", sorted(SWITCHES))
def test_a_switch_that_is_no_file_is_unknown_not_absent(tmp_path: Path, name: str) -> None:
    # Any error but "no such file" leaves the value unknown: here a directory in its place.
    bare_metal(tmp_path)
    quiet(tmp_path)
    (tmp_path / SWITCHES[name]).unlink()
    (tmp_path / SWITCHES[name]).mkdir()
    result = run_preflight(HostFs(tmp_path), JOB, interval=1.0, wait=idle_sample(tmp_path))
    found = next(check for check in result.checks if check.name == name)
    assert found.status is Status.UNKNOWN
    assert "exists but cannot be read (Is a directory)" in found.actual
    assert result.exit_code == EXIT_UNKNOWN


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("aslr", "proc/sys/kernel/randomize_va_space"),
        ("thp", "sys/kernel/mm/transparent_hugepage/enabled"),
        ("smt", f"{CPU}/smt/control"),
        ("swap", "proc/swaps"),
        ("turbo", f"{CPU}/cpufreq/boost"),
    ],
)
def test_a_setting_denied_to_us_says_so_rather_than_absent(
    tmp_path: Path, name: str, path: str
) -> None:
    bare_metal(tmp_path)
    quiet(tmp_path)
    result = run_preflight(
        DeniedFs(tmp_path, denied=frozenset({path})), JOB, interval=1.0, wait=idle_sample(tmp_path)
    )
    found = next(check for check in result.checks if check.name == name)
    assert found.status is Status.UNKNOWN
    assert found.actual == f"cannot read: /{path} exists but cannot be read (Permission denied)"
