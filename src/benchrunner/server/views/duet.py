"""A report's ``duet`` section: how the duet ran and was judged, and its paired ratios, apart
from the report's ``results`` (absolute metrics, of which a duet report has none)."""

from __future__ import annotations

from typing import Any

from benchrunner.api.alerts import DuetMargin
from benchrunner.api.reports import DuetResult, DuetResultAlert, ReportDuet
from benchrunner.api.thresholds import Named, NamedMeasure

DUET_STATISTIC = "contender / baseline"


def named(uuid: Any, name: str, slug: str) -> Named:
    """A named thing's reference (a benchmark, a measure, a branch ...), for every view."""
    return Named(uuid=str(uuid), name=name, slug=slug)


def named_measure(uuid: Any, name: str, slug: str, units: str) -> NamedMeasure:
    return NamedMeasure(uuid=str(uuid), name=name, slug=slug, units=units)


def duet_view(row: Any, results: list[Any]) -> ReportDuet:
    return ReportDuet(
        seed=row.seed,
        rounds=row.rounds,
        order=row.sequence,
        order_legend={"A": "baseline", "B": "contender"},
        statistic=DUET_STATISTIC,
        method=row.method,
        resamples=row.resamples,
        confidence=row.confidence,
        margin=row.margin,  # the run's; each result says which margin it was judged with
        results=[_result_view(r) for r in results],
        alerts=sum(1 for r in results if r.limit is not None),
    )


def _result_view(r: Any) -> DuetResult:
    return DuetResult(
        benchmark=named(r.benchmark_uuid, r.benchmark_name, r.benchmark_slug),
        measure=named_measure(r.measure_uuid, r.measure_name, r.measure_slug, r.measure_units),
        rounds=r.rounds,
        ratio=r.ratio,
        lower_value=r.lower_value,
        upper_value=r.upper_value,
        margin=margin_view(
            r.lower_margin, r.upper_margin, r.margin_source, r.margin_threshold_uuid
        ),
        verdict=duet_verdict(r.lower_value, r.upper_value, r.limit),
        alert=None
        if r.limit is None
        else DuetResultAlert(
            uuid=None if r.alert_uuid is None else str(r.alert_uuid),
            limit=r.limit,
            status=r.alert_status,
        ),
    )


def margin_view(
    lower: float | None, upper: float | None, source: str, threshold_uuid: Any
) -> DuetMargin:
    """The margins a duet result was judged with (fractions; null: that side raises nothing)
    and where they came from: ``run`` (its ``duet.margin``), ``threshold`` (the percentage
    threshold named, null once deleted) or ``none`` (0)."""
    return DuetMargin(
        lower=lower,
        upper=upper,
        source=source,
        threshold=None if threshold_uuid is None else str(threshold_uuid),
    )


def duet_verdict(lower: float, upper: float, limit: str | None) -> str:
    """What a ratio's interval says, in words: which side measured higher, if the interval
    shows one, and whether that stayed within the duet's margin (no alert)."""
    if lower > 1:
        found = "contender higher"
    elif upper < 1:
        found = "contender lower"
    else:
        return "no difference shown"
    return found if limit is not None else f"{found}, within the margin"
