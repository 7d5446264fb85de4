"""``benchrunner runner preflight``: every check of this host for the cores a runner would give
its jobs, and the verdict as an exit status.

Exit status: ``0`` fit (nothing bad; warnings allowed), ``1`` not fit (at least one check is
bad), ``3`` nothing bad found but some checks could not be read, so fitness is unknown.
(``2`` stays the CLI's usage error.)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchrunner.runner.tuning import load
from benchrunner.runner.tuning.check import Check, Status
from benchrunner.runner.tuning.cpulist import format_cpulist
from benchrunner.runner.tuning.hostfs import HostFs
from benchrunner.runner.tuning.knobs import KNOB_CHECKS

EXIT_FIT = 0
EXIT_UNFIT = 1
EXIT_UNKNOWN = 3
SAMPLE_SECONDS = 0.5


@dataclass(frozen=True)
class Preflight:
    cores: frozenset[int]
    checks: list[Check]

    @property
    def exit_code(self) -> int:
        statuses = {check.status for check in self.checks}
        if Status.BAD in statuses:
            return EXIT_UNFIT
        if Status.UNKNOWN in statuses:
            return EXIT_UNKNOWN
        return EXIT_FIT

    @property
    def verdict(self) -> str:
        return {EXIT_FIT: "fit", EXIT_UNFIT: "not fit", EXIT_UNKNOWN: "unknown"}[self.exit_code]

    def to_json(self) -> dict[str, Any]:
        return {
            "cores": sorted(self.cores),
            "verdict": self.verdict,
            "fit": self.exit_code == EXIT_FIT,
            "exit_code": self.exit_code,
            "checks": [check.to_json() for check in self.checks],
        }


def run_preflight(
    fs: HostFs,
    cores: frozenset[int],
    *,
    ignored_pids: frozenset[int] = frozenset(),
    interval: float = SAMPLE_SECONDS,
    wait: Callable[[float], None] = time.sleep,
) -> Preflight:
    """Check the host under ``fs`` for jobs on ``cores``. ``wait`` spans the load sample
    (steal time, busy processes); ``ignored_pids`` are not counted as competitors."""
    checks = [check(fs, cores) for check in KNOB_CHECKS]
    before, after = load.sample(fs, interval, wait)
    checks.append(load.steal(before, after, cores))
    checks.append(load.busy_processes(fs, before, after, interval, cores, ignored_pids))
    return Preflight(cores, checks)


def describe(preflight: Preflight) -> list[str]:
    """The human report: one line per check, then the verdict."""
    lines = [f"preflight for job cores {format_cpulist(preflight.cores)}"]
    for check in preflight.checks:
        lines.append(
            f"{check.status.value.upper():7} {check.name}: {check.actual} "
            f"(should be {check.expected}) — {check.what}"
        )
        if check.status is not Status.OK:
            lines.append(f"        fix: {check.fix}")
    lines.append(f"verdict: {preflight.verdict} (exit {preflight.exit_code})")
    return lines
