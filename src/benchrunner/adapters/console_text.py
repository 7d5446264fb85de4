"""Reading harnesses' console output as Bencher's text parsers read it: lines, numbers, and the
regular-expression pieces and right-to-left tokenising that result lines are matched with.

Lines are split as Rust's ``str::lines`` splits them. Bencher reads a number in console output
as a run of digits, dots and commas (commas are thousands separators and are dropped); a sign,
an exponent, ``inf`` or ``NaN`` is not a number there. Fields are separated by spaces and tabs
only, as Bencher's ``space1``.

Patterns built from these pieces stay linear in the length of a line: match them with
``fullmatch`` (one start position), keep every repetition possessive (as nom's parsers, they
never give back what they matched), and where a lazy prefix (a name) comes before the fields,
start the separator after a non-blank (``SEPARATOR``), so the prefix is tried once per run of
blanks rather than once per blank. A line whose fixed part is at its end and whose name is free
text can instead be read from the right with ``split_tail``.
"""

from __future__ import annotations

from collections.abc import Iterator

from benchrunner.adapters.values import U64_MAX, parse_number

WHITESPACE = " \t"
"""What separates fields: spaces and tabs."""

BLANK = r"[ \t]"
NUMBER = r"[0-9.,]++"
"""A number as Bencher's text parsers take it (``decimal`` converts one)."""
INTEGER = r",*+[0-9][0-9,]*+"
"""Digits with thousands separators, as Bencher's ``parse_u64`` reads them (a digit at least;
``unsigned`` converts one)."""
TIME_UNIT = r"ps|ns|μs|µs|us|ms|s"
"""Bencher's time units, a longer one before its suffix (``values.to_nanoseconds`` converts
them)."""
SEPARATOR = r"(?<![ \t])[ \t]++"
"""Blanks between a lazy name and the fields after it: they start after a non-blank."""

_DECIMAL_CHARACTERS = frozenset("0123456789.,")
_INTEGER_CHARACTERS = frozenset("0123456789,")
_U64_DIGITS = len(str(U64_MAX))


def lines(text: str) -> Iterator[str]:
    """The lines of ``text`` split on ``\\n`` with one trailing ``\\r`` removed, and no empty
    last line after a final newline (as Rust's ``str::lines``; ``str.splitlines`` would also
    split on form feeds, ``\\x1c`` and U+2028). Number them with ``enumerate(..., start=1)``."""
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
    for part in parts:
        yield part.removesuffix("\r")


def split_tail(line: str, count: int) -> tuple[str, list[str]] | None:
    """``(head, tokens)``: the last ``count`` tokens of ``line`` (left to right), each preceded
    by at least one space or tab, and the text before that whitespace; None when the line
    ends with whitespace or has fewer tokens. This is what Bencher's parsers get by taking the
    shortest name after which the rest of the line matches, in time linear in the line."""
    tokens: list[str] = []
    end = len(line)
    for _ in range(count):
        separator = max(line.rfind(" ", 0, end), line.rfind("\t", 0, end))
        token = line[separator + 1 : end]
        if not token or separator < 0:
            return None
        tokens.append(token)
        end = len(line[: separator + 1].rstrip(WHITESPACE))
    tokens.reverse()
    return line[:end], tokens


def is_decimal(text: str) -> bool:
    """Whether ``text`` is a number as Bencher's ``parse_f64`` reads it: digits and ``,``
    thousands separators with at most one ``.`` (``1.2.3``, ``.`` and ``,`` are not, and
    Bencher passes over their line)."""
    if not text or not _DECIMAL_CHARACTERS.issuperset(text):
        return False
    digits = text.replace(",", "")
    return bool(digits.strip(".")) and digits.count(".") <= 1


def decimal(text: str, where: str) -> float | None:
    """``text`` as a float when it ``is_decimal``, else None; an AdapterError naming ``where``
    when it is too large to be finite."""
    if not is_decimal(text):
        return None
    return parse_number(text.replace(",", ""), where)


def unsigned(text: str) -> int | None:
    """An unsigned 64-bit integer as Bencher's ``parse_u64`` reads it (``,`` separators
    allowed); None when ``text`` is not one."""
    if not text or not _INTEGER_CHARACTERS.issuperset(text):
        return None
    digits = text.replace(",", "")
    # Checked before int(): Python refuses to convert more than 4,300 digits (ValueError).
    if not digits or len(digits) > _U64_DIGITS or int(digits) > U64_MAX:
        return None
    return int(digits)
