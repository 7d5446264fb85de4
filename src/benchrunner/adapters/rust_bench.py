"""libtest's ``cargo bench`` (``#[bench]``, nightly Rust) console output.

A result is a line ``test <name> ... bench: <n> <unit>/iter (+/- <spread>)``; every other line
(``ignored``, ``FAILED``, panics, ``Running`` headers between targets, summaries) is passed
over, as Bencher does. ``<n>`` is libtest's median of the per-iteration times; ``lower_value``
and ``upper_value`` are ``<n>`` minus and plus ``<spread>`` (libtest's max - min of the
samples), in nanoseconds.
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

HARNESS = "rust_bench"

# The name runs to the first space (possessive, so it cannot give back a tab to the separator).
_RESULT = re.compile(
    rf"test[ \t]++([^ ]++)[ \t]++\.\.\.[ \t]++bench:[ \t]++({NUMBER})[ \t]++({TIME_UNIT})/iter"
    rf"[ \t]++\(\+/-[ \t]++({NUMBER})\)"
)


def parse(text: str, settings: Settings) -> list[Measurement]:
    """Latency per ``test ... bench:`` line, in output order (targets one after another)."""
    check_average(HARNESS, settings.average, "median")
    found: list[Measurement] = []
    for number, line in enumerate(lines(text), start=1):
        if not line.startswith("test"):
            continue
        match = _RESULT.fullmatch(line)
        if match is None:
            continue
        name, median, unit, spread = match.groups()
        where = f"{HARNESS}: line {number}"
        value = read_number(median, where)
        deviation = read_number(spread, where)
        if value is None or deviation is None:
            continue
        check_benchmark_name(HARNESS, name)
        value = to_nanoseconds(value, unit, where)
        deviation = to_nanoseconds(deviation, unit, where)
        found.append(Measurement(name, LATENCY, value, value - deviation, value + deviation))
    if not found:
        raise AdapterError(f"{HARNESS}: no 'test <name> ... bench: <n> ns/iter' line found")
    return found
