"""What the line-oriented adapters (libtest, Criterion, Iai, Gungraun, Dart) share: lines as
Rust's ``str::lines`` yields them, and numbers and time units as Bencher's text parsers read them.

Bencher reads a number in console output as a run of digits, dots and commas (the commas are
thousands separators and are dropped); a sign, an exponent, ``inf`` or ``NaN`` are not numbers
there, so ``NUMBER`` does not match them either.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from benchrunner.adapters.base import AdapterError, Average
from benchrunner.adapters.values import MAX_BENCHMARK_NAME, check_name, parse_number

NUMBER = r"[0-9.,]++"
"""A number as Bencher's text adapters accept it (use ``read_number`` to convert it). The
quantifiers in these patterns are possessive, as nom's parsers are: they never give back what
they matched, which keeps every match linear in the length of the line."""

INTEGER = r"[0-9,]++"

_DECIMAL = re.compile(r"[0-9]+\.?[0-9]*|\.[0-9]+")

TIME_UNIT = r"ps|ns|μs|µs|us|ms|s"
"""Bencher's time units, in the order it tries them."""


def lines(text: str) -> Iterator[str]:
    """The lines of ``text`` split on ``\\n`` with one trailing ``\\r`` removed, and no empty
    last line after a final newline (as Rust's ``str::lines``; ``str.splitlines`` would also
    split on form feeds, ``\\x1c`` and U+2028)."""
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
    for part in parts:
        yield part[:-1] if part.endswith("\r") else part


def is_number(token: str) -> bool:
    """Whether a ``NUMBER`` token reads as a number once its commas are dropped (``1.2.3`` and
    ``.`` do not, and Bencher passes over their line)."""
    return _DECIMAL.fullmatch(token.replace(",", "")) is not None


def read_number(token: str, where: str) -> float | None:
    """A ``NUMBER`` token as a float, None when it is not a number (see ``is_number``), an
    AdapterError naming ``where`` when it is too large to be finite."""
    if not is_number(token):
        return None
    return parse_number(token.replace(",", ""), where)


def check_average(harness: str, average: Average | None, reports: Average | None) -> None:
    """Bencher's rule for a harness that prints one central value: ``settings.average`` either
    names that value (``reports``) or is left out; asking for the other one finds nothing."""
    if average is not None and average != reports:
        printed = f"only a {reports}" if reports else "a single value, neither mean nor median"
        raise AdapterError(
            f"{harness}: the harness prints {printed} per benchmark; "
            f"settings.average {average!r} cannot be read from it"
        )


def check_benchmark_name(harness: str, name: str) -> None:
    """``values.check_name`` for a benchmark name, its error naming the harness."""
    try:
        check_name(name, "benchmark", MAX_BENCHMARK_NAME)
    except AdapterError as exc:
        raise AdapterError(f"{harness}: {exc}") from None
