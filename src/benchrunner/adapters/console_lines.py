"""What the console-output adapters (Catch2, go test -bench, Ruby's Benchmark) share: lines as
Rust's ``str::lines`` yields them, and pattern pieces for numbers and time units as Bencher's
text parsers read them.

Bencher reads a number in console output as a run of digits, dots and commas (commas are
thousands separators and are dropped); a sign, an exponent, ``inf`` or ``NaN`` is not a number
there. Fields are separated by spaces and tabs only, as Bencher's ``space1``.

Patterns built from these pieces must stay linear in the length of a line: match them with
``fullmatch`` (one start position), make every repetition possessive, and where a lazy prefix
(a name) comes before the fields, let a field separator start only after a non-blank, so the
prefix is tried once per run of blanks rather than once per blank.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from benchrunner.adapters.base import AdapterError, Average
from benchrunner.adapters.values import parse_number

BLANKS = " \t"

NUMBER = r"[0-9.,]++"
"""A number as Bencher reads it in console output (convert it with ``read_number``)."""
INTEGER = r",*+[0-9][0-9,]*+"
"""Digits with thousands separators, as Bencher's ``parse_u64`` reads them (a digit at least)."""
TIME_UNIT = r"ps|ns|μs|µs|us|ms|s"
"""Bencher's time units, longest first where one is the start of another
(``values.to_nanoseconds`` converts them)."""
BLANK = r"[ \t]"
SEPARATOR = r"(?<![ \t])[ \t]++"
"""Blanks between a lazy name and the fields after it: they start after a non-blank."""

_NUMBER = re.compile(NUMBER)


def lines(text: str) -> Iterator[str]:
    """The lines of ``text`` split on ``\\n`` with one trailing ``\\r`` removed, and no empty
    last line after a final newline (as Rust's ``str::lines``; ``str.splitlines`` would also
    split on form feeds, ``\\x1c`` and U+2028)."""
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
    for part in parts:
        yield part[:-1] if part.endswith("\r") else part


def read_number(token: str, where: str) -> float | None:
    """A number as Bencher reads one in console output; None when ``token`` is not one (which
    makes Bencher pass over the line); AdapterError when it is too large to be finite."""
    if _NUMBER.fullmatch(token) is None:
        return None
    digits = token.replace(",", "")
    try:
        float(digits)
    except ValueError:  # "1.2.3", "." or "" after dropping the commas
        return None
    return parse_number(digits, where)


def check_average(
    harness: str, average: Average | None, readable: tuple[Average, ...], reports: str
) -> None:
    """Bencher's rule: ``settings.average`` is either left out or one of ``readable``; asking
    for another finds no result in Bencher, which is an AdapterError here saying what the
    output ``reports`` instead."""
    if average is None or average in readable:
        return
    raise AdapterError(
        f"{harness}: settings.average {average!r} cannot be read from this output, which "
        f"reports {reports}; leave settings.average unset"
    )
