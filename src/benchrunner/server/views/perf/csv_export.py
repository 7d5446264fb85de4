"""A perf query as CSV: one row per point, every series in one table (spreadsheet-friendly)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from benchrunner.server.views.perf.series import Series

COLUMNS = (
    "branch",
    "testbed",
    "benchmark",
    "measure",
    "units",
    "report",
    "start_time",
    "end_time",
    "version",
    "hash",
    "value",
    "lower_value",
    "upper_value",
    "baseline",
    "lower_limit",
    "upper_limit",
    "alert",
    "alert_status",
)

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: object) -> str:
    """Text as a spreadsheet should show it: numbers as they are, and names that a spreadsheet
    would run as a formula (``=cmd|...``, CSV injection) quoted with a leading apostrophe."""
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    text = str(value)
    if text.startswith(_FORMULA_START):
        return "'" + text
    return text


def perf_csv(series: Sequence[Series]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for s in series:
        for p in s.points:
            writer.writerow(
                [
                    _cell(v)
                    for v in (
                        s.branch,
                        s.testbed,
                        s.benchmark,
                        s.measure,
                        s.units,
                        p.report,
                        p.start_time.isoformat().replace("+00:00", "Z"),
                        p.end_time.isoformat().replace("+00:00", "Z"),
                        p.version,
                        p.hash,
                        p.value,
                        p.lower_value,
                        p.upper_value,
                        p.baseline,
                        p.lower_limit,
                        p.upper_limit,
                        p.alert_limit,
                        p.alert_status,
                    )
                ]
            )
    return out.getvalue()
