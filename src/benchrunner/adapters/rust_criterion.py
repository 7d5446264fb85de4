"""Criterion.rs console output (``cargo bench`` with Criterion's default report).

A result is a line ``<name>   time:   [<lower> <unit> <estimate> <unit> <upper> <unit>]``:
Criterion's point estimate of the time per iteration (its "typical" estimate: the regression
slope, or the mean under flat sampling; Bencher counts it as a mean) and the bounds of its
confidence interval, read as value, lower_value and upper_value in nanoseconds. When the name
is too long Criterion prints it on a line of its own, and the ``time:`` line starts with
blanks; the whole line before is then the name, as in Bencher. ``change:`` lines (percentages
against the last run), ``thrpt:`` lines, outlier counts and ``Benchmarking ...`` progress
lines are passed over.
"""

from __future__ import annotations

import re

from benchrunner.adapters.base import LATENCY, AdapterError, Measurement, Settings
from benchrunner.adapters.text_lines import (
    NUMBER,
    TIME_UNIT,
    check_average,
    check_benchmark_name,
    lines,
    read_number,
)
from benchrunner.adapters.values import to_nanoseconds

HARNESS = "rust_criterion"

_TIME = "time:"
_ESTIMATE = rf"({NUMBER})[ \t]++({TIME_UNIT})"
# What follows the last "time:" of a result line, up to the end of the line.
_INTERVAL = re.compile(rf"[ \t]++\[{_ESTIMATE}[ \t]++{_ESTIMATE}[ \t]++{_ESTIMATE}\]")


def _interval(tail: str, where: str) -> tuple[float, float, float] | None:
    """(lower, estimate, upper) in nanoseconds from the text after ``time:``, or None."""
    match = _INTERVAL.fullmatch(tail)
    if match is None:
        return None
    found: list[float] = []
    for index in (1, 3, 5):
        number = read_number(match.group(index), where)
        if number is None:
            return None
        found.append(to_nanoseconds(number, match.group(index + 1), where))
    lower, estimate, upper = found
    return lower, estimate, upper


def parse(text: str, settings: Settings) -> list[Measurement]:
    """Latency per ``time:`` line, in output order."""
    check_average(HARNESS, settings.average, "mean")
    found: list[Measurement] = []
    prior: str | None = None
    for number, line in enumerate(lines(text), start=1):
        previous, prior = prior, line
        # The interval holds no "time:", so a result's own "time:" is the line's last one.
        at = line.rfind(_TIME)
        if at <= 0 or line[at - 1] not in " \t":
            continue
        where = f"{HARNESS}: line {number}"
        interval = _interval(line[at + len(_TIME) :], where)
        if interval is None:
            continue
        name = line[:at].rstrip(" \t")
        if not name:
            if not previous:  # no line before, or an empty one: Bencher has no name to use
                continue
            name = previous
        check_benchmark_name(HARNESS, name)
        lower, estimate, upper = interval
        found.append(Measurement(name, LATENCY, estimate, lower, upper))
    if not found:
        raise AdapterError(
            f"{HARNESS}: no '<name>  time:  [<lower> <estimate> <upper>]' line found"
        )
    return found
