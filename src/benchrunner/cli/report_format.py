"""A report's metrics as rows people read: value with units, baseline, change, limits, alert.

Pure formatting over the report of ``POST /v0/run`` and ``GET .../reports/{report}``
(``api.reports.Report``, Bencher's shape). The metrics of a project without thresholds have no
``threshold``/``boundary`` keys: every missing number shows as ``—``. Used by the terminal table
(``views.print_report``) and the pull-request comment (``comment_markdown``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from benchrunner.api.alerts import Alert, Boundary
from benchrunner.api.reports import Report, ReportProject
from benchrunner.api.thresholds import Named

MISSING = "—"
ALERT = "🚨"
_UNIT_SYMBOL = re.compile(r"\(([^()]+)\)\s*$")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


@dataclass(frozen=True)
class AlertMark:
    limit: str
    """``lower`` or ``upper``: which limit the value crossed."""
    status: str
    """``active``, ``dismissed`` or ``silenced``."""

    @property
    def active(self) -> bool:
        return self.status == "active"


@dataclass(frozen=True)
class MetricRow:
    """One metric of one iteration, with what its threshold made of it (if anything)."""

    iteration: int
    benchmark: str
    measure: str
    units: str
    value: float | None
    baseline: float | None = None
    lower_limit: float | None = None
    upper_limit: float | None = None
    alert: AlertMark | None = None
    metric: str | None = None
    """The metric's UUID, which its alert names."""

    @property
    def change(self) -> float | None:
        return change_percent(self.value, self.baseline)


# -- numbers --------------------------------------------------------------------------------


