"""Checks and conversions every adapter shares: names the store can hold, finite numbers, time
units to nanoseconds, and measurements whose computed numbers stay finite.

Every error here is an AdapterError naming ``where`` (or the benchmark); an adapter puts its
own name in front when ``where`` does not already hold it.
"""

from __future__ import annotations

import math
import reprlib

from benchrunner.adapters.base import AdapterError, Measurement

MAX_BENCHMARK_NAME = 1024
MAX_MEASURE_NAME = 64

U64_MAX = 2**64 - 1
"""The largest count Bencher's parsers read (a Rust ``u64``)."""

NANOSECONDS_PER: dict[str, float] = {
    "ps": 1e-3,
    "ns": 1.0,
    "us": 1e3,
    "µs": 1e3,  # MICRO SIGN
    "μs": 1e3,  # GREEK SMALL LETTER MU
    "ms": 1e6,
    "s": 1e9,
}
"""Bencher's time units -> nanoseconds in one."""

SECONDS_PER: dict[str, float] = {
    "ps": 1.0 / 1_000_000_000_000.0,
    "ns": 1.0 / 1_000_000_000.0,
    "us": 1.0 / 1_000_000.0,
    "µs": 1.0 / 1_000_000.0,  # MICRO SIGN
    "μs": 1.0 / 1_000_000.0,  # GREEK SMALL LETTER MU
    "ms": 1.0 / 1_000.0,
    "s": 1.0,
}
"""Bencher's time units -> seconds in one; operations per unit are divided by it, as Bencher
does (so ``ops/ns`` is not exactly ``* 1e9``, the same float Bencher stores)."""

_BRIEF = reprlib.Repr()
_BRIEF.maxstring = _BRIEF.maxlong = _BRIEF.maxother = 40


def brief(value: object) -> str:
    """A value for an error message, cut short: an output can hold megabytes in one field."""
    return _BRIEF.repr(value)


def number(value: object, where: str) -> float:
    """``value`` as a finite float; a bool, a string, NaN, infinity or an integer too large
    for a float is an AdapterError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AdapterError(f"{where} must be a number, got {brief(value)}")
    try:
        result = float(value)
    except OverflowError:
        raise AdapterError(f"{where} is too large for a float") from None
    if not math.isfinite(result):
        raise AdapterError(f"{where} must be finite, got {brief(value)}")
    return result


def parse_number(text: str, where: str) -> float:
    """A decimal number as harnesses print it (``1,234.5`` with thousands separators too)."""
    try:
        result = float(text.replace(",", ""))
    except ValueError:
        raise AdapterError(f"{where}: {brief(text)} is not a number") from None
    if not math.isfinite(result):
        raise AdapterError(f"{where} must be finite, got {brief(text)}")
    return result


def check_name(name: str, what: str, longest: int) -> None:
    """A benchmark or measure name the store can hold, or an AdapterError."""
    if not name or len(name) > longest:
        raise AdapterError(f"{what} name must be 1-{longest} characters")
    # Names are stored as text: PostgreSQL refuses NUL, and a lone surrogate is not UTF-8.
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise AdapterError(f"{what} name {brief(name)} has a lone surrogate") from None
    if "\x00" in name:
        raise AdapterError(f"{what} name {brief(name)} has a NUL character")


def check_benchmark_name(where: str, name: str) -> None:
    """``check_name`` for a benchmark name, its error starting with ``where`` (the harness,
    and the line or field the name was read from)."""
    check_name(name, f"{where}: benchmark", MAX_BENCHMARK_NAME)


def to_nanoseconds(value: float, unit: str, where: str) -> float:
    """``value`` in ``unit`` (ps, ns, us/µs/μs, ms, s) as nanoseconds."""
    try:
        scale = NANOSECONDS_PER[unit]
    except KeyError:
        raise AdapterError(f"{where}: unknown time unit {brief(unit)}") from None
    result = value * scale
    if not math.isfinite(result):
        raise AdapterError(f"{where}: {value} {unit} is too large")
    return result


def plus_minus(value: float, spread: float, where: str) -> tuple[float, float]:
    """``(value - spread, value + spread)``, as harnesses report ``value ± spread``; an
    AdapterError naming ``where`` when either overflows a float."""
    lower, upper = value - spread, value + spread
    if not (math.isfinite(lower) and math.isfinite(upper)):
        raise AdapterError(f"{where}: {value} ± {spread} is too large")
    return lower, upper


def finite_measurement(
    benchmark: str,
    measure: str,
    value: float,
    lower_value: float | None = None,
    upper_value: float | None = None,
) -> Measurement:
    """``Measurement(...)``, or an AdapterError naming the benchmark when a number computed from
    finite ones (a unit converted, a margin added) overflowed: the store never sees infinity."""
    for computed in (value, lower_value, upper_value):
        if computed is not None and not math.isfinite(computed):
            raise AdapterError(f"{benchmark!r}: {measure} is too large for a float once converted")
    return Measurement(benchmark, measure, value, lower_value, upper_value)


def samples_scaled(raw: object, scale: float) -> tuple[float, ...]:
    """A harness's per-sample figures (a JSON array of numbers) times ``scale``, or none at
    all when any of them is not a finite number once scaled: samples are extra data, so a field
    the harness wrote oddly loses them without failing the measurement Bencher would read."""
    if not isinstance(raw, list) or not raw:
        return ()
    found: list[float] = []
    for value in raw:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return ()
        try:
            scaled = float(value) * scale
        except OverflowError:
            return ()
        if not math.isfinite(scaled):
            return ()
        found.append(scaled)
    return tuple(found)
