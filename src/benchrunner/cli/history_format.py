"""Thresholds, alerts and perf series as rows people read, and the perf command's times.

Pure: thresholds, alerts and perf series (``api``'s answer models) in, strings out. Numbers
and units are written as the report table writes them (``report_format``); anything missing
shows as ``—``.
"""

from __future__ import annotations

import datetime as dt

from benchrunner.api.alerts import Alert, AlertDuet, Boundary
from benchrunner.api.perf import PerfBoundary, PerfPoint, PerfSeries, PerfVersion
from benchrunner.api.thresholds import Named, Threshold, ThresholdModel
from benchrunner.cli.report_format import (
    MISSING,
    AlertMark,
    alert_cell,
    format_number,
    unit_symbol,
    with_units,
)

_PARAMETERS = (
    ("lower_boundary", "lower"),
    ("upper_boundary", "upper"),
    ("min_sample_size", "min"),
    ("max_sample_size", "max"),
    ("window", "window"),
    ("max_pvalue", "max p"),
    ("min_magnitude", "min magnitude"),
)
"""A model's parameters in the order ``model_text`` shows them, with their short names."""


def named(thing: Named | None) -> str:
    return MISSING if thing is None else thing.name or thing.slug or thing.uuid or MISSING


def model_text(model: ThresholdModel | None) -> str:
    """``percentage: upper 0.1, min 2, window 3600 s``: the test, then the parameters set."""
    if model is None:
        return MISSING
    parts = []
    for key, label in _PARAMETERS:
        value = getattr(model, key)
        if value is None:
            continue
        text = format_number(value)
        parts.append(f"{label} {text} s" if key == "window" else f"{label} {text}")
    test = model.test or MISSING
    return f"{test}: {', '.join(parts)}" if parts else test


def threshold_scope(threshold: Threshold) -> str:
    """The benchmark an override applies to, or ``all benchmarks``."""
    return "all benchmarks" if threshold.benchmark is None else named(threshold.benchmark)


def threshold_row(threshold: Threshold) -> tuple[str, ...]:
    return (
        threshold.uuid,
        named(threshold.branch),
        named(threshold.testbed),
        named(threshold.measure),
        threshold_scope(threshold),
        model_text(threshold.model),
    )


THRESHOLD_COLUMNS = ("uuid", "branch", "testbed", "measure", "benchmark", "model")


def duet_of(alert: Alert) -> AlertDuet | None:
    """A duet alert's interval and margin; None for a boundary alert."""
    return alert.duet if alert.kind == "duet" else None


def _ratio(value: float | None) -> str:
    return MISSING if value is None else f"{value:.4f}"


def duet_value(duet: AlertDuet) -> str:
    """``ratio 1.0312 [1.0200, 1.0400]``: a duet alert's contender/baseline ratio."""
    return f"ratio {_ratio(duet.ratio)} [{_ratio(duet.lower_value)}, {_ratio(duet.upper_value)}]"


def crossed_limit(alert: Alert) -> str:
    """``upper 110 ns``: which limit the value crossed, and that limit's value; for a duet,
    ``upper 1.05 (duet, run)``: 1 + the margin, and where the margin came from."""
    limit = alert.limit or MISSING
    duet = duet_of(alert)
    if duet is not None:
        margin = duet.margin
        side = {"lower": margin.lower, "upper": margin.upper}.get(limit)
        edge = None if side is None else (1 - side if limit == "lower" else 1 + side)
        return f"{limit} {_ratio(edge)} (duet, {margin.source or MISSING})"
    boundary = alert.boundary or Boundary()
    value = {"lower": boundary.lower_limit, "upper": boundary.upper_limit}.get(limit)
    return f"{limit} {with_units(value, alert.measure.units)}" if value is not None else limit


def alert_row(alert: Alert) -> tuple[str, ...]:
    where = (
        alert.uuid,
        alert.status or MISSING,
        named(alert.benchmark),
        named(alert.measure),
        named(alert.branch),
        named(alert.testbed),
    )
    duet = duet_of(alert)
    if duet is not None:  # a ratio against 1, not a value against a baseline
        return (*where, duet_value(duet), "duet: 1", crossed_limit(alert))
    units = alert.measure.units
    value = with_units(None if alert.metric is None else alert.metric.value, units)
    baseline = with_units(None if alert.boundary is None else alert.boundary.baseline, units)
    return (*where, value, baseline, crossed_limit(alert))


ALERT_COLUMNS = (
    "uuid",
    "status",
    "benchmark",
    "measure",
    "branch",
    "testbed",
    "value",
    "baseline",
    "crossed",
)


def series_title(series: PerfSeries) -> str:
    """``sort · latency (ns) · branch main · testbed ci``."""
    symbol = unit_symbol(series.measure.units)
    measure = named(series.measure) + (f" ({symbol})" if symbol else "")
    return (
        f"{named(series.benchmark)} · {measure} · branch {named(series.branch)}"
        f" · testbed {named(series.testbed)}"
    )


def version_text(version: PerfVersion | None) -> str:
    """``3 (abc1234)``: the branch version and its hash, shortened as git does."""
    if version is None:
        return MISSING
    text = str(version.number)
    return f"{text} ({version.hash[:7]})" if version.hash else text


def _alert_mark(point: PerfPoint) -> str:
    if point.alert is None:
        return ""
    return alert_cell(AlertMark(str(point.alert.limit), point.alert.status))


def perf_rows(series: PerfSeries) -> list[tuple[str, ...]]:
    """One row per point, oldest first: time, version, value, baseline, limits, alert."""
    units = series.measure.units
    rows: list[tuple[str, ...]] = []
    for point in series.metrics:
        boundary = point.boundary or PerfBoundary()
        rows.append(
            (
                _time(point.start_time),
                version_text(point.version),
                with_units(point.metric.value, units),
                with_units(boundary.baseline, units),
                with_units(boundary.lower_limit, units),
                with_units(boundary.upper_limit, units),
                _alert_mark(point),
            )
        )
    return rows


PERF_COLUMNS = ("time (UTC)", "version", "value", "baseline", "lower limit", "upper limit", "alert")


def _time(value: object) -> str:
    if not isinstance(value, str):
        return MISSING
    try:
        return dt.datetime.fromisoformat(value).strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return value


def parse_time(text: str, *, end: bool = False) -> dt.datetime:
    """``--start``/``--end``: an ISO 8601 time (UTC unless it says otherwise) or a date. A date
    starts at its midnight; as ``end`` it covers its whole day (up to its last millisecond).

    Raises ValueError naming what could not be read.
    """
    text = text.strip()
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        pass
    else:
        start = dt.datetime.combine(day, dt.time(), dt.UTC)
        return start + dt.timedelta(days=1, milliseconds=-1) if end else start
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{text!r} is not a date (2026-01-31) or an ISO 8601 time (2026-01-31T12:00:00Z)"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)
