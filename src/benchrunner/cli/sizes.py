"""Byte sizes as people type them (``2GiB``, ``512MiB``, ``10G``, ``4096``) and as we print them."""

from __future__ import annotations

import re

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "t": 1000**4,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)")
_BINARY = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def parse_size(text: str | int) -> int:
    """Bytes in ``text``: SI suffixes (k, M, G, T, optional B) are powers of 1000, ``KiB``... of
    1024; case does not matter. Raises ``ValueError`` for anything else or a size below 1 byte.
    An int is already bytes (Typer passes defaults through the parser too).
    """
    if isinstance(text, int):
        if text < 1:
            raise ValueError(f"invalid size {text}: must be at least 1 byte")
        return text
    match = _SIZE.fullmatch(text.strip().lower())
    if match is None or match.group(2) not in _UNITS:
        raise ValueError(
            f"invalid size {text!r}: use bytes or a number with a unit like 512MiB, 2GiB or 10G"
        )
    size = int(float(match.group(1)) * _UNITS[match.group(2)])
    if size < 1:
        raise ValueError(f"invalid size {text!r}: must be at least 1 byte")
    return size


def format_size(size: int) -> str:
    """``2147483648`` -> ``2 GiB``; ``1536`` -> ``1.5 KiB``."""
    value = float(size)
    for unit in _BINARY:
        if value < 1024 or unit == _BINARY[-1]:
            return f"{value:.0f} {unit}" if value.is_integer() else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
