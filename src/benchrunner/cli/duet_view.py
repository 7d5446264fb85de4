"""A report's duet section in a terminal: how the rounds ran, then one row per benchmark and
measure with the contender/baseline ratio, its interval and the alert."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from benchrunner.api.reports import Report

ALERT_MARK = "ALERT"


def _active(alert: object) -> bool:
    return isinstance(alert, Mapping) and (alert.get("status") or "active") == "active"


def duet_alerts(report: Report) -> int:
    """The duet's alerts still active (a dismissed or silenced one no longer fails a step)."""
    duet = report.duet or {}
    return sum(1 for r in duet.get("results") or [] if _active(r.get("alert")))


def _percent(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.2f}%"


def _fraction(value: object) -> str:
    return "none" if not isinstance(value, int | float) else f"{value * 100:g}%"


def margin_text(margin: object) -> str:
    """``±5% (run)``, ``-2%/+10% (threshold 1a2b3c4d)``, ``±0% (none)``: the margins a duet
    result was judged with, and where they came from (``±none``: neither side alerts)."""
    if not isinstance(margin, Mapping):
        return ""
    lower, upper = margin.get("lower"), margin.get("upper")
    if lower == upper:
        sides = f"±{_fraction(upper)}"
    else:  # a side without a margin raises nothing: left out
        given = [
            f"{sign}{_fraction(v)}" for sign, v in (("-", lower), ("+", upper)) if v is not None
        ]
        sides = "/".join(given)
    source = str(margin.get("source") or "")
    if source == "threshold" and margin.get("threshold"):
        source = f"threshold {str(margin['threshold'])[:8]}"
    return f"{sides} ({source})"


def _alert_cell(alert: object) -> str:
    if not isinstance(alert, Mapping):
        return ""
    if _active(alert):
        return f"{ALERT_MARK} ({alert['limit']})"
    return f"{alert['limit']} ({alert.get('status')})"


def duet_rows(duet: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """benchmark, measure, rounds, ratio, interval, change, margin, alert: as text."""
    rows: list[tuple[str, ...]] = []
    for r in duet.get("results") or []:
        rows.append(
            (
                str(r["benchmark"]["name"]),
                str(r["measure"]["name"]),
                str(r["rounds"]),
                f"{r['ratio']:.4f}",
                f"[{r['lower_value']:.4f}, {r['upper_value']:.4f}]",
                _percent(r["ratio"]),
                margin_text(r.get("margin")),
                _alert_cell(r.get("alert")),
            )
        )
    return rows


def print_duet(console: Console, duet: Mapping[str, Any]) -> None:
    run_margin = duet.get("margin")
    margin = "margin per threshold" if run_margin is None else f"margin {run_margin:g}"
    console.print(
        Text(
            f"duet: {duet['rounds']} rounds, contender/baseline, "
            f"{duet['confidence'] * 100:g}% interval ({duet['method']}, "
            f"{duet['resamples']} resamples, seed {duet['seed']}), {margin}",
            style="bold",
        ),
        soft_wrap=True,
    )
    console.print(Text(f"order (A baseline, B contender): {duet['order']}"), soft_wrap=True)
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
