"""JSON numbers read to the same float Bencher v0.6.12 reads.

Bencher reads harness JSON with a parser that is not correctly rounded: a number's decimal
significand is gathered into a 64-bit integer (digits past its capacity are dropped), converted
to a float, then multiplied or divided by a power of ten. For a significand of 17 or more digits
that is often one unit in the last place away from the nearest float (``0.10652535172000001``
seconds is 106525351.72 ns in Bencher, 106525351.72000001 correctly rounded). Some adapters
(``java_jmh``, ``python_pytest``, ``c_sharp_dot_net``, ``cpp_google``) also pass each number
through a 96-bit decimal type and back, which can move it one more place: ``decimal_round_trip``
does the same. docs/reference/adapters.md says which adapter reads which field so.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from benchrunner.adapters.base import AdapterError

_U64_MAX = 2**64 - 1
_I32_MAX = 2**31 - 1
_POWERS_OF_TEN = [float(f"1e{k}") for k in range(309)]
_JSON_NUMBER = re.compile(r"(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?)([0-9]+))?")


def loads(text: str) -> Any:  # as json.loads: the caller checks the shape
    """``json.loads`` with Bencher's numbers: a float as ``bencher_float`` reads it, an integer
    exact (one beyond 64 bits as ``bencher_float`` reads it too, or left an int when too large
    for a float). Raises what ``json.loads`` raises. A number too large for a float is read as
    an infinity or a huge int, which the adapters' field checks refuse naming the field, as
    Bencher refuses it."""
    return json.loads(text, parse_float=_json_float, parse_int=_integer)


def _json_float(text: str) -> float:
    # The JSON parser hands over valid numbers only. Without an exponent, 16 characters hold at
    # most 15 digits and a fraction of at most 15: ``bencher_float``'s exact case, at a glance.
    if len(text) <= 16 and "e" not in text and "E" not in text:
        return float(text)
    return bencher_float(text)


def _integer(text: str) -> int | float:
    value = int(text)
    if abs(value) <= _U64_MAX:
        return value
    read = bencher_float(text)
    return value if math.isinf(read) else read


def bencher_float(text: str) -> float:
    """The float Bencher's JSON parser reads from the JSON number ``text``; an infinity where
    it is too large for a float (Bencher refuses it)."""
    match = _JSON_NUMBER.fullmatch(text)
    if match is None:
        raise AdapterError(f"{text[:40]!r} is not a JSON number")
    sign, whole, fraction, exponent_sign, exponent_digits = match.groups()
    fraction = fraction or ""
    significand, exponent = int(whole + fraction), -len(fraction)
    if significand > _U64_MAX:
        significand, exponent = _first_u64_digits(whole, fraction)
    if exponent_digits is not None:
        shift = int(exponent_digits)
        if shift > _I32_MAX:
            zero = significand == 0 or exponent_sign == "-"
            return (-0.0 if sign else 0.0) if zero else (-math.inf if sign else math.inf)
        exponent = exponent - shift if exponent_sign == "-" else exponent + shift
    if significand <= _EXACT and -_EXACT_POWER <= exponent <= _EXACT_POWER:
        # One exact operand and one rounding: Bencher's float is the nearest, as Python's.
        return float(text)
    result = _scaled(float(significand), exponent)
    return -result if sign else result


_EXACT = 2**53
_EXACT_POWER = 22
"""Every integer up to 2^53 and every power of ten up to 10^22 is exactly a float."""


def _first_u64_digits(whole: str, fraction: str) -> tuple[int, int]:
    """The significand Bencher keeps of a number with more digits than 64 bits hold: the
    digits up to the first that would overflow; a whole part's further digits still count in
    the exponent, a fraction's are dropped."""
    significand, exponent, full = 0, 0, False
    for digit in whole:
        if not full and significand * 10 + int(digit) <= _U64_MAX:
            significand = significand * 10 + int(digit)
        else:
            full = True
            exponent += 1
    for digit in fraction:
        if full or significand * 10 + int(digit) > _U64_MAX:
            break
        significand = significand * 10 + int(digit)
        exponent -= 1
    return significand, exponent


