from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import pytest
from scipy import stats

from benchrunner.detection import Limits, Model, TestKind, limits, outside

T = TestKind
E = math.e
Z975 = 1.959963984540054  # standard normal quantile at 0.975
T975_7 = 2.364624251592785  # Student's t quantile at 0.975, 7 degrees of freedom
Z90 = 1.2815515655446004  # standard normal quantile at 0.9
CLASSIC = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]  # mean 5, squared deviations sum to 32
SAMPLE_DEVIATION = math.sqrt(32 / 7)  # divided by n - 1, as Bencher v0.6.12


def approx(expected: Limits, rel: float = 1e-12) -> object:
    """Compares as a (baseline, lower_limit, upper_limit) tuple, None for None."""
    return _Close(expected, rel)


class _Close:
    def __init__(self, expected: Limits, rel: float) -> None:
        self.expected, self.rel = expected, rel

    def __eq__(self, got: object) -> bool:
        if not isinstance(got, Limits):
            return False
        pairs = zip(_fields(got), _fields(self.expected), strict=True)
        return all(
            a is None
            if b is None
            else a is not None and math.isclose(a, b, rel_tol=self.rel, abs_tol=1e-12)
            for a, b in pairs
        )

    def __repr__(self) -> str:
        return f"approximately {self.expected}"


def _fields(limits: Limits) -> tuple[float | None, float | None, float | None]:
    return limits.baseline, limits.lower_limit, limits.upper_limit


# Worked by hand: each row is a test, a history (oldest first) and the limits it must give.
WORKED = [
    pytest.param(
        Model(T.STATIC, lower_boundary=-5, upper_boundary=5),
        [0.0],
        Limits(None, -5, 5),
        id="static",
    ),
    pytest.param(
        Model(T.STATIC, upper_boundary=7.5),
        [1.0, 100.0],
        Limits(None, None, 7.5),
        id="static-upper",
    ),
    pytest.param(
        Model(T.PERCENTAGE, lower_boundary=0.1, upper_boundary=0.25),
        [90.0, 100.0, 110.0],
        Limits(100.0, 90.0, 125.0),
        id="percentage",
    ),
    pytest.param(
        Model(T.PERCENTAGE, upper_boundary=0.5),
        [40.0],
        Limits(40.0, None, 60.0),
        id="percentage-one",
    ),
    pytest.param(
        Model(T.Z_SCORE, lower_boundary=0.975, upper_boundary=0.975),
        CLASSIC,
        Limits(5.0, 5.0 - SAMPLE_DEVIATION * Z975, 5.0 + SAMPLE_DEVIATION * Z975),
        id="z_score",
    ),
    pytest.param(
        # t-test: n - 1 = 7 degrees of freedom, scaled by the sample deviation * sqrt(1 + 1/8)
        Model(T.T_TEST, lower_boundary=0.975, upper_boundary=0.975),
        CLASSIC,
        Limits(
            5.0,
            5.0 - SAMPLE_DEVIATION * math.sqrt(9 / 8) * T975_7,
            5.0 + SAMPLE_DEVIATION * math.sqrt(9 / 8) * T975_7,
        ),
        id="t_test",
    ),
    pytest.param(
        # logarithms 0, 1, 2: location 1, scale 1 (sample); the lower limit mirrors through e
        Model(T.LOG_NORMAL, lower_boundary=0.9, upper_boundary=0.9),
        [1.0, E, E**2],
        Limits(E, 2 * E - math.exp(1 + Z90), math.exp(1 + Z90)),
        id="log_normal",
    ),
    pytest.param(
        Model(T.IQR, lower_boundary=1.5, upper_boundary=1.5),
        [9.0, 1.0, 8.0, 2.0, 7.0, 3.0, 6.0, 4.0, 5.0],  # q1 3, median 5, q3 7
        Limits(5.0, -1.0, 11.0),
        id="iqr",
    ),
    pytest.param(
        Model(T.IQR, lower_boundary=2, upper_boundary=2),
        [1.0, 2.0, 3.0, 4.0],  # interpolated: q1 1.75, median 2.5, q3 3.25
        Limits(2.5, -0.5, 5.5),
        id="iqr-interpolated",
    ),
    pytest.param(Model(T.IQR, upper_boundary=3), [4.0], Limits(4.0, None, 4.0), id="iqr-one"),
    pytest.param(
        # newest first 99, 99, 110, 100: changes |99-99|/99 = 0, |110-99|/99 = 1/9,
        # |100-110|/110 = 1/11; their q1 1/22 and q3 10/99 are 1/18 apart; median 99.5
        Model(T.DELTA_IQR, lower_boundary=1, upper_boundary=2),
        [100.0, 110.0, 99.0, 99.0],
        Limits(99.5, 99.5 - 99.5 / 18, 99.5 + 2 * 99.5 / 18),
        id="delta_iqr",
    ),
]


