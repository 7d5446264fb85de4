"""``go test -bench`` output, plain or as ``go test -json`` events (see ``go_test2json``).

A result is a line ``Benchmark<name>[-<procs>] <iterations> <n> ns/op`` with, optionally, more
``<number> <unit>`` columns after it (``MB/s``, ``B/op``, ``allocs/op`` with ``-benchmem``, and
``b.ReportMetric``'s own). As Bencher reads it: a ``latency`` of ``<n>`` (Go's mean time per
operation) in nanoseconds, under the name as printed, ``-<procs>`` suffix included; the other
columns are not measures in Bencher and are not read; every other line is passed over. Go
reports a mean only, so ``settings.average`` ``median`` finds nothing (as in Bencher).

Beyond Bencher: the ``go test -json`` stream is read too, recognised by its shape.
"""

from __future__ import annotations

import re

from benchrunner.adapters.base import LATENCY, AdapterError, Measurement, Settings
from benchrunner.adapters.console_patterns import BLANK, INTEGER, NUMBER, TIME_UNIT
from benchrunner.adapters.go_test2json import console_lines
from benchrunner.adapters.tail_tokens import decimal
from benchrunner.adapters.values import MAX_BENCHMARK_NAME, check_name, to_nanoseconds

HARNESS = "go_bench"

# Anchored at the start and possessive throughout, so a line is matched in one pass.
_RESULT = re.compile(
    rf"(Benchmark[^ \t]*+){BLANK}++{INTEGER}{BLANK}++({NUMBER}){BLANK}++({TIME_UNIT})/op"
    rf"(?:{BLANK}++({NUMBER}){BLANK}.*+)?+"
)


def _measurement(line: str, where: str) -> Measurement | None:
    match = _RESULT.fullmatch(line)
    if match is None:
        return None
    name, per_op, unit, next_column = match.groups()
    value = decimal(per_op, where)
    if value is None or (next_column is not None and decimal(next_column, where) is None):
        return None
    check_name(name, "benchmark", MAX_BENCHMARK_NAME)
    return Measurement(name, LATENCY, to_nanoseconds(value, unit, where))


def parse(text: str, settings: Settings) -> list[Measurement]:
    """Latency per benchmark result line, in the order ``go test`` printed them."""
    if settings.average == "median":
        raise AdapterError(
            f"{HARNESS}: go test prints a mean (ns/op) per benchmark, no median; "
            "settings.average 'median' cannot be read from it (use 'mean' or leave it unset)"
        )
    found: list[Measurement] = []
    for number, line in enumerate(console_lines(text), start=1):
        if line.startswith("Benchmark"):
            measurement = _measurement(line, f"{HARNESS}: line {number}")
            if measurement is not None:
                found.append(measurement)
    if not found:
        raise AdapterError(
            f"{HARNESS}: no 'Benchmark<name> <iterations> <n> ns/op' line found "
            "(in go test -bench output, or in the Output of go test -json events)"
        )
    return found
