"""Checks and conversions every adapter shares: names the store can hold, finite numbers,
time units to nanoseconds."""

from __future__ import annotations

import math

from benchrunner.adapters.base import AdapterError

MAX_BENCHMARK_NAME = 1024
MAX_MEASURE_NAME = 64

NANOSECONDS_PER: dict[str, float] = {
    "ps": 1e-3,
    "ns": 1.0,
    "us": 1e3,
    "µs": 1e3,  # MICRO SIGN
    "μs": 1e3,  # GREEK SMALL LETTER MU
    "ms": 1e6,
    "s": 1e9,
}


def number(value: object, where: str) -> float:
    """``value`` as a finite float; a bool, a string, NaN, infinity or an integer too large
    for a float is an AdapterError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AdapterError(f"{where} must be a number, got {value!r}")
    try:
        result = float(value)
    except OverflowError:
        raise AdapterError(f"{where} is too large for a float") from None
    if not math.isfinite(result):
        raise AdapterError(f"{where} must be finite, got {value!r}")
    return result


def parse_number(text: str, where: str) -> float:
    """A decimal number as harnesses print it (``1,234.5`` with thousands separators too)."""
    try:
        result = float(text.replace(",", ""))
    except ValueError:
        raise AdapterError(f"{where}: {text!r} is not a number") from None
    if not math.isfinite(result):
        raise AdapterError(f"{where} must be finite, got {text!r}")
    return result


def check_name(name: str, what: str, longest: int) -> None:
    """A benchmark or measure name the store can hold, or an AdapterError."""
    if not name or len(name) > longest:
        raise AdapterError(f"{what} name must be 1-{longest} characters")
    # Names are stored as text: PostgreSQL refuses NUL, and a lone surrogate is not UTF-8.
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise AdapterError(f"{what} name {name!r} has a lone surrogate") from None
    if "\x00" in name:
        raise AdapterError(f"{what} name {name!r} has a NUL character")


def to_nanoseconds(value: float, unit: str, where: str) -> float:
    """``value`` in ``unit`` (ps, ns, us/µs, ms, s) as nanoseconds."""
    try:
        scale = NANOSECONDS_PER[unit]
    except KeyError:
        raise AdapterError(f"{where}: unknown time unit {unit!r}") from None
    result = value * scale
    if not math.isfinite(result):
        raise AdapterError(f"{where}: {value} {unit} is too large")
    return result
