"""Regular-expression pieces for console result lines (Catch2, go test -bench, Ruby's
Benchmark): numbers and time units as Bencher's text parsers read them.

Bencher reads a number in console output as a run of digits, dots and commas (commas are
thousands separators and are dropped; ``tail_tokens.decimal`` converts one); a sign, an
exponent, ``inf`` or ``NaN`` is not a number there. Fields are separated by spaces and tabs
only, as Bencher's ``space1``.

Patterns built from these pieces stay linear in the length of a line: match them with
``fullmatch`` (one start position), keep every repetition possessive, and where a lazy prefix
(a name) comes before the fields, start the separator after a non-blank (``SEPARATOR``), so the
prefix is tried once per run of blanks rather than once per blank.
"""

from __future__ import annotations

BLANK = r"[ \t]"
NUMBER = r"[0-9.,]++"
INTEGER = r",*+[0-9][0-9,]*+"
"""Digits with thousands separators, as Bencher's ``parse_u64`` reads them (a digit at least)."""
TIME_UNIT = r"ps|ns|μs|µs|us|ms|s"
"""Bencher's time units, a longer one before its suffix (``values.to_nanoseconds`` converts
them)."""
SEPARATOR = r"(?<![ \t])[ \t]++"
"""Blanks between a lazy name and the fields after it: they start after a non-blank."""