@pytest.mark.parametrize(("model", "history", "expected"), WORKED)
def test_worked_examples(model: Model, history: list[float], expected: Limits) -> None:
    assert limits(model, history) == approx(expected)


def test_delta_iqr_reads_changes_newest_to_oldest() -> None:
    """The same values in the other order give other changes (0.1, 0.1, 0 from 100 -> 110 ->
    99 -> 99 read as Bencher reads them, newest first)."""
    model = Model(T.DELTA_IQR, upper_boundary=1)
    assert limits(model, [99.0, 99.0, 110.0, 100.0]) == approx(Limits(99.5, None, 99.5 * 1.05))


def independent(model: Model, history: Sequence[float]) -> Limits:
    """The same limits computed another way: the statistics module and standardised quantiles."""
    lower, upper = model.lower_boundary, model.upper_boundary
    assert lower is not None and upper is not None
    mean, deviation = statistics.fmean(history), statistics.stdev(history)
    normal = statistics.NormalDist()
    logs = [math.log(x) for x in history] if model.test is T.LOG_NORMAL else []
    if logs:
        mean = math.exp(statistics.fmean(logs))

    def quantile(p: float) -> float:
        if model.test is T.Z_SCORE:
            return mean + deviation * normal.inv_cdf(p)
        if model.test is T.T_TEST:
            n = len(history)
            return mean + deviation * math.sqrt(1 + 1 / n) * float(stats.t.ppf(p, n - 1))
        return mean * math.exp(statistics.stdev(logs) * normal.inv_cdf(p))

    return Limits(mean, 2 * mean - quantile(lower), quantile(upper))


HISTORIES = [
    [12.1, 11.8, 12.6, 12.0, 13.1, 11.9, 12.4],
    [1050.0, 990.0, 1010.0, 1200.0, 980.0, 1001.0, 999.0, 1003.0, 1020.0, 1015.0, 1011.0],
    [0.5, 0.7],
]


@pytest.mark.parametrize("history", HISTORIES)
@pytest.mark.parametrize("test", [T.Z_SCORE, T.T_TEST, T.LOG_NORMAL])
@pytest.mark.parametrize(("low", "high"), [(0.5, 0.99), (0.977, 0.9), (0.75, 0.9999)])
def test_distributions_against_an_independent_computation(
    test: TestKind, history: list[float], low: float, high: float
) -> None:
    model = Model(test, lower_boundary=low, upper_boundary=high)
    got = limits(model, history)
    assert got == approx(independent(model, history), rel=1e-9)


@pytest.mark.parametrize("history", HISTORIES)
def test_quartiles_against_the_statistics_module(history: list[float]) -> None:
    q1, median, q3 = statistics.quantiles(history, n=4, method="inclusive")
    got = limits(Model(T.IQR, lower_boundary=0.5, upper_boundary=3.0), history)
    assert got == approx(Limits(median, median - 0.5 * (q3 - q1), median + 3.0 * (q3 - q1)))


