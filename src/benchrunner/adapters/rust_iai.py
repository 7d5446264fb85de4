"""Iai's console output (Cachegrind counts of one run of each benchmark).

A result is six consecutive lines: the benchmark name, then ``Instructions:``, ``L1
Accesses:``, ``L2 Accesses:``, ``RAM Accesses:`` and ``Estimated Cycles:``, each with an integer
count and, from the second run on, the change against the last run (``(+1.5%)``, ``(-2%)``,
``(No change)``), which is passed over. Each count becomes a measurement under Bencher's Iai
measure slugs, with no lower or upper value (Iai runs a benchmark once).
"""

from __future__ import annotations

import re

from benchrunner.adapters.base import AdapterError, Measurement, Settings
from benchrunner.adapters.text_lines import (
    INTEGER,
    NUMBER,
    check_average,
    check_benchmark_name,
    is_number,
    lines,
)
from benchrunner.adapters.values import number

HARNESS = "rust_iai"

MEASURES: tuple[tuple[str, str], ...] = (
    ("Instructions", "instructions"),
    ("L1 Accesses", "l1-accesses"),
    ("L2 Accesses", "l2-accesses"),
    ("RAM Accesses", "ram-accesses"),
    ("Estimated Cycles", "estimated-cycles"),
)
"""Iai's label and Bencher's measure slug, in the order Iai prints them."""

_U64_MAX = 2**64 - 1


def _count_pattern(label: str) -> re.Pattern[str]:
    return re.compile(
        rf"[ \t]*+{re.escape(label)}:[ \t]++({INTEGER})"
        rf"(?:[ \t]++\((?:No change|[+-]({NUMBER})%)\))?"
    )


_COUNTS = tuple(_count_pattern(label) for label, _ in MEASURES)


def _count(pattern: re.Pattern[str], line: str) -> int | None:
    """The count on a line of this label, or None when the line is not one (Bencher reads the
    count as a u64 and the change as a decimal; a line where either fails is not a result)."""
    match = pattern.fullmatch(line)
    if match is None:
        return None
    change = match.group(2)
    if change is not None and not is_number(change):
        return None
    digits = match.group(1).replace(",", "")
    if not digits:
        return None
    count = int(digits)
    return count if count <= _U64_MAX else None


def _result_at(window: list[str]) -> list[int] | None:
    counts: list[int] = []
    for pattern, line in zip(_COUNTS, window[1:], strict=True):
        count = _count(pattern, line)
        if count is None:
            return None
        counts.append(count)
    return counts


def parse(text: str, settings: Settings) -> list[Measurement]:
    """Five measurements per benchmark, benchmarks in output order."""
    check_average(HARNESS, settings.average, None)
    all_lines = list(lines(text))
    found: list[Measurement] = []
    for start in range(len(all_lines) - len(MEASURES)):
        name = all_lines[start]
        # Cheap first test: the line after a name must be an "Instructions:" line.
        if not name or "Instructions:" not in all_lines[start + 1]:
            continue
        counts = _result_at(all_lines[start : start + len(MEASURES) + 1])
        if counts is None:
            continue
        check_benchmark_name(HARNESS, name)
        found.extend(
            Measurement(name, slug, number(count, f"{HARNESS}: {name!r} {label}"))
            for (label, slug), count in zip(MEASURES, counts, strict=True)
        )
    if not found:
        raise AdapterError(
            f"{HARNESS}: no benchmark found (a name line followed by Instructions, L1 Accesses, "
            "L2 Accesses, RAM Accesses and Estimated Cycles lines)"
        )
    return found