def _real(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def format_number(value: object) -> str:
    """``1234567`` -> ``1,234,567``; ``1234.5678`` -> ``1,234.57``; ``0.000123`` -> ``0.000123``;
    huge values in exponent form; ``—`` for anything that is not a number."""
    number = _real(value)
    if number is None:
        return MISSING
    if not math.isfinite(number):
        return str(number)
    magnitude = abs(number)
    if magnitude >= 1e15:
        return f"{number:.6g}"
    if number.is_integer():
        return f"{int(number):,}"
    if magnitude >= 1:
        return f"{number:,.2f}".rstrip("0").rstrip(".")
    return f"{number:.3g}"


def unit_symbol(units: object) -> str:
    """``nanoseconds (ns)`` -> ``ns``: Bencher's measures name their unit, then its symbol."""
    if not isinstance(units, str):
        return ""
    found = _UNIT_SYMBOL.search(units)
    return (found.group(1) if found else units).strip()


def with_units(value: object, units: str) -> str:
    text = format_number(value)
    symbol = unit_symbol(units)
    return f"{text} {symbol}" if symbol and text != MISSING else text


def change_percent(value: float | None, baseline: float | None) -> float | None:
    """How far ``value`` is from ``baseline``, in % of the baseline's size; None without a
    baseline or with a zero one."""
    if value is None or baseline is None or baseline == 0:
        return None
    return (value - baseline) / abs(baseline) * 100


def format_change(percent: float | None) -> str:
    """``+12.35%``, ``-3.10%``, ``+0.00%`` (never ``-0.00%``), ``—`` without a baseline."""
    if percent is None or not math.isfinite(percent):
        return MISSING
    if round(percent, 2) == 0:
        percent = 0.0
    return f"{percent:+,.2f}%"


def alert_cell(alert: AlertMark | None) -> str:
    if alert is None:
        return ""
    if alert.active:
        return f"{ALERT} {alert.limit}"
    return f"{alert.limit} ({alert.status})"


# -- the report's rows ----------------------------------------------------------------------


def _name(thing: ReportProject | Named) -> str:
    return thing.name or thing.slug or thing.uuid or MISSING


def _alert_mark(alert: Alert) -> AlertMark:
    return AlertMark(alert.limit or "?", alert.status or "active")


def active_alerts(report: Report) -> list[Alert]:
    """Alerts still open: a new report's alerts are all active; older ones may be dismissed."""
    return [a for a in report.alerts if (a.status or "active") == "active"]


def report_rows(report: Report) -> list[MetricRow]:
    """Every metric of every iteration, in the report's order, each with its alert if any.

    An alert belongs to the metric with its ``metric.uuid``.
    """
    by_metric = {a.metric.uuid: a for a in report.alerts if a.metric is not None}
    rows = []
    for iteration, benchmarks in enumerate(report.results):
        for bench in benchmarks:
            for entry in bench.measures:
                metric = entry.metric
                boundary = entry.boundary or Boundary()
                alert = by_metric.get(metric.uuid)
                rows.append(
                    MetricRow(
                        iteration=iteration,
                        benchmark=_name(bench.benchmark),
                        measure=_name(entry.measure),
                        units=entry.measure.units,
                        value=metric.value,
                        baseline=boundary.baseline,
                        lower_limit=boundary.lower_limit,
                        upper_limit=boundary.upper_limit,
                        alert=None if alert is None else _alert_mark(alert),
                        metric=metric.uuid or None,
                    )
                )
    return rows


def several_iterations(rows: Sequence[MetricRow]) -> bool:
    return any(row.iteration > 0 for row in rows)


TABLE_COLUMNS = (
    "benchmark",
    "measure",
    "value",
    "baseline",
    "change",
    "lower limit",
    "upper limit",
)


def row_cells(row: MetricRow) -> tuple[str, ...]:
    """The table cells of a row (after ``TABLE_COLUMNS``), the alert cell last."""
    return (
        row.benchmark,
        row.measure,
        with_units(row.value, row.units),
        with_units(row.baseline, row.units),
        format_change(row.change),
        with_units(row.lower_limit, row.units),
        with_units(row.upper_limit, row.units),
        alert_cell(row.alert),
    )


def alert_lines(report: Report) -> list[str]:
    """One sentence per alert: which metric crossed which limit and by how much, or, for a
    change point (an alert with ``change``), from which level to which the series stepped.
    """
    rows = {row.metric: row for row in report_rows(report) if row.metric}
    return [_alert_line(alert, rows) for alert in report.alerts]


def _alert_line(alert: Alert, rows: Mapping[str, MetricRow]) -> str:
    metric = alert.metric
    boundary = alert.boundary or Boundary()
    row = None if metric is None else rows.get(metric.uuid)
    units = row.units if row else alert.measure.units
    name = row.measure if row else _name(alert.measure)
    what = " ".join(part for part in (_name(alert.benchmark), name) if part)
    value = None if metric is None else metric.value
    change = alert.change
    if change is not None:
        before, after = change.before, change.after
        line = (
            f"{what}: changed from {with_units(before, units)} to {with_units(after, units)} "
            f"({format_change(change_percent(after, before))})"
        )
        if alert.report and alert.report != alert.raised_by:
            line += f" at report {alert.report}"
        if change.between is not None and change.between.text:
            line += f", {change.between.text}"
    else:
        limit = alert.limit or "?"
        baseline = boundary.baseline
        crossed = boundary.lower_limit if limit == "lower" else None
        if limit == "upper":
            crossed = boundary.upper_limit
        line = (
            f"{what}: {with_units(value, units)} is "
            f"{'below' if limit == 'lower' else 'above'} the {limit} limit "
            f"{with_units(crossed, units)} (baseline "
            f"{with_units(baseline, units)}, {format_change(change_percent(value, baseline))})"
        )
    status = alert.status or "active"
    return line if status == "active" else f"{line} [{status}]"


def bisect_lines(report: Report) -> list[str]:
    """One sentence per alert whose threshold starts a bisection (docs/how-to/bisect.md):
    the bisection's state, or why none started."""
    lines = []
    for alert in report.alerts:
        bisect = alert.bisect
        if bisect is None:
            continue
        what = " ".join(part for part in (_name(alert.benchmark), _name(alert.measure)) if part)
        if bisect.state == "skipped":
            lines.append(f"{what}: not bisected: {bisect.reason}")
        else:
            started = "started" if bisect.state == "started" else "starts shortly"
            lines.append(f"{what}: a bisection {started} (benchrunner alert show {alert.uuid})")
    return lines


def count_text(count: int) -> str:
    return f"{count} alert" if count == 1 else f"{count} alerts"


# -- Markdown -------------------------------------------------------------------------------


def md_text(text: str) -> str:
    """Plain text safe in a Markdown table cell: one line, no emphasis, links or pipes."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def md_code(text: str) -> str:
    """``text`` as an inline code span (names: no mentions, emphasis or HTML), pipes escaped
    for tables; the fence is longer than any run of backticks inside."""
    flat = " ".join(str(text).split())
    if not flat:
        return MISSING
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    escaped = flat.replace("|", "\\|")
    return f"{fence}{pad}{escaped}{pad}{fence}"


def _md_row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def comment_markdown(report: Report) -> str:
    """A pull-request comment: a heading naming project, branch and testbed, a table of every
    metric (value, change against the baseline, limits, an alert marker) and a summary line."""
    heading = (
        f"### Benchmarks: project {md_code(_name(report.project))}, "
        f"branch {md_code(_name(report.branch))}, "
        f"testbed {md_code(_name(report.testbed))}"
    )
    lines = [heading, ""]
    if report.uuid:
        lines += [f"Report {md_code(report.uuid)}", ""]
    if report.error:
        lines += [f"⚠️ The report has an error: {md_code(report.error)}", ""]
    rows = report_rows(report)
    if rows:
        iterations = several_iterations(rows)
        header = ["Benchmark", "Measure", "Value", "Baseline", "Change", "Lower limit"]
        header += ["Upper limit", "Alert"]
        align = ["---", "---", "---:", "---:", "---:", "---:", "---:", ":---:"]
        if iterations:
            header, align = ["Iteration", *header], ["---:", *align]
        lines += [_md_row(header), _md_row(align)]
        for row in rows:
            name, measure, *numbers, alert = row_cells(row)
            cells = [md_code(name), md_code(measure), *(md_text(n) for n in numbers)]
            cells.append(md_text(alert) if alert else "")
            lines.append(_md_row([str(row.iteration), *cells] if iterations else cells))
        lines.append("")
    else:
        lines += ["No metrics in this report.", ""]
    active = len(active_alerts(report))
    summary = f"**{count_text(active)}**"
    lines.append(f"{ALERT} {summary}" if active else summary)
    bisecting = bisect_lines(report)
    if bisecting:
        lines += ["", "Bisections:", *(f"- {md_text(line)}" for line in bisecting)]
    return "\n".join(lines) + "\n"
