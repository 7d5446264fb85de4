"""A report's raw samples in a terminal (``benchrunner report show --samples``): one row per
metric with how many samples it holds, their spread, and whether some were cut."""

from __future__ import annotations

import statistics

from rich.table import Table

from benchrunner.api.reports import Report
from benchrunner.cli import output
from benchrunner.cli.report_format import format_number


def sample_rows(report: Report) -> list[tuple[str, ...]]:
    """``(iteration, benchmark, measure, count, min, median, max, values)`` of each measure
    entry that carries ``samples``."""
    rows: list[tuple[str, ...]] = []
    for iteration in report.results:
        for bench in iteration:
            for entry in bench.measures:
                found = entry.samples
                if found is None:
                    continue
                values = found.values
                shown = ", ".join(format_number(v) for v in values[:8])
                if len(values) > 8:
                    shown += ", …"
                if found.cut:
                    shown += f" (cut: {len(values)} of {found.count} kept)"
                rows.append(
                    (
                        str(bench.iteration),
                        bench.benchmark.name,
                        entry.measure.name,
                        str(found.count),
                        format_number(found.min),
                        format_number(statistics.median(values)) if values else "-",
                        format_number(found.max),
                        shown,
                    )
                )
    return rows


def print_samples(report: Report) -> None:
    rows = sample_rows(report)
    if not rows:
        output.note("no samples")
        return
    table = Table(title="samples")
    for column in ("iter", "benchmark", "measure", "count", "min", "median", "max", "values"):
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    output.out().print(table)
