"""The real ``benchrunner runner preflight`` on the machine the tests run on: well-formed, and
honest — each line checked against what this host's own files say."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchrunner.runner.cores import CorePlan

CPU = Path("/sys/devices/system/cpu")
NAMES = {
    "governor",
    "turbo",
    "smt",
    "aslr",
    "irqbalance",
    "irq_affinity",
    "isolation",
    "hypervisor",
    "nmi_watchdog",
    "thp",
    "swap",
    "ksm",
    "numa_balancing",
    "steal",
    "busy_processes",
}
EXIT_BY_VERDICT = {"fit": 0, "not fit": 1, "unknown": 3}

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


def preflight(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchrunner", "runner", "preflight", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def test_preflight_json_on_this_host_is_well_formed_and_honest() -> None:
    done = preflight("--json")
    report: dict[str, Any] = json.loads(done.stdout)
    checks = {check["name"]: check for check in report["checks"]}
    assert set(checks) == NAMES
    for check in checks.values():
        assert set(check) == {"name", "what", "actual", "expected", "fix", "status"}
        assert check["status"] in {"ok", "warn", "bad", "unknown"}
        assert all(isinstance(check[key], str) and check[key] for key in check)
        assert (check["status"] == "unknown") == check["actual"].startswith("cannot read")
    plan = CorePlan.detect()
    assert report["cores"] == sorted(plan.job_cores or os.sched_getaffinity(0))
    assert done.returncode == report["exit_code"] == EXIT_BY_VERDICT[report["verdict"]]
    statuses = {check["status"] for check in checks.values()}
    expected_exit = 1 if "bad" in statuses else 3 if "unknown" in statuses else 0
    assert done.returncode == expected_exit

    first = report["cores"][0]
    governor = read(CPU / f"cpu{first}/cpufreq/scaling_governor")
    if not (CPU / f"cpu{first}/cpufreq").exists():
        assert checks["governor"]["status"] == "unknown"
        assert f"cpu{first}/cpufreq is absent" in checks["governor"]["actual"]
    elif governor is not None:
        assert f"cpu{first}={governor}" in checks["governor"]["actual"]
        assert checks["governor"]["status"] == ("ok" if governor == "performance" else "bad")

    if read(CPU / "intel_pstate/no_turbo") is None and read(CPU / "cpufreq/boost") is None:
        assert checks["turbo"]["status"] == "unknown"

    smt = read(CPU / "smt/control")
    if smt is None:
        assert checks["smt"]["status"] == "unknown"
    else:
        assert checks["smt"]["actual"].startswith(smt)

    aslr = read(Path("/proc/sys/kernel/randomize_va_space"))
    assert checks["aslr"]["actual"] == aslr
    assert checks["aslr"]["status"] == ("ok" if aslr == "0" else "warn")

    flags = [line for line in (read(Path("/proc/cpuinfo")) or "").splitlines() if "flags" in line]
    under_hypervisor = any(" hypervisor" in line for line in flags) or bool(
        read(Path("/sys/hypervisor/type"))
    )
    assert checks["hypervisor"]["status"] == ("bad" if under_hypervisor else "ok")

    thp = read(Path("/sys/kernel/mm/transparent_hugepage/enabled"))
    if thp is not None:
        chosen = thp[thp.index("[") + 1 : thp.index("]")]
        assert checks["thp"]["actual"] == chosen

    swaps = (read(Path("/proc/swaps")) or "").splitlines()[1:]
    assert checks["swap"]["status"] == ("warn" if swaps else "ok")


def test_preflight_for_named_cores_prints_one_line_per_check_and_its_verdict() -> None:
    assert json.loads(preflight("--json", "--cores", "0").stdout)["cores"] == [0]
    done = preflight("--cores", "0")
    lines = done.stdout.splitlines()
    assert lines[0] == "preflight for job cores 0"
    for name in NAMES:
        assert sum(f" {name}: " in line for line in lines) == 1, name
    # Busy processes come and go on a shared machine: the verdict of this run, not another's.
    verdict = re.fullmatch(r"verdict: (fit|not fit|unknown) \(exit (\d)\)", lines[-1])
    assert verdict is not None
    assert done.returncode == int(verdict[2]) == EXIT_BY_VERDICT[verdict[1]]


def test_preflight_refuses_a_bad_core_list() -> None:
    done = preflight("--cores", "3-1")
    assert done.returncode == 1
    assert "bad CPU range" in done.stderr + done.stdout
