"""JSON numbers read to the float Bencher v0.6.12 reads (its parser is not correctly rounded),
and the decimal round trip its JMH, pytest-benchmark, BenchmarkDotNet and Google Benchmark
adapters put them through. The expected floats are v0.6.12's, from its adapter tests."""

from __future__ import annotations

import json
import math

import pytest

from benchrunner.adapters import AdapterError
from benchrunner.adapters.json_numbers import bencher_float, decimal_round_trip, loads

# text, the float v0.6.12 reads; the first three differ from the correctly rounded float
READS = [
    ("0.10652535172000001", 0.10652535172),
    ("0.013317239025420563", 0.013317239025420565),
    ("0.021347058460000002", 0.021347058459999997),
    ("1.5", 1.5),
    ("-2.5e3", -2500.0),
    ("12345678901234567890123", 1.2345678901234568e22),
    ("1E-400", 0.0),
    ("0.0", 0.0),
]


@pytest.mark.parametrize(("text", "expected"), READS)
def test_numbers_read_as_bencher_reads_them(text: str, expected: float) -> None:
    assert bencher_float(text) == expected


def test_the_first_cases_are_not_correctly_rounded() -> None:
    """The point of the module: Python alone would read other floats here."""
    assert all(float(text) != expected for text, expected in READS[:3])


def test_a_number_beyond_a_float_is_left_for_the_field_checks_to_refuse() -> None:
    assert bencher_float("1e400") == math.inf
    assert bencher_float("-1e99999999999") == -math.inf
    assert loads('{"value": 1e400, "n": 1' + "0" * 400 + "}") == {"value": math.inf, "n": 10**400}


def test_loads_keeps_integers_exact_and_reads_floats_as_bencher() -> None:
    document = loads(
        '{"n": 18446744073709551615, "x": 0.10652535172000001, "big": 1' + "0" * 25 + "}"
    )
    assert document == {"n": 2**64 - 1, "x": 0.10652535172, "big": 1e25}
    assert isinstance(document, dict) and isinstance(document["n"], int)
    assert json.loads('{"x": 0.10652535172000001}')["x"] != document["x"]


# a JMH bound of v0.6.12's six.json, read and passed through the decimal: one place lower
DECIMALS = [
    (bencher_float("-1835785.2124654083"), -1835785.2124654085),
    (bencher_float("1.1364091667262991E8"), 113640916.67262992),
    (1.5, 1.5),
    (1e-7, 1e-7),
    (123456789.0, 123456789.0),
]


@pytest.mark.parametrize(("value", "expected"), DECIMALS)
def test_the_decimal_round_trip(value: float, expected: float) -> None:
    assert decimal_round_trip(value, "score") == expected


def test_a_whole_part_beyond_the_decimal_is_refused() -> None:
    with pytest.raises(AdapterError, match="score"):
        decimal_round_trip(1e30, "score")
    assert math.isnan(decimal_round_trip(math.nan, "score"))