def _scaled(value: float, exponent: int) -> float:
    while True:
        if abs(exponent) < len(_POWERS_OF_TEN):
            if exponent >= 0:
                return value * _POWERS_OF_TEN[exponent]
            return value / _POWERS_OF_TEN[-exponent]
        if value == 0.0:
            return value
        if exponent >= 0:
            return math.inf
        value /= 1e308
        exponent += 308


_DECIMAL_MANTISSA_LIMIT = 2**96
_DECIMAL_MAX_SCALE = 28


def decimal_round_trip(value: float, where: str) -> float:
    """``value`` written at its shortest, read into a decimal of 96 bits and at most 28
    fractional digits (rounding on the first digit that does not fit), and converted back as
    Bencher does: whole part plus fraction over its power of ten, rounded again at the
    decimal's scale. An AdapterError naming ``where`` when the whole part does not fit."""
    if value == 0.0 or not math.isfinite(value):
        return value
    negative = value < 0
    digits, scale = _shortest_digits(abs(value))
    mantissa, kept = 0, 0
    for index, digit in enumerate(digits):
        fractional = index >= len(digits) - scale
        if fractional and kept >= _DECIMAL_MAX_SCALE:
            mantissa, kept = _round_on(mantissa, kept, int(digit), where)
            break
        grown = mantissa * 10 + int(digit)
        if grown >= _DECIMAL_MANTISSA_LIMIT:
            if not fractional:
                raise AdapterError(f"{where}: {value} is too large for Bencher's decimal numbers")
            mantissa, kept = _round_on(mantissa, kept, int(digit), where)
            break
        mantissa = grown
        kept += int(fractional)
    result = _decimal_to_float(mantissa, kept)
    return -result if negative else result


def _shortest_digits(value: float) -> tuple[str, int]:
    """The digits of ``value``'s shortest round-trip form written out without an exponent,
    and how many of them follow the decimal point."""
    mantissa, _, exponent_text = repr(value).partition("e")
    whole, _, fraction = mantissa.partition(".")
    exponent = int(exponent_text or "0")
    digits = (whole + fraction).lstrip("0") or "0"
    scale = len(fraction) - exponent
    if fraction == "0":
        digits, scale = (whole.lstrip("0") or "0"), -exponent
    if scale < 0:
        return digits + "0" * -scale, 0
    return digits.rjust(scale + 1, "0") if len(digits) <= scale else digits, scale


def _round_on(mantissa: int, scale: int, next_digit: int, where: str) -> tuple[int, int]:
    if next_digit >= 5:
        mantissa += 1
        if mantissa >= _DECIMAL_MANTISSA_LIMIT:
            if scale == 0:
                raise AdapterError(f"{where} is too large for Bencher's decimal numbers")
            mantissa, scale = (mantissa + 4) // 10, scale - 1
    return mantissa, scale


def _decimal_to_float(mantissa: int, scale: int) -> float:
    if scale == 0:
        return float(mantissa)
    precision = 10**scale
    whole = float(mantissa // precision)
    fraction = float(mantissa % precision) / float(precision)
    if fraction == 0.0:
        return whole
    round_to = _power_by_squaring(10.0, scale)
    return _round_half_away((whole + fraction) * round_to) / round_to


def _power_by_squaring(base: float, exponent: int) -> float:
    """``base ** exponent`` by repeated squaring, each product rounded: the power Bencher uses
    here (exact for 10 up to the 22nd power, a few places off beyond)."""
    result = 1.0
    while True:
        if exponent & 1:
            result *= base
        exponent //= 2
        if exponent == 0:
            return result
        base *= base


def _round_half_away(value: float) -> float:
    magnitude = abs(value)
    floor = math.floor(magnitude)
    rounded = floor + 1.0 if magnitude - floor >= 0.5 else float(floor)
    return math.copysign(rounded, value)
