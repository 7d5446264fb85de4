"""Catch2's console benchmark table (v2 and v3, ``BENCHMARK`` with the default analysis).

Each test case opens with its name between two page-break rows (a row of dashes); a section's
name follows on the next rows. Each benchmark under it is three rows of the table::

    <name>          <samples>   <iterations>   <estimated> <unit>
                    <mean> <unit>   <low mean> <unit>   <high mean> <unit>
                    <std dev> <unit>   <low std dev> <unit>   <high std dev> <unit>

As Bencher v0.6.12 reads it: the benchmark is named ``<test case>: <name>`` (the test case's
rows trimmed and joined with spaces, at most three of them), with the text Catch2 wraps onto the
start of the mean and std dev rows added after a space; a ``latency`` whose value is the mean,
and whose lower and upper values are the mean minus and plus the standard deviation, all in
nanoseconds. A benchmark before any test case is not read, and Catch2 reports a mean only, so
``settings.average`` ``median`` finds nothing (both as in Bencher).

Beyond Bencher: a name wrapped by Catch2 over several rows before the one with the numbers is
joined with spaces into the whole name (Bencher keeps only the last row). A row belongs to the
name when it is padded to the table's width like the row with the numbers, so text a benchmark
prints between rows is not taken for a name. A page break of any width is read (Bencher: the
default 79 dashes only), durations of a minute or more (``m``) are read too, a trailing blank
after the last column is not required, and the last benchmark's rows may end the output.
"""

from __future__ import annotations

import re

from benchrunner.adapters.base import LATENCY, AdapterError, Measurement, Settings
from benchrunner.adapters.console_text import (
    BLANK,
    INTEGER,
    NUMBER,
    SEPARATOR,
    TIME_UNIT,
    WHITESPACE,
    decimal,
    lines,
)
from benchrunner.adapters.values import check_benchmark_name, plus_minus, to_nanoseconds

HARNESS = "cpp_catch2"
_MINUTES = "m"
_DURATION = rf"({NUMBER}){BLANK}++({TIME_UNIT}|{_MINUTES})"
_THREE_DURATIONS = re.compile(
    rf"(.*?){SEPARATOR}{_DURATION}{BLANK}++{_DURATION}{BLANK}++{_DURATION}{BLANK}*+"
)
_FIRST_ROW = re.compile(
    rf"(.+?){SEPARATOR}{INTEGER}{BLANK}++{INTEGER}{BLANK}++{_DURATION}{BLANK}*+"
)
_PAGE_BREAK = re.compile(r"-{20,}+")
_TEST_CASE_ROWS = 3
"""The most rows of a test case's name (with its sections) between two page breaks, as
Bencher reads them."""


def _nanoseconds(value: str, unit: str, where: str) -> float | None:
    """``<value> <unit>`` as nanoseconds, or None when ``value`` is not a number."""
    amount = decimal(value, where)
    if amount is None:
        return None
    if unit == _MINUTES:
        return to_nanoseconds(amount * 60, "s", where)
    return to_nanoseconds(amount, unit, where)


def _first_of_three(line: str, where: str) -> tuple[str, float] | None:
    """The wrapped name text before a ``mean`` or ``std dev`` row's three durations (empty when
    only blanks come before them) and the first duration, or None when ``line`` is not such a
    row."""
    match = _THREE_DURATIONS.fullmatch(line)
    if match is None:
        return None
    wrapped, *fields = match.groups()
    durations = [_nanoseconds(fields[i], fields[i + 1], where) for i in (0, 2, 4)]
    first = durations[0]
    if first is None or any(d is None for d in durations):
        return None
    return wrapped, first


def _name_on_first_row(line: str, where: str) -> str | None:
    """The name before ``<samples> <iterations> <estimated> <unit>``, or None."""
    match = _FIRST_ROW.fullmatch(line)
    if match is None:
        return None
    name, estimated, unit = match.groups()
    if _nanoseconds(estimated, unit, where) is None:
        return None
    return name


def _test_case_at(rows: list[str], start: int) -> str | None:
    """The test case named between the page break at ``rows[start]`` and the next one, or
    None when ``rows[start]`` does not open such a header."""
    if _PAGE_BREAK.fullmatch(rows[start]) is None:
        return None
    names = rows[start + 1 : start + 2 + _TEST_CASE_ROWS]
    for count, row in enumerate(names):
        if count > 0 and _PAGE_BREAK.fullmatch(row) is not None:
            return " ".join(name.strip(WHITESPACE) for name in names[:count])
    return None


def _wrapped_start(rows: list[str], width: int) -> list[str]:
    """The rows just before the first row of a benchmark that hold the start of its name."""
    start = len(rows)
    while start > 0 and len(rows[start - 1]) == width:
        start -= 1
    return [row.strip(WHITESPACE) for row in rows[start:]]


def _benchmark_at(rows: list[str], start: int, name: str, where: str) -> Measurement | None:
    """The benchmark whose first row is ``rows[start]`` (its name already read as ``name``):
    its mean and std dev rows follow, or None."""
    follow = rows[start + 1 : start + 3]
    read = [_first_of_three(row, where) for row in follow]
    if len(read) < 2 or read[0] is None or read[1] is None:
        return None
    (mean_wrapped, mean), (deviation_wrapped, deviation) = read[0], read[1]
    whole = " ".join(part for part in (name, mean_wrapped, deviation_wrapped) if part)
    check_benchmark_name(where, whole)
    lower, upper = plus_minus(mean, deviation, where)
    return Measurement(whole, LATENCY, mean, lower, upper)


def parse(text: str, settings: Settings) -> list[Measurement]:
    """Latency per benchmark, in the order Catch2 printed them."""
    if settings.average == "median":
        raise AdapterError(
            f"{HARNESS}: Catch2 prints a mean per benchmark, no median; settings.average "
            "'median' cannot be read from it (use 'mean' or leave it unset)"
        )
    rows = list(lines(text))
    found: list[Measurement] = []
    name_rows: list[str] = []  # padded text rows since the last blank row: a wrapped name?
    test_case: str | None = None
    for index, line in enumerate(rows):
        where = f"{HARNESS}: line {index + 1}"
        opened = _test_case_at(rows, index)
        if opened is not None:
            test_case = opened
            name_rows = []
            continue
        on_first_row = _name_on_first_row(line, where) if test_case is not None else None
        if on_first_row is not None and test_case is not None:
            name = " ".join([*_wrapped_start(name_rows, len(line)), on_first_row])
            check_benchmark_name(where, name)
            benchmark = _benchmark_at(rows, index, f"{test_case}: {name}", where)
            if benchmark is not None:
                found.append(benchmark)
            name_rows = []
        elif line.strip(WHITESPACE) and line.endswith((" ", "\t")):
            name_rows.append(line)
        else:
            name_rows = []
    if not found:
        raise AdapterError(
            f"{HARNESS}: no benchmark found (a test case's name between two rows of dashes, "
            "then a row '<name> <samples> <iterations> <estimated>' followed by its 'mean' "
            "and 'std dev' rows)"
        )
    return found
