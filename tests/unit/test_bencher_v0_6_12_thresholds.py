"""Every threshold test gives what Bencher v0.6.12 gives on its own unit tests' worked examples.

Each table below holds Bencher v0.6.12's expected values (``lib/bencher_boundary``: the mean,
sample variance and deviation, log-normal fit, quartiles and delta quartiles of its data sets;
the limits its models draw from given statistics; which side a value is an outlier on). They
are pinned to that release: a later Bencher that computes otherwise is a deliberate update of
these rows, never drift. Limits agree to 1e-9 relative (Bencher compares its floats exactly;
SciPy's quantiles and Rust's statrs differ in the last bits).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchrunner.detection import Limits, Model, TestKind, limits, outside
from benchrunner.detection.boundary import (
    Quartiles,
    Values,
    delta_iqr_limits,
    delta_quartiles,
    deviation,
    iqr_limits,
    log_fit,
    log_normal_limits,
    mean,
    percentage_limits,
    quartiles,
    static_limits,
    variance,
)

T = TestKind
REL = 1e-9

EMPTY: list[float] = []
ONE = [1.0]
TWO = [1.0, 2.0]
THREE = [1.0, 2.0, 3.0]
FIVE = [1.0, 2.0, 3.0, 4.0, 5.0]
FIVE_DESC = [5.0, 4.0, 3.0, 2.0, 1.0]
FIVE_NEG = [-1.0, -2.0, -3.0, -4.0, -5.0]
FIVE_CONST = [1.0, 1.0, 1.0, 1.0, 1.0]
SIX_BI = [-6.0, -6.0, 1.0, 1.0, 9.0, 9.0]


def close(got: float | None, expected: float | None) -> bool:
    if expected is None:
        return got is None
    return got is not None and math.isclose(got, expected, rel_tol=REL, abs_tol=1e-12)


def array(values: list[float]) -> Values:
    return np.asarray(values, dtype=np.float64)


# Bencher v0.6.12: mean of each data set.
MEANS = [(EMPTY, None), (ONE, 1.0), (TWO, 1.5), (THREE, 2.0), (FIVE, 3.0), (FIVE_DESC, 3.0)]
MEANS += [(FIVE_NEG, -3.0), (FIVE_CONST, 1.0)]


@pytest.mark.parametrize(("data", "expected"), MEANS)
def test_mean(data: list[float], expected: float | None) -> None:
    assert close(mean(array(data)), expected)


# Bencher v0.6.12: sample variance (n - 1) and deviation about a location; the deviation is
# undefined (None) for fewer than two values and for a zero variance.
SPREADS = [
    # data, location, variance, deviation
    (EMPTY, 0.0, None, None),
    (EMPTY, 1.0, None, None),
    (EMPTY, 1.5, None, None),
    (EMPTY, 2.0, None, None),
    (EMPTY, 3.0, None, None),
    (ONE, 0.0, None, None),
    (ONE, 1.0, None, None),
    (ONE, 1.5, None, None),
    (ONE, 2.0, None, None),
    (ONE, 3.0, None, None),
    (TWO, 0.0, 5.0, 2.23606797749979),
    (TWO, 1.0, 1.0, 1.0),
    (TWO, 1.5, 0.5, 0.7071067811865476),
    (TWO, 2.0, 1.0, 1.0),
    (TWO, 3.0, 5.0, 2.23606797749979),
    (THREE, 0.0, 7.0, 2.6457513110645907),
    (THREE, 1.0, 2.5, 1.5811388300841898),
    (THREE, 1.5, 1.375, 1.1726039399558574),
    (THREE, 2.0, 1.0, 1.0),
    (THREE, 3.0, 2.5, 1.5811388300841898),
    (FIVE, 0.0, 13.75, 3.7080992435478315),
    (FIVE, 1.0, 7.5, 2.7386127875258306),
    (FIVE, 1.5, 5.3125, 2.3048861143232218),
    (FIVE, 2.0, 3.75, 1.9364916731037085),
    (FIVE, 3.0, 2.5, 1.5811388300841898),
    (FIVE_DESC, 0.0, 13.75, 3.7080992435478315),
    (FIVE_DESC, 1.0, 7.5, 2.7386127875258306),
    (FIVE_DESC, 1.5, 5.3125, 2.3048861143232218),
    (FIVE_DESC, 2.0, 3.75, 1.9364916731037085),
    (FIVE_DESC, 3.0, 2.5, 1.5811388300841898),
    (FIVE_NEG, 0.0, 13.75, 3.7080992435478315),
    (FIVE_NEG, -1.0, 7.5, 2.7386127875258306),
    (FIVE_NEG, -1.5, 5.3125, 2.3048861143232218),
    (FIVE_NEG, -2.0, 3.75, 1.9364916731037085),
    (FIVE_NEG, -3.0, 2.5, 1.5811388300841898),
    (FIVE_CONST, 0.0, 1.25, 1.118033988749895),
    (FIVE_CONST, 1.0, 0.0, None),
    (FIVE_CONST, 1.5, 0.3125, 0.5590169943749475),
    (FIVE_CONST, 2.0, 1.25, 1.118033988749895),
    (FIVE_CONST, 3.0, 5.0, 2.23606797749979),
]


@pytest.mark.parametrize(("data", "location", "expected_variance", "expected_deviation"), SPREADS)
def test_sample_variance_and_deviation(
    data: list[float],
    location: float,
    expected_variance: float | None,
    expected_deviation: float | None,
) -> None:
    assert close(variance(location, array(data)), expected_variance)
    assert close(deviation(location, array(data)), expected_deviation)


# Bencher v0.6.12: the log-normal fit (location, scale) of each data set.
LOG_FITS = [
    (EMPTY, None),
    (ONE, None),
    (TWO, (0.34657359027997264, 0.49012907173427356)),
    (THREE, (0.5972531564093516, 0.5555483670248627)),
    (FIVE, (0.9574983485564091, 0.6355094387463041)),
    (FIVE_DESC, (0.9574983485564091, 0.6355094387463041)),
    (FIVE_NEG, None),
    (FIVE_CONST, None),
]


@pytest.mark.parametrize(("data", "expected"), LOG_FITS)
def test_log_normal_fit(data: list[float], expected: tuple[float, float] | None) -> None:
    with np.errstate(all="ignore"):
        got = log_fit(array(data))
    if expected is None:
        assert got is None
    else:
        assert got is not None and close(got[0], expected[0]) and close(got[1], expected[1])


IQR_MULTIPLIERS = (0.0, 1.0, 2.0, 3.0, 5.0)

# Bencher v0.6.12: quartiles of each data set, and the range times 0, 1, 2, 3 and 5.
QUARTILES = [
    (EMPTY, None, ()),
    (ONE, (1.0, 1.0, 1.0), (0.0, 0.0, 0.0, 0.0, 0.0)),
    (TWO, (1.25, 1.5, 1.75), (0.0, 0.5, 1.0, 1.5, 2.5)),
    (THREE, (1.5, 2.0, 2.5), (0.0, 1.0, 2.0, 3.0, 5.0)),
    (FIVE, (2.0, 3.0, 4.0), (0.0, 2.0, 4.0, 6.0, 10.0)),
    (FIVE_DESC, (2.0, 3.0, 4.0), (0.0, 2.0, 4.0, 6.0, 10.0)),
    (FIVE_NEG, (-4.0, -3.0, -2.0), (0.0, 2.0, 4.0, 6.0, 10.0)),
    (FIVE_CONST, (1.0, 1.0, 1.0), (0.0, 0.0, 0.0, 0.0, 0.0)),
    (SIX_BI, (-4.25, 1.0, 7.0), (0.0, 11.25, 22.5, 33.75, 56.25)),
]

# Bencher v0.6.12: quartiles of the relative changes between neighbours, in the order given.
DELTA_QUARTILES = [
    (EMPTY, None, ()),
    (ONE, None, ()),
    (TWO, (1.0, 1.0, 1.0), (0.0, 0.0, 0.0, 0.0, 0.0)),
    (THREE, (0.625, 0.75, 0.875), (0.0, 0.25, 0.5, 0.75, 1.25)),
    (FIVE, (0.3125, 0.41666666666666663, 0.625), (0.0, 0.3125, 0.625, 0.9375, 1.5625)),
    (
        FIVE_DESC,
        (0.2375, 0.29166666666666663, 0.375),
        (0.0, 0.1375, 0.275, 0.41250000000000003, 0.6875),
    ),
    (FIVE_NEG, (0.3125, 0.41666666666666663, 0.625), (0.0, 0.3125, 0.625, 0.9375, 1.5625)),
    (FIVE_CONST, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0, 0.0)),
    (
        SIX_BI,
        (0.0, 0.0, 1.1666666666666667),
        (0.0, 1.1666666666666667, 2.3333333333333335, 3.5, 5.833333333333334),
    ),
]


@pytest.mark.parametrize(("data", "expected", "ranges"), QUARTILES)
def test_quartiles(
    data: list[float], expected: tuple[float, float, float] | None, ranges: tuple[float, ...]
) -> None:
    _assert_quartiles(quartiles_of(data, delta=False), expected, ranges)


@pytest.mark.parametrize(("data", "expected", "ranges"), DELTA_QUARTILES)
def test_delta_quartiles(
    data: list[float], expected: tuple[float, float, float] | None, ranges: tuple[float, ...]
) -> None:
    _assert_quartiles(quartiles_of(data, delta=True), expected, ranges)


def quartiles_of(data: list[float], *, delta: bool) -> Quartiles | None:
    return delta_quartiles(array(data)) if delta else quartiles(array(data))


def _assert_quartiles(
    got: Quartiles | None, expected: tuple[float, float, float] | None, ranges: tuple[float, ...]
) -> None:
    if expected is None:
        assert got is None
        return
    assert got is not None
    assert all(close(a, b) for a, b in zip((got.q1, got.q2, got.q3), expected, strict=True))
    spreads = [got.spread(m) for m in IQR_MULTIPLIERS]
    assert all(close(a, b) for a, b in zip(spreads, ranges, strict=True))


# Bencher v0.6.12's limits from given statistics, with the values it judges and the side each
# is an outlier on (None: inside). Boundaries: static -5 / 5, percentage 5.0 (500 %), the
# distributions 0.85 (mean 0, deviation 1, and a t-test of 6 values), the "docs" examples
# 0.977 (mean 100, deviation 10, a t-test of 25 values), iqr and delta_iqr 1.5 (and 2.0 on
# quartiles 95, 100, 105 and delta quartiles 0.1, 0.2, 0.3 in its "docs" example).
STATIC_VALUES = (-10.0, -3.0, 1.0, 3.0, 10.0)


def drawn_from(
    test: TestKind,
    center: float,
    spread: float,
    size: int,
    lower: float | None,
    upper: float | None,
) -> Limits | None:
    """What ``test`` draws from a history of ``size`` values whose mean is ``center`` and sample
    deviation ``spread`` (Bencher's examples give those statistics, not a history)."""
    pairs = size // 2
    offset = spread * math.sqrt((size - 1) / (2 * pairs))
    history = [center - offset] * pairs + [center + offset] * pairs + [center] * (size % 2)
    return limits(Model(test, lower_boundary=lower, upper_boundary=upper), history)


NORMAL_VALUES = (-1.5, -1.0, 0.0, 1.0, 1.5)
DOCS_VALUES = (75.0, 90.0, 100.0, 110.0, 125.0)
IQR_VALUES = (-1.5, -1.0, 0.0, 1.0, 6.0)
Z_LIMIT = 1.0364333894937896
T_LIMIT = 1.2483714094976244
QUARTILES_123 = Quartiles(1.0, 2.0, 3.0)
DELTA_QUARTILES_123 = Quartiles(0.5, 1.0, 1.5)

DRAWN = [
    # id, limits, expected (baseline, lower, upper), values, sides
    ("static-lower", static_limits(-5.0, None), (None, -5.0, None), STATIC_VALUES,
     ("lower", None, None, None, None)),
    ("static-upper", static_limits(None, 5.0), (None, None, 5.0), STATIC_VALUES,
     (None, None, None, None, "upper")),
    ("static-both", static_limits(-5.0, 5.0), (None, -5.0, 5.0), STATIC_VALUES,
     ("lower", None, None, None, "upper")),
    ("percentage-lower", percentage_limits(1.0, 5.0, None), (1.0, -4.0, None), STATIC_VALUES,
     ("lower", None, None, None, None)),
    ("percentage-upper", percentage_limits(1.0, None, 5.0), (1.0, None, 6.0), STATIC_VALUES,
     (None, None, None, None, "upper")),
    ("percentage-both", percentage_limits(1.0, 5.0, 5.0), (1.0, -4.0, 6.0), STATIC_VALUES,
     ("lower", None, None, None, "upper")),
    ("percentage-10%-lower", percentage_limits(1.0, 0.1, None), (1.0, 0.9, None), (), ()),
    ("percentage-10%-upper", percentage_limits(1.0, None, 0.1), (1.0, None, 1.1), (), ()),
    ("z-lower", drawn_from(T.Z_SCORE, 0.0, 1.0, 2, 0.85, None), (0.0, -Z_LIMIT, None),
     NORMAL_VALUES, ("lower", None, None, None, None)),
    ("z-upper", drawn_from(T.Z_SCORE, 0.0, 1.0, 2, None, 0.85), (0.0, None, Z_LIMIT),
     NORMAL_VALUES, (None, None, None, None, "upper")),
    ("z-both", drawn_from(T.Z_SCORE, 0.0, 1.0, 2, 0.85, 0.85), (0.0, -Z_LIMIT, Z_LIMIT),
     NORMAL_VALUES, ("lower", None, None, None, "upper")),
    ("z-docs", drawn_from(T.Z_SCORE, 100.0, 10.0, 2, 0.977, 0.977),
     (100.0, 80.04606689832175, 119.95393310167825), DOCS_VALUES,
     ("lower", None, None, None, "upper")),
    ("t-lower", drawn_from(T.T_TEST, 0.0, 1.0, 6, 0.85, None), (0.0, -T_LIMIT, None),
     NORMAL_VALUES, ("lower", None, None, None, None)),
    ("t-upper", drawn_from(T.T_TEST, 0.0, 1.0, 6, None, 0.85), (0.0, None, T_LIMIT),
     NORMAL_VALUES, (None, None, None, None, "upper")),
    ("t-both", drawn_from(T.T_TEST, 0.0, 1.0, 6, 0.85, 0.85), (0.0, -T_LIMIT, T_LIMIT),
     NORMAL_VALUES, ("lower", None, None, None, "upper")),
    ("t-docs", drawn_from(T.T_TEST, 100.0, 10.0, 25, 0.977, 0.977),
     (100.0, 78.53909652847402, 121.46090347152598), DOCS_VALUES,
     ("lower", None, None, None, "upper")),
    ("iqr-lower", iqr_limits(QUARTILES_123, 1.5, None), (2.0, -1.0, None), IQR_VALUES,
     ("lower", None, None, None, None)),
    ("iqr-upper", iqr_limits(QUARTILES_123, None, 1.5), (2.0, None, 5.0), IQR_VALUES,
     (None, None, None, None, "upper")),
    ("iqr-both", iqr_limits(QUARTILES_123, 1.5, 1.5), (2.0, -1.0, 5.0), IQR_VALUES,
     ("lower", None, None, None, "upper")),
    ("delta_iqr-lower", delta_iqr_limits(QUARTILES_123, DELTA_QUARTILES_123, 1.5, None),
     (2.0, -1.0, None), IQR_VALUES, ("lower", None, None, None, None)),
    ("delta_iqr-upper", delta_iqr_limits(QUARTILES_123, DELTA_QUARTILES_123, None, 1.5),
     (2.0, None, 5.0), IQR_VALUES, (None, None, None, None, "upper")),
    ("delta_iqr-both", delta_iqr_limits(QUARTILES_123, DELTA_QUARTILES_123, 1.5, 1.5),
     (2.0, -1.0, 5.0), IQR_VALUES, ("lower", None, None, None, "upper")),
    ("delta_iqr-docs", delta_iqr_limits(Quartiles(95.0, 100.0, 105.0), Quartiles(0.1, 0.2, 0.3),
     2.0, 2.0), (100.0, 60.0, 140.0), (50.0, 100.0, 150.0), ("lower", None, "upper")),
]  # fmt: skip


@pytest.mark.parametrize(
    ("drawn", "expected", "values", "sides"),
    [pytest.param(*row[1:], id=str(row[0])) for row in DRAWN],
)
def test_limits_from_statistics(
    drawn: Limits | None,
    expected: tuple[float | None, float | None, float | None],
    values: tuple[float, ...],
    sides: tuple[str | None, ...],
) -> None:
    assert drawn is not None
    got = (drawn.baseline, drawn.lower_limit, drawn.upper_limit)
    assert all(close(a, b) for a, b in zip(got, expected, strict=True)), got
    assert [outside(drawn, v) for v in values] == list(sides)


# Bencher v0.6.12's log-normal examples, drawn from whole histories through ``limits`` (the
# order of a history does not matter to this test).
LOG_DATA = [1.0, 2.0, 3.0, 4.0, 5.0] * 6
DOCS_LOG_DATA = [98.0, 99.0, 100.0, 101.0, 102.0] * 5 + [200.0]
FROM_HISTORIES = [
    # id, boundary, history, expected (baseline, lower, upper), values, sides
    ("log_normal", 0.85, LOG_DATA, (2.6051710846973517, 0.467218645251152, 4.743123524143551),
     (0.0, 3.0, 5.0), ("lower", None, "upper")),
    ("log_normal-docs", 0.977, DOCS_LOG_DATA,
     (102.69192869301948, 70.49040406473313, 134.89345332130583),
     (70.0, 90.0, 100.0, 110.0, 140.0), ("lower", None, None, None, "upper")),
]  # fmt: skip


@pytest.mark.parametrize(
    ("boundary", "history", "expected", "values", "sides"),
    [pytest.param(*row[1:], id=str(row[0])) for row in FROM_HISTORIES],
)
def test_log_normal_limits_from_a_history(
    boundary: float,
    history: list[float],
    expected: tuple[float, float, float],
    values: tuple[float, ...],
    sides: tuple[str | None, ...],
) -> None:
    model = Model(T.LOG_NORMAL, lower_boundary=boundary, upper_boundary=boundary)
    drawn = limits(model, history)
    assert drawn is not None
    got = (drawn.baseline, drawn.lower_limit, drawn.upper_limit)
    assert all(close(a, b) for a, b in zip(got, expected, strict=True)), got
    assert [outside(drawn, v) for v in values] == list(sides)
    fit = log_fit(array(history))
    assert fit is not None
    again = log_normal_limits(*fit, boundary, boundary)
    assert again is not None and close(again.upper_limit, expected[2])


def test_t_test_approaches_the_z_score_for_many_values_and_is_wider_for_two() -> None:
    """Bencher v0.6.12's two properties of its prediction interval."""
    z = drawn_from(T.Z_SCORE, 0.0, 1.0, 2, 0.85, 0.85)
    many = drawn_from(T.T_TEST, 0.0, 1.0, 10_000, 0.85, 0.85)
    two = drawn_from(T.T_TEST, 0.0, 1.0, 2, 0.85, 0.85)
    assert z is not None and many is not None and two is not None
    assert z.upper_limit is not None and z.lower_limit is not None
    assert many.upper_limit == pytest.approx(z.upper_limit, abs=1e-3)
    assert many.lower_limit == pytest.approx(z.lower_limit, abs=1e-3)
    assert two.upper_limit is not None and two.upper_limit > z.upper_limit
    assert two.lower_limit is not None and two.lower_limit < z.lower_limit


# Bencher v0.6.12's boundary rules on a history: no value at all (or fewer than
# min_sample_size) draws no limits and raises no alert, whatever the test, ``static`` included.
NO_LIMITS = [
    Model(T.STATIC, lower_boundary=-5.0, upper_boundary=5.0),
    Model(T.PERCENTAGE, upper_boundary=0.1),
    Model(T.Z_SCORE, upper_boundary=0.9),
    Model(T.T_TEST, upper_boundary=0.9),
    Model(T.LOG_NORMAL, upper_boundary=0.9),
    Model(T.IQR, upper_boundary=1.5),
    Model(T.DELTA_IQR, upper_boundary=1.5),
]


@pytest.mark.parametrize("model", NO_LIMITS, ids=[m.test.value for m in NO_LIMITS])
def test_no_history_draws_no_limits(model: Model) -> None:
    assert limits(model, []) is None


# Bencher v0.6.12's ``*_none`` examples: a model with neither boundary draws nothing, whatever
# the history, so no value is an outlier.
@pytest.mark.parametrize("test", [t for t in T if t != T.CHANGE_POINT], ids=lambda t: t.value)
def test_no_boundary_draws_no_limits(test: TestKind) -> None:
    assert limits(Model(test), LOG_DATA) is None


def test_static_limits_start_with_the_first_value() -> None:
    model = Model(T.STATIC, upper_boundary=5.0)
    assert limits(model, [100.0]) == Limits(None, None, 5.0)


def test_below_min_sample_size_draws_no_limits() -> None:
    model = Model(T.PERCENTAGE, min_sample_size=3, upper_boundary=0.1)
    assert limits(model, [1.0, 1.0]) is None
    assert limits(model, [1.0, 1.0, 1.0]) == Limits(1.0, None, 1.1)


def test_a_z_score_limit_uses_the_sample_deviation() -> None:
    """History 10, 12, 11, 13, 9, 11 with an upper boundary of 0.975: Bencher v0.6.12's limit
    is 13.7718 (the population deviation would give 13.5303)."""
    drawn = limits(Model(T.Z_SCORE, upper_boundary=0.975), [10.0, 12.0, 11.0, 13.0, 9.0, 11.0])
    assert drawn is not None and drawn.upper_limit == pytest.approx(13.7718, abs=5e-5)
