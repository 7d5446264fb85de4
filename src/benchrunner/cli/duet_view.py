"""A report's duet section in a terminal: how the rounds ran, then one row per benchmark and
measure with the contender/baseline ratio, its interval and the alert."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

ALERT_MARK = "ALERT"


def duet_alerts(report: Mapping[str, Any]) -> int:
    duet = report.get("duet") or {}
    return sum(1 for r in duet.get("results") or [] if r.get("alert"))


def _percent(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.2f}%"


def duet_rows(duet: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """benchmark, measure, rounds, ratio, interval, change, alert: as text."""
    rows: list[tuple[str, ...]] = []
    for r in duet.get("results") or []:
        alert = r.get("alert")
        rows.append(
            (
                str(r["benchmark"]["name"]),
                str(r["measure"]["name"]),
                str(r["rounds"]),
                f"{r['ratio']:.4f}",
                f"[{r['lower_value']:.4f}, {r['upper_value']:.4f}]",
                _percent(r["ratio"]),
                f"{ALERT_MARK} ({alert['limit']})" if alert else "",
            )
        )
    return rows


def print_duet(console: Console, duet: Mapping[str, Any]) -> None:
    console.print(
        Text(
            f"duet: {duet['rounds']} rounds, contender/baseline, "
            f"{duet['confidence'] * 100:g}% interval ({duet['method']}, "
            f"{duet['resamples']} resamples, seed {duet['seed']}), margin {duet['margin']:g}",
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
    for column in ("benchmark", "measure", "rounds", "ratio", "interval", "change", "alert"):
        table.add_column(column, justify="left" if column in ("benchmark", "measure") else "right")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row), style="red" if row[-1] else None)
    console.print(table)