@pytest.mark.parametrize(
    ("model", "history"),
    [
        # below min_sample_size
        (Model(T.PERCENTAGE, min_sample_size=5, upper_boundary=0.1), [1.0, 2.0, 3.0, 4.0]),
        (Model(T.T_TEST, min_sample_size=3, upper_boundary=0.9), [1.0, 2.0]),
        # below what the test needs (a static threshold too: no limits before a first value)
        (Model(T.STATIC, lower_boundary=-5, upper_boundary=5), []),
        (Model(T.PERCENTAGE, upper_boundary=0.1), []),
        (Model(T.IQR, upper_boundary=1.5), []),
        (Model(T.Z_SCORE, upper_boundary=0.9), [5.0]),
        (Model(T.T_TEST, upper_boundary=0.9), [5.0]),
        (Model(T.LOG_NORMAL, upper_boundary=0.9), [5.0]),
        (Model(T.DELTA_IQR, upper_boundary=1.5), [5.0]),
        # zero variance: no distribution to draw limits from
        (Model(T.Z_SCORE, upper_boundary=0.9), [3.0, 3.0, 3.0]),
        (Model(T.T_TEST, lower_boundary=0.9), [3.0, 3.0]),
        (Model(T.LOG_NORMAL, upper_boundary=0.9), [2.0, 2.0, 2.0]),
        # logarithms of non-positive values
        (Model(T.LOG_NORMAL, upper_boundary=0.9), [1.0, 2.0, 0.0]),
        (Model(T.LOG_NORMAL, upper_boundary=0.9), [1.0, -2.0, 3.0]),
        # a change of a zero value is not finite
        (Model(T.DELTA_IQR, upper_boundary=1), [1.0, 0.0, 1.0]),
        # no boundary at all; change_point draws no limits
        (Model(T.PERCENTAGE), [1.0, 2.0]),
        (Model(T.CHANGE_POINT), [1.0, 2.0, 3.0]),
    ],
)
def test_no_limits(model: Model, history: list[float]) -> None:
    assert limits(model, history) is None


def test_min_sample_size_is_inclusive() -> None:
    model = Model(T.PERCENTAGE, min_sample_size=3, upper_boundary=0.5)
    assert limits(model, [2.0, 2.0]) is None
    assert limits(model, [2.0, 2.0, 2.0]) == Limits(2.0, None, 3.0)


def test_max_sample_size_keeps_the_newest() -> None:
    model = Model(T.PERCENTAGE, max_sample_size=3, lower_boundary=0.5, upper_boundary=0.5)
    assert limits(model, [1000.0, 1.0, 2.0, 3.0]) == Limits(2.0, 1.0, 3.0)
    assert limits(model, [4.0]) == Limits(4.0, 2.0, 6.0)


def test_zero_spread_iqr_has_limits_at_the_median() -> None:
    got = limits(Model(T.IQR, lower_boundary=2, upper_boundary=2), [3.0, 3.0, 3.0])
    assert got == Limits(3.0, 3.0, 3.0)
    assert got is not None and outside(got, 3.0) is None and outside(got, 3.0001) == "upper"


@pytest.mark.parametrize(
    ("model", "low", "high"),
    [
        (Model(T.PERCENTAGE, upper_boundary=0.1), None, 110.0),
        (Model(T.PERCENTAGE, lower_boundary=0.1), 90.0, None),
        (Model(T.Z_SCORE, upper_boundary=0.975), None, 100.0 + math.sqrt(400 / 3) * Z975),
        (Model(T.Z_SCORE, lower_boundary=0.975), 100.0 - math.sqrt(400 / 3) * Z975, None),
    ],
)
def test_a_missing_boundary_is_no_limit_on_that_side(
    model: Model, low: float | None, high: float | None
) -> None:
    got = limits(model, [90.0, 110.0, 90.0, 110.0])  # mean 100, sample variance 400 / 3
    assert got == approx(Limits(100.0, low, high))
    assert got is not None
    assert outside(got, -1e300) == (None if low is None else "lower")
    assert outside(got, 1e300) == (None if high is None else "upper")


@pytest.mark.parametrize(
    ("bounds", "value", "side"),
    [
        (Limits(5.0, 4.0, 6.0), 5.0, None),
        (Limits(5.0, 4.0, 6.0), 4.0, None),  # at a limit is not outside
        (Limits(5.0, 4.0, 6.0), 6.0, None),
        (Limits(5.0, 4.0, 6.0), math.nextafter(4.0, 0.0), "lower"),
        (Limits(5.0, 4.0, 6.0), math.nextafter(6.0, 7.0), "upper"),
        (Limits(5.0, 4.0, None), 1e300, None),
        (Limits(5.0, None, 6.0), -1e300, None),
        (Limits(None, None, None), 1e300, None),
        (Limits(None, 6.0, 4.0), 5.0, "lower"),  # crossed limits: lower is checked first
    ],
)
def test_outside(bounds: Limits, value: float, side: str | None) -> None:
    assert outside(bounds, value) == side


def test_a_test_given_as_its_name_draws_the_same_limits() -> None:
    by_name = Model("z_score", upper_boundary=0.975)  # type: ignore[arg-type]
    assert limits(by_name, CLASSIC) == limits(Model(T.Z_SCORE, upper_boundary=0.975), CLASSIC)
    assert limits(Model("change_point"), CLASSIC) is None  # type: ignore[arg-type]
