"""Reading result lines whose fixed part is at the end (``<name> x 1,234 ops/sec ...``).

The name is free text, so such a line is read from the right: the last few whitespace-separated
tokens are the fixed part and everything before them is the name. This is what Bencher's
parsers get by taking the shortest name after which the rest of the line matches, and reading
from the right keeps it linear in the line's length whatever the line holds.
"""

from __future__ import annotations

from collections.abc import Iterator

from benchrunner.adapters.values import parse_number

WHITESPACE = " \t"
"""What separates tokens: spaces and tabs, as Bencher's parsers (nom's ``space1``)."""

_DECIMAL_CHARACTERS = frozenset("0123456789.,")
_INTEGER_CHARACTERS = frozenset("0123456789,")
_LARGEST_U64 = 2**64 - 1


def lines(text: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` as Rust's ``str::lines`` splits them (``\\n``, one ``\\r``
    before it dropped), numbered from 1."""
    for number, line in enumerate(text.split("\n"), start=1):
        yield number, line.removesuffix("\r")


def split_tail(line: str, count: int) -> tuple[str, list[str]] | None:
    """``(head, tokens)``: the last ``count`` tokens of ``line`` (left to right), each preceded
    by at least one space or tab, and the text before that whitespace; None when the line
    ends with whitespace or has fewer tokens."""
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


def decimal(text: str, where: str) -> float | None:
    """A number as Bencher's ``parse_f64`` reads it (digits, ``.`` and ``,`` thousands
    separators); None when ``text`` is not one, AdapterError when it is not finite."""
    if not text or not _DECIMAL_CHARACTERS.issuperset(text):
        return None
    digits = text.replace(",", "")
    if not digits.strip(".") or digits.count(".") > 1:
        return None
    return parse_number(digits, where)


def unsigned(text: str) -> int | None:
    """An unsigned 64-bit integer as Bencher's ``parse_u64`` reads it (``,`` separators
    allowed); None when ``text`` is not one."""
    if not text or not _INTEGER_CHARACTERS.issuperset(text):
        return None
    digits = text.replace(",", "")
    if not digits or len(digits) > 20 or int(digits) > _LARGEST_U64:
        return None
    return int(digits)
