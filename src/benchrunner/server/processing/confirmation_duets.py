"""A confirmation as a duet (docs/how-to/thresholds-alerts.md): when the version before a
runner job's crossing was measured by a runner job of the same kind (the same template with
other arguments, or another image digest, all else alike), the confirmation runs the new
version against that one, interleaved round by round on a runner of the job's spec, instead of
plain re-runs; the interval of their ratio then decides each held-back alert
(``detection.confirmation.duet_verdict``). An interval that straddles an alert's margin
(unknown) asks for another duet of the same sides and rounds (``another_duet``), while all the
confirmation's duets stay within ``MAX_DUET_ROUNDS``; the alerts are then judged on every duet's
interval pooled (``detection.duet.pooled_interval``, which says why pooled).
"""

from __future__ import annotations

import secrets
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.detection.confirmation import (
    DUET_ROUNDS_PER_RUN,
    MAX_DUET_ROUNDS,
    DuetVerdict,
    duet_margin,
    duet_verdict,
    same_margin,
)
from benchrunner.detection.duet import another_duet, pooled_interval
from benchrunner.protocol import JsonDuet, JsonDuetSide, JsonJobConfig
from benchrunner.server.store import confirmations, jobs, reports

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


@dataclass(frozen=True)
class Level:
    """The old level of a ``samples`` alert's step, for one benchmark and measure: a version
    measured there when its median lies on the old side of the step's midpoint (``before``:
    the window's center; ``after``: the report's median)."""

    benchmark_id: int
    measure_id: int
    before: float
    after: float

    def holds(self, values: Sequence[float]) -> bool:
        if not values:
            return False
        midpoint = (self.before + self.after) / 2
        median = statistics.median(values)
        return median < midpoint if self.after > self.before else median > midpoint


def baseline_job(
    conn: Connection, source: Any, contender: jobs.JobRow, level: Level | None = None
) -> jobs.JobRow | None:
    """The runner job of the newest earlier version on the report's (``source``) branch and
    testbed that ``contender`` may run a duet against, and, with ``level``, that measured at
    it (a step may have begun a run or two before the report: the versions since are at the
    new level, and a duet against one of them would find nothing); None when the newest such
    version's job ran something else, or there is none among the ``EARLIER`` reports."""
    processed = int(JobStatus.PROCESSED)
    for report_id in confirmations.baseline_reports(conn, source, processed, EARLIER):
        found = jobs.job_for_report(conn, report_id)
        if found is None or found.config.duet is not None:
            continue
        if level is not None:
            measured = confirmations.run_values(
                conn, [report_id], level.benchmark_id, level.measure_id
            )
            if not level.holds([v.value for v in measured.get(report_id, [])]):
                continue
        if duet_sides(contender.config, found.config) is None:
            return None
        return found
    return None


def level_of(held: Sequence[Any]) -> Level | None:
    """The old level of a report's held-back ``samples`` alert (the first, when several): one
    duet confirms all of a report's held-back alerts, so its baseline is chosen by that one;
    None when none is a ``samples`` alert."""
    for a in held:
        if a.test == "samples" and a.change_before is not None and a.change_after is not None:
            return Level(a.benchmark_id, a.measure_id, a.change_before, a.change_after)
    return None


def can_run_as_duet(conn: Connection, contender: jobs.JobRow, level: Level) -> bool:
    """Whether a confirmation of ``contender``'s report, holding back a ``samples`` alert whose
    step is ``level``, would run as a duet: the baseline ``_duet_of`` would choose exists."""
    source = reports.report_row(conn, contender.report_id)
    return baseline_job(conn, source, contender, level) is not None


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
    alert is then judged by its own, ``judge_by_duets``); None when that is not below 1, which
    a duet's margin must be (a percentage boundary of 100 % or more): plain re-runs judge it."""
    margin = min(_own_margin(a) for a in held)
    return margin if margin < 1 else None


def _own_margin(held: Any) -> float:
    return duet_margin(
        held.limit, held.test, held.lower_boundary, held.upper_boundary, held.min_magnitude
    )


def ran_as_duets(conn: Connection, run_reports: Sequence[int]) -> bool:
    """Whether a confirmation's runs were a duet (their plain values are the baseline's and the
    contender's rounds together, never to be judged as re-runs)."""
    for report_id in run_reports:
        found = jobs.job_for_report(conn, report_id)
        if found is not None and found.config.duet is not None:
            return True
    return False


@dataclass(frozen=True)
class DuetJudgment:
    """What a confirmation's duets say of one held-back alert, pooled."""

    verdict: DuetVerdict
    rounds: int
    """The paired rounds of all the duets that measured its metric."""
    told: str
    """``unknown after 20 rounds (2 duets), ratio 1.095 [1.027, 1.168], margin 10.0%``."""


def judge_by_duets(conn: Connection, run_reports: Sequence[int], held: Any) -> DuetJudgment | None:
    """A held-back alert judged by its own margin on the confirmation's duets pooled; None when
    no duet measured its metric."""
    found = confirmations.run_duet_results(conn, run_reports, held.benchmark_id, held.measure_id)
    if not found:
        return None
    # Judged after each duet, up to as many duets as MAX_DUET_ROUNDS holds of the rounds each
    # is given (those it measured may be fewer).
    first = jobs.job_for_report(conn, found[0].report_id)
    given = first.config.iter if first is not None else int(found[0].rounds)
    looks = max(1, MAX_DUET_ROUNDS // max(1, given))
    ratio, lower, upper = pooled_interval(
        [(r.ratio, r.lower_value, r.upper_value) for r in found],
        confidence=found[0].confidence,
        looks=looks,
    )
    margin = _own_margin(held)
    within = same_margin(held.test, margin, held.min_magnitude)
    verdict = duet_verdict(held.limit, lower, upper, margin, within)
    rounds = sum(int(r.rounds) for r in found)
    duets = f" ({len(found)} duets)" if len(found) > 1 else ""
    told = (
        f"{verdict} after {rounds} rounds{duets}, ratio {ratio:.3f} [{lower:.3f}, {upper:.3f}], "
        f"margin {margin:.1%}" + (f", same within {within:.1%}" if within != margin else "")
    )
    return DuetJudgment(verdict, rounds, told)


def more_rounds(
    conn: Connection, run_reports: Sequence[int], held: Sequence[Any], rounds_run: int, rounds: int
) -> str | None:
    """Why another duet of ``rounds`` runs, when one should: some held-back alert's duets so far
    (``rounds_run`` rounds together) answered unknown, and another keeps them all within
    ``MAX_DUET_ROUNDS``; None when none should (each alert is then decided as it stands)."""
    unknown = [
        (a, judged)
        for a in held
        if (judged := judge_by_duets(conn, run_reports, a)) is not None
        and judged.verdict == "unknown"
    ]
    if not unknown or not another_duet(unknown[0][1].verdict, rounds_run + rounds, MAX_DUET_ROUNDS):
        return None
    said = "; ".join(f"{a.benchmark_name} ({a.measure_name}): {j.told}" for a, j in unknown)
    return f"another {rounds} rounds, as the duets so far left it unknown: {said}"
