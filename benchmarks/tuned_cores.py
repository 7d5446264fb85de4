"""The runner's core plan for a benchmark, on a host tuned as ``runner up --tune=best-effort``
tunes it when asked: the job cores in a cpuset partition of their own (every other task moved
to the housekeeping cores), C-states held, and everything put back when the block ends. After
a crash, ``benchrunner runner restore`` puts the host back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchrunner.runner.cores import CorePlan
from benchrunner.runner.tuning import HostFs, TuneMode, core_split, tuned_host


@contextmanager
def job_core_plan(tune: bool) -> Iterator[CorePlan]:
    """The core plan, pinned to housekeeping; tuned for the block when ``tune``."""
    plan = CorePlan.detect()  # before tuning confines this process to the housekeeping cores
    if not tune:
        plan.pin_to_housekeeping()
        yield plan
        return
    fs = HostFs(Path("/"))
    with tuned_host(fs, core_split(fs, plan.job_cores), TuneMode.BEST_EFFORT) as tuned:
        for outcome in tuned.outcomes:
            state = "tuned" if outcome.applied else "not tuned"
            print(f"{state} {outcome.setting}: {outcome.detail}")
        if tuned.job_cgroup is not None:
            plan = CorePlan(plan.housekeeping, plan.job_cores, fs.path(tuned.job_cgroup))
        plan.pin_to_housekeeping()
        yield plan
