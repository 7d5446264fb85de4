"""airspeed velocity's console output (``asv run``, ``asv continuous``) -> latency per benchmark.

asv prints one line per finished benchmark::

    [ 42.86%] ··· benchmarks.TimeSuite.time_keys                      11.2±0.01μs

As Bencher's ``python_asv`` reads it: a line is a result when it is the progress in brackets,
one or more ``·``, the benchmark's name (up to the first space) and, as the rest of the line,
``<median>±<spread><unit>`` with a time unit (ps, ns, μs/µs/us, ms, s); lower/upper are the
median minus/plus the spread. Every other line is skipped: ``failed`` rows, memory (``2.42k``)
and tracking (``42``) values, times without a spread, times asv prints in minutes or hours,
parameterised benchmarks' tables, and asv's ASCII fallback (``~`` for ``±``). asv prints medians
only, so ``average`` ``mean`` reads nothing, as in Bencher.
"""

from __future__ import annotations

import re

from benchrunner.adapters.base import LATENCY, AdapterError, Measurement, Settings
from benchrunner.adapters.bounds import plus_minus
from benchrunner.adapters.values import MAX_BENCHMARK_NAME, check_name, to_nanoseconds

HARNESS = "python_asv"

# Linear: no two neighbouring parts can match the same character, so nothing backtracks.
_PROGRESS = re.compile(r"\[[ \t]*([0-9.,]+)%\][ \t]+·+[ \t]+")
_TIME = re.compile(r"([0-9.,]+)±([0-9.,]+)(ps|ns|μs|µs|us|ms|s)")


def parse(text: str, settings: Settings) -> list[Measurement]:
    """One measurement per result line, in printed order; AdapterError when there is none."""
    if settings.average == "mean":
        raise AdapterError(
            f"{HARNESS}: asv prints a median per benchmark, not a mean; "
            "settings.average 'mean' reads nothing from it (use 'median' or leave it unset)"
        )
    found = []
    for number, line in enumerate(text.split("\n"), start=1):
        measurement = _result(line.removesuffix("\r"), number)
        if measurement is not None:
            found.append(measurement)
    if not found:
        raise AdapterError(
            f"{HARNESS}: no result line '[ NN.NN%] ··· <benchmark>  <median>±<spread><unit>' found"
        )
    return found


def _result(line: str, number: int) -> Measurement | None:
    if "±" not in line:  # most lines of a long log: leave them at C speed
        return None
    progress = _PROGRESS.match(line)
    if progress is None or _decimal(progress.group(1)) is None:
        return None
    name_starts = progress.end()
    name_ends = line.find(" ", name_starts)
    if name_ends <= name_starts:
        return None
    after_name = line[name_ends:].lstrip(" \t")
    time = _TIME.fullmatch(after_name)
    if time is None:
        return None
    median_text, spread_text, unit = time.groups()
    median, spread = _decimal(median_text), _decimal(spread_text)
    if median is None or spread is None:
        return None
    name = line[name_starts:name_ends]
    check_name(name, "benchmark", MAX_BENCHMARK_NAME)
    where = f"{HARNESS}: line {number}"
    value = to_nanoseconds(median, unit, where)
    lower, upper = plus_minus(value, to_nanoseconds(spread, unit, where), where)
    return Measurement(name, LATENCY, value, lower, upper)


def _decimal(text: str) -> float | None:
    """A number as Bencher reads asv's (digits, points, thousands commas), or None when those
    characters do not make one. Too many digits give infinity, which to_nanoseconds refuses."""
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None
