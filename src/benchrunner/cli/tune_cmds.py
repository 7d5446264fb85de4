"""``benchrunner runner preflight`` and ``runner restore``, and what ``runner up --tune`` adds
around the agent: the host checked and tuned for the job cores (``benchrunner.runner.tuning``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from benchrunner.cli import output

if TYPE_CHECKING:
    from benchrunner.runner.cores import CorePlan
    from benchrunner.runner.signals import StopRequests

EXIT_TUNING = 2
"""``runner up --tune`` or ``runner restore`` could not do what was asked (as a refused runner)."""

HostRoot = Annotated[
    Path,
    typer.Option(
        envvar="BENCHRUNNER_HOST_ROOT",
        metavar="DIR",
        help="Where /sys, /proc and /dev are found (a copy of them in tests).",
        rich_help_panel="Host tuning",
    ),
]
Cores = Annotated[
    str | None,
    typer.Option(
        "--cores",
        metavar="LIST",
        show_default=False,
        help="Job cores to check, as 0-3,6 [default: the ones runner up would give jobs].",
    ),
]


def job_cores(cores: str | None) -> frozenset[int]:
    """``--cores`` parsed, or the job cores of this process's core plan (all allowed cores
    when there is only one). Raises ValueError for a bad list."""
    from benchrunner.runner.cores import CorePlan
    from benchrunner.runner.tuning import parse_cpulist

    if cores is not None:
        parsed = parse_cpulist(cores)
        if not parsed:
            raise ValueError("--cores names no core")
        return parsed
    plan = CorePlan.detect()
    return plan.job_cores or frozenset(os.sched_getaffinity(0))


def preflight(
    cores: Cores = None,
    host_root: HostRoot = Path("/"),
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """What on this host perturbs measurements on the job cores: one line per check, with what
    it is, what it should be and the command that fixes it.

    Exit status: 0 fit (warnings allowed), 1 not fit (a check is bad), 3 nothing bad found but
    some checks could not be read, 2 usage error.
    """
    from benchrunner.runner.tuning import HostFs, describe, run_preflight

    fs = HostFs(host_root)
    ignored = frozenset({os.getpid()}) if host_root == Path("/") else frozenset()
    result = run_preflight(fs, job_cores(cores), ignored_pids=ignored)
    if as_json:
        output.print_json(result.to_json())
    else:
        for line in describe(result):
            output.out().print(line, markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(result.exit_code)


def restore(host_root: HostRoot = Path("/")) -> None:
    """Put back the host settings a tuned runner changed and could not restore (it was killed).
    `runner up` does the same at start. Exit 2 while a tuned runner runs, or if a setting
    cannot be restored (it stays in the state file)."""
    from benchrunner.runner.tuning import (
        HostFs,
        HostLockedError,
        RestoreError,
        StateFileError,
        restore_leftovers,
    )

    try:
        restored = restore_leftovers(HostFs(host_root))
    except (HostLockedError, RestoreError, StateFileError) as exc:
        output.error(str(exc))
        raise typer.Exit(EXIT_TUNING) from None
    if restored:
        output.note(f"restored: {', '.join(restored)}")
    else:
        output.note("nothing to restore")


def parse_tune_mode(value: str | None) -> str | None:
    if value is None or value in ("strict", "best-effort"):
        return value
    raise typer.BadParameter("give --tune alone (strict) or --tune=best-effort")


def run_tuned(
    host_root: Path, mode: str | None, run: Callable[[CorePlan, StopRequests], int]
) -> int:
    """Run ``run(cores, stops)`` on a host tuned as ``mode`` asks (None: untuned, but what a
    crashed tuned run left is restored first); ``cores`` is the runner's core plan, ``stops`` the
    stop signals received so far (and later). Exits ``EXIT_TUNING`` if the host cannot be tuned
    as asked."""
    from benchrunner.runner.cores import CorePlan
    from benchrunner.runner.signals import StopRequests, stop_signals_call
    from benchrunner.runner.tuning import (
        HostFs,
        HostLockedError,
        RestoreError,
        StateFileError,
        TuneMode,
        TuningRefusedError,
        core_split,
        tuned_host,
    )

    fs = HostFs(host_root)
    plan = CorePlan.detect()
    split = core_split(fs, job_cores(None))
    stops = StopRequests()
    try:
        # Before the host is touched: a stop signal must end the run through the agent's drain,
        # and so through the restore, never by its default action (the host left tuned).
        with (
            stop_signals_call(stops),
            tuned_host(fs, split, TuneMode(mode) if mode else None) as tuned,
        ):
            for outcome in tuned.outcomes:
                if outcome.applied:
                    output.note(f"tuned {outcome.setting}: {outcome.detail}")
                else:
                    output.warning(
                        f"cannot tune {outcome.setting} (going on untuned): {outcome.detail}"
                    )
            if tuned.job_cgroup is not None:
                plan = CorePlan(plan.housekeeping, plan.job_cores, fs.path(tuned.job_cgroup))
            return run(plan, stops)
    except (HostLockedError, TuningRefusedError, RestoreError, StateFileError) as exc:
        hint = (
            " (--tune=best-effort goes on untuned)" if isinstance(exc, TuningRefusedError) else ""
        )
        output.error(f"{exc}{hint}")
        raise typer.Exit(EXIT_TUNING) from None
