"""Dart's ``benchmark_harness`` (its default ``PrintEmitter``) console output.

A result is a line ``<name>(RunTime): <microseconds> us.``: the harness's mean time per run of
the benchmark's ``exercise()``, in microseconds, becomes a latency in nanoseconds with no
lower or upper value. The name is everything before the first ``(RunTime):``, trimmed. Other
lines are passed over.
"""

from __future__ import annotations

import re

from benchrunner.adapters.base import LATENCY, AdapterError, Measurement, Settings
from benchrunner.adapters.text_lines import (
    NUMBER,
    check_average,
    check_benchmark_name,
    lines,
    read_number,
)
from benchrunner.adapters.values import to_nanoseconds

HARNESS = "dart_benchmark_harness"

_MARK = "(RunTime):"
_TIME = re.compile(rf"[ \t]*+({NUMBER})[ \t]++us\.[ \t]*+")


def parse(text: str, settings: Settings) -> list[Measurement]:
    """Latency per ``(RunTime):`` line, in output order."""
    check_average(HARNESS, settings.average, "mean")
    found: list[Measurement] = []
    for number, line in enumerate(lines(text), start=1):
        at = line.find(_MARK)
        if at < 0:
            continue
        match = _TIME.fullmatch(line, at + len(_MARK))
        if match is None:
            continue
        where = f"{HARNESS}: line {number}"
        micros = read_number(match.group(1), where)
        if micros is None:
            continue
        name = line[:at].strip()
        if not name:  # Bencher passes over a result without a name
            continue
        check_benchmark_name(HARNESS, name)
        found.append(Measurement(name, LATENCY, to_nanoseconds(micros, "us", where)))
    if not found:
        raise AdapterError(f"{HARNESS}: no '<name>(RunTime): <n> us.' line found")
    return found
