"""A confirmation as a duet (docs/how-to/thresholds-alerts.md): when the version before a
runner job's crossing was measured by a runner job of the same kind (the same template with
other arguments, or another image digest, all else alike), the confirmation runs the new
version against that one, interleaved round by round on a runner of the job's spec, instead of
plain re-runs; the interval of their ratio then decides each held-back alert
(``detection.confirmation.duet_verdict``).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.detection.confirmation import (
    DUET_ROUNDS_PER_RUN,
    Outcome,
    decide_duet,
    duet_margin,
    duet_verdict,
)
from benchrunner.protocol import JsonDuet, JsonDuetSide, JsonJobConfig
from benchrunner.server.store import confirmations, jobs

RESAMPLES = 4000
EARLIER = 20
"""Earlier reports looked through for the baseline's job (duet jobs among them are passed)."""

_UNSHARED = {"digest": None, "args": None, "iter": 1, "backdate": None, "duet": None}
"""What may differ between the two versions' jobs (or is not the run itself)."""


def duet_sides(
    contender: JsonJobConfig, baseline: JsonJobConfig
) -> tuple[JsonDuetSide, JsonDuetSide] | None:
    """The duet's (baseline, contender) sides when the two jobs ran the same thing but for
    their arguments or image digest, and those differ; else None (nothing to pair)."""
    if contender.duet is not None or baseline.duet is not None:
        return None
    if contender.model_copy(update=_UNSHARED) != baseline.model_copy(update=_UNSHARED):
        return None
    if contender.template is not None:
        if contender.args == baseline.args:
            return None
        return JsonDuetSide(args=baseline.args or {}), JsonDuetSide(args=contender.args or {})
    if contender.digest is None or baseline.digest is None or contender.digest == baseline.digest:
        return None
    return JsonDuetSide(digest=baseline.digest), JsonDuetSide(digest=contender.digest)


def baseline_job(conn: Connection, source: Any, contender: jobs.JobRow) -> jobs.JobRow | None:
    """The runner job of the newest earlier version on the report's (``source``) branch and
    testbed that ``contender`` may run a duet against; None when that version's job ran
    something else, or there is none."""
    processed = int(JobStatus.PROCESSED)
    for report_id in confirmations.baseline_reports(conn, source, processed, EARLIER):
        found = jobs.job_for_report(conn, report_id)
        if found is None or found.config.duet is not None:
            continue
        if duet_sides(contender.config, found.config) is None:
            return None
        return found
    return None


def duet_config(
    contender: JsonJobConfig, baseline: JsonJobConfig, runs: int, margin: float
) -> JsonJobConfig | None:
    """The confirmation duet's job config: ``runs`` times ``DUET_ROUNDS_PER_RUN`` rounds of the
    baseline's and the contender's version, judged against ``margin``."""
    sides = duet_sides(contender, baseline)
    if sides is None:
        return None
    duet = JsonDuet(
        baseline=sides[0],
        contender=sides[1],
        seed=secrets.randbits(63),
        resamples=RESAMPLES,
        margin=margin,
    )
    return contender.model_copy(
        update={
            "iter": runs * DUET_ROUNDS_PER_RUN,
            "duet": duet,
            "args": sides[0].args,
            "digest": sides[0].digest,
            "backdate": None,
        }
    )


def held_margin(held: Sequence[Any]) -> float | None:
    """One duet for all of a report's held-back alerts: the smallest of their margins (each
    alert is then judged by its own, ``decide_by_duet``); None when that is not below 1, which
    a duet's margin must be (a percentage boundary of 100 % or more): plain re-runs judge it."""
    margin = min(_own_margin(a) for a in held)
    return margin if margin < 1 else None


def _own_margin(held: Any) -> float:
    return duet_margin(held.limit, held.test, held.lower_boundary, held.upper_boundary)


def ran_as_duets(conn: Connection, run_reports: Sequence[int]) -> bool:
    """Whether a confirmation's runs were a duet (their plain values are the baseline's and the
    contender's rounds together, never to be judged as re-runs)."""
    for report_id in run_reports:
        found = jobs.job_for_report(conn, report_id)
        if found is not None and found.config.duet is not None:
            return True
    return False


def decide_by_duet(
    conn: Connection, run_reports: list[int], held: Any
) -> tuple[Outcome, str] | None:
    """A held-back alert's outcome from the confirmation's duet and the verdict that gave it
    (``different, ratio 1.52 [1.48, 1.57], margin 2%``); None when no duet measured its
    metric."""
    found = confirmations.run_duet_results(conn, run_reports, held.benchmark_id, held.measure_id)
    if not found:
        return None
    result = found[-1]
    margin = _own_margin(held)
    verdict = duet_verdict(held.limit, result.lower_value, result.upper_value, margin)
    told = (
        f"{verdict}, ratio {result.ratio:.3f} [{result.lower_value:.3f}, "
        f"{result.upper_value:.3f}], margin {margin:.1%}"
    )
    return decide_duet(verdict), told
