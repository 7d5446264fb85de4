"""Catch2's console benchmark table (v2 and v3, ``BENCHMARK`` with the default analysis).

Each benchmark is three rows of the table::

    <name>          <samples>   <iterations>   <estimated> <unit>
                    <mean> <unit>   <low mean> <unit>   <high mean> <unit>
                    <std dev> <unit>   <low std dev> <unit>   <high std dev> <unit>

As Bencher reads it: a ``latency`` whose value is the mean, and whose lower and upper values are
the mean minus and plus the standard deviation, all in nanoseconds (Catch2 prints ns, us, ms, s).
Catch2 reports a mean only, so ``settings.average`` ``median`` finds nothing (as in Bencher).

Beyond Bencher: a name too long for its column is wrapped by Catch2 over several rows, the
numbers on the last; the rows are joined with spaces into the whole name (Bencher keeps only the
last row). A row belongs to the name when it is padded to the table's width like the row with
the numbers, so text a benchmark prints between rows is not taken for a name. Durations of a
minute or more (``m``) are read too; a trailing blank after the last column is not required.
"""

from __future__ import annotations

import re

from benchrunner.adapters.base import LATENCY, AdapterError, Measurement, Settings
from benchrunner.adapters.bounds import plus_minus
from benchrunner.adapters.console_patterns import BLANK, INTEGER, NUMBER, SEPARATOR, TIME_UNIT
from benchrunner.adapters.tail_tokens import WHITESPACE, decimal, lines
from benchrunner.adapters.values import MAX_BENCHMARK_NAME, check_name, to_nanoseconds

HARNESS = "cpp_catch2"
_MINUTES = "m"
_DURATION = rf"({NUMBER}){BLANK}++({TIME_UNIT}|{_MINUTES})"
_THREE_DURATIONS = re.compile(
    rf"{BLANK}++{_DURATION}{BLANK}++{_DURATION}{BLANK}++{_DURATION}{BLANK}*+"
)
_FIRST_ROW = re.compile(
    rf"(.+?){SEPARATOR}{INTEGER}{BLANK}++{INTEGER}{BLANK}++{_DURATION}{BLANK}*+"
)


def _nanoseconds(value: str, unit: str, where: str) -> float | None:
    """``<value> <unit>`` as nanoseconds, or None when ``value`` is not a number."""
    amount = decimal(value, where)
    if amount is None:
        return None
    if unit == _MINUTES:
        return to_nanoseconds(amount * 60, "s", where)
    return to_nanoseconds(amount, unit, where)


def _first_of_three(line: str, where: str) -> float | None:
    """The first duration of a ``mean`` or ``std dev`` row (three durations, nothing before
    them but blanks), or None when ``line`` is not such a row."""
    match = _THREE_DURATIONS.fullmatch(line)
    if match is None:
        return None
    fields = match.groups()
    durations = [_nanoseconds(fields[i], fields[i + 1], where) for i in (0, 2, 4)]
    if any(d is None for d in durations):
        return None
    return durations[0]


def _name_on_first_row(line: str, where: str) -> str | None:
    """The name before ``<samples> <iterations> <estimated> <unit>``, or None."""
    match = _FIRST_ROW.fullmatch(line)
    if match is None:
        return None
    name, estimated, unit = match.groups()
    if _nanoseconds(estimated, unit, where) is None:
        return None
    return name


def _wrapped_start(rows: list[str], width: int) -> list[str]:
    """The rows just before the first row of a benchmark that hold the start of its name."""
    start = len(rows)
    while start > 0 and len(rows[start - 1]) == width:
        start -= 1
    return [row.strip(WHITESPACE) for row in rows[start:]]


def parse(text: str, settings: Settings) -> list[Measurement]:
    """Latency per benchmark, in the order Catch2 printed them."""
    if settings.average == "median":
        raise AdapterError(
            f"{HARNESS}: Catch2 prints a mean per benchmark, no median; settings.average "
            "'median' cannot be read from it (use 'mean' or leave it unset)"
        )
    found: list[Measurement] = []
    name_rows: list[str] = []  # padded text rows since the last blank row: a wrapped name?
    name: str | None = None  # the benchmark whose mean and std dev rows come next
    mean: float | None = None
    for number, line in lines(text):
        where = f"{HARNESS}: line {number}"
        if name is not None:
            first = _first_of_three(line, where)
            if first is not None:
                if mean is None:
                    mean = first
                else:  # first is the standard deviation
                    lower, upper = plus_minus(mean, first, where)
                    found.append(Measurement(name, LATENCY, mean, lower, upper))
                    name, mean = None, None
                continue
            name, mean = None, None  # the rows broke off; this line may start another benchmark
        on_first_row = _name_on_first_row(line, where)
        if on_first_row is not None:
            name = " ".join([*_wrapped_start(name_rows, len(line)), on_first_row])
            check_name(name, "benchmark", MAX_BENCHMARK_NAME)
            name_rows = []
        elif line.strip(WHITESPACE) and line.endswith((" ", "\t")):
            name_rows.append(line)
        else:
            name_rows = []
    if not found:
        raise AdapterError(
            f"{HARNESS}: no benchmark found (a row '<name> <samples> <iterations> <estimated>' "
            "followed by its 'mean' and 'std dev' rows)"
        )
    return found
