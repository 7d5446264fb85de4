"""A report's duet section in a terminal: how the rounds ran, then one row per benchmark and
measure with the contender/baseline ratio, its interval and the alert."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from benchrunner.api.alerts import DuetMargin
from benchrunner.api.reports import DuetResultAlert, Report, ReportDuet

ALERT_MARK = "ALERT"


def _active(alert: DuetResultAlert | None) -> bool:
    return alert is not None and (alert.status or "active") == "active"


def duet_alerts(report: Report) -> int:
    """The duet's alerts still active (a dismissed or silenced one no longer fails a step)."""
    if report.duet is None:
        return 0
    return sum(1 for r in report.duet.results if _active(r.alert))


def _percent(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.2f}%"


def _fraction(value: float | None) -> str:
    return "none" if value is None else f"{value * 100:g}%"


def margin_text(margin: DuetMargin | None) -> str:
    """``±5% (run)``, ``-2%/+10% (threshold 1a2b3c4d)``, ``±0% (none)``: the margins a duet
    result was judged with, and where they came from (``±none``: neither side alerts)."""
    if margin is None:
        return ""
    lower, upper = margin.lower, margin.upper
    if lower == upper:
        sides = f"±{_fraction(upper)}"
    else:  # a side without a margin raises nothing: left out
        given = [
            f"{sign}{_fraction(v)}" for sign, v in (("-", lower), ("+", upper)) if v is not None
        ]
        sides = "/".join(given)
    source = margin.source or ""
    if source == "threshold" and margin.threshold:
        source = f"threshold {margin.threshold[:8]}"
    return f"{sides} ({source})"


def _alert_cell(alert: DuetResultAlert | None) -> str:
    if alert is None:
        return ""
    if _active(alert):
        return f"{ALERT_MARK} ({alert.limit})"
    return f"{alert.limit} ({alert.status})"


def duet_rows(duet: ReportDuet) -> list[tuple[str, ...]]:
    """benchmark, measure, rounds, ratio, interval, change, margin, alert: as text."""
    return [
        (
            r.benchmark.name,
            r.measure.name,
            str(r.rounds),
            f"{r.ratio:.4f}",
            f"[{r.lower_value:.4f}, {r.upper_value:.4f}]",
            _percent(r.ratio),
            margin_text(r.margin),
            _alert_cell(r.alert),
        )
        for r in duet.results
    ]


def print_duet(console: Console, duet: ReportDuet) -> None:
    run_margin = duet.margin
    margin = "margin per threshold" if run_margin is None else f"margin {run_margin:g}"
    console.print(
        Text(
            f"duet: {duet.rounds} rounds, contender/baseline, "
            f"{duet.confidence * 100:g}% interval ({duet.method}, "
            f"{duet.resamples} resamples, seed {duet.seed}), {margin}",
            style="bold",
        ),
        soft_wrap=True,
    )
    console.print(Text(f"order (A baseline, B contender): {duet.order}"), soft_wrap=True)
    rows = duet_rows(duet)
    if not rows:
        console.print(Text("no paired results"))
        return
    table = Table(header_style="bold")
    columns = ("benchmark", "measure", "rounds", "ratio", "interval", "change", "margin", "alert")
    for column in columns:
        table.add_column(column, justify="left" if column in ("benchmark", "measure") else "right")
    for row in rows:
        active = row[-1].startswith(ALERT_MARK)
        table.add_row(*(Text(cell) for cell in row), style="red" if active else None)
    console.print(table)
