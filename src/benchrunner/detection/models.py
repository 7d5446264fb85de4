"""Threshold models: which test judges a measure's history, with which parameters.

A model is Bencher's *Model* (a test and its parameters) plus our ``change_point`` test.
``validate`` enforces Bencher's ranges for every parameter of every test:

============  =====================================  ==========================================
test          lower_boundary / upper_boundary        other parameters
============  =====================================  ==========================================
static        any finite value (absolute limits);    no min/max sample size, no window;
              lower <= upper when both are given
percentage    finite, >= 0 (0.1 is 10 %)              min/max sample size >= 2, min <= max;
                                                     window >= 1 second
z_score,      finite, in [0.5, 1.0): a cumulative    as percentage
t_test,       probability (0.977 is two standard
log_normal    deviations of a normal distribution)
iqr,          finite, >= 0: a multiplier of the      as percentage
delta_iqr     inter-quartile range
change_point  none (a change in either direction     as percentage, plus max_pvalue in (0, 1]
              is reported, with its sign)            and min_magnitude >= 0 (defaults 0.001, 0)
samples       none (as change_point)                 as change_point, defaults 0.05 and 0.02
============  =====================================  ==========================================

Every test but ``change_point`` and ``samples`` needs a lower boundary, an upper boundary or
both; a missing boundary means no limit on that side. ``max_pvalue`` and ``min_magnitude``
belong to those two only (for ``samples``: the rank test's level and the smallest relative
shift of a run's median, ``detection.samples``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum


class TestKind(StrEnum):
    """The test a model uses; the values are Bencher's names (plus ``change_point``)."""

    __test__ = False  # not a pytest test class, whatever its name says

    STATIC = "static"
    PERCENTAGE = "percentage"
    Z_SCORE = "z_score"
    T_TEST = "t_test"
    LOG_NORMAL = "log_normal"
    IQR = "iqr"
    DELTA_IQR = "delta_iqr"
    CHANGE_POINT = "change_point"
    SAMPLES = "samples"


TEST_ALIASES: dict[str, TestKind] = {"z": TestKind.Z_SCORE, "t": TestKind.T_TEST}
"""Short names Bencher also accepts for a test."""

MAX_COUNT = 2**32 - 1
"""Largest sample size or window Bencher accepts (an unsigned 32-bit integer)."""
MIN_SAMPLE_SIZE = 2
MIN_WINDOW = 1
DEFAULT_MAX_PVALUE = 0.001
DEFAULT_MIN_MAGNITUDE = 0.0


def change_point_parameters(
    max_pvalue: float | None, min_magnitude: float | None
) -> tuple[float, float]:
    """The detector's ``max_pvalue`` and ``min_magnitude`` for a model that sets these (None:
    the detector's defaults)."""
    return (
        DEFAULT_MAX_PVALUE if max_pvalue is None else max_pvalue,
        DEFAULT_MIN_MAGNITUDE if min_magnitude is None else min_magnitude,
    )


SAMPLES_MAX_PVALUE = 0.05
"""``samples``' default ``max_pvalue`` (``detection.samples.DEFAULT_MAX_PVALUE``)."""
SAMPLES_MIN_MAGNITUDE = 0.02
"""``samples``' default ``min_magnitude`` (``detection.samples.DEFAULT_MIN_EFFECT``)."""

_CDF_TESTS = frozenset({TestKind.Z_SCORE, TestKind.T_TEST, TestKind.LOG_NORMAL})
_IQR_TESTS = frozenset({TestKind.IQR, TestKind.DELTA_IQR})


class ModelError(ValueError):
    """A model parameter is out of range; the message names the parameter and the range."""


@dataclass(frozen=True)
class Model:
    """A test and its parameters. Build one, then pass it through ``validate``."""

    test: TestKind
    min_sample_size: int | None = None
    max_sample_size: int | None = None
    window: int | None = None
    """Seconds: only history this recent is used."""
    lower_boundary: float | None = None
    upper_boundary: float | None = None
    max_pvalue: float | None = None
    """``change_point`` only: the largest p-value of a change that is reported."""
    min_magnitude: float | None = None
    """``change_point`` only: the smallest relative change that is reported (0.05 is 5 %)."""


def parse_test(name: str) -> TestKind:
    """The test called ``name`` (Bencher's names and its aliases ``z`` and ``t``).

    Raises ModelError naming the accepted names when there is no such test.
    """
    if name in TEST_ALIASES:
        return TEST_ALIASES[name]
    try:
        return TestKind(name)
    except ValueError:
        accepted = ", ".join([*(kind.value for kind in TestKind), *TEST_ALIASES])
        raise ModelError(f"test {name!r} is not one of: {accepted}") from None


def validate(model: Model) -> Model:
    """The model, checked against Bencher's ranges, with ``change_point`` defaults filled in.

    Raises ModelError whose message names the first parameter out of range and the range it
    must be in.
    """
    test = parse_test(model.test) if isinstance(model.test, str) else model.test
    if not isinstance(test, TestKind):
        raise ModelError(f"test must be one of {', '.join(TestKind)}, got {model.test!r}")
    model = replace(model, test=test)
    if test is TestKind.STATIC:
        _validate_static(model)
        return model
    _validate_counts(model)
    if test is TestKind.CHANGE_POINT:
        return _validate_change_point(model, DEFAULT_MAX_PVALUE, DEFAULT_MIN_MAGNITUDE)
    if test is TestKind.SAMPLES:
        return _validate_change_point(model, SAMPLES_MAX_PVALUE, SAMPLES_MIN_MAGNITUDE)
    for name in ("max_pvalue", "min_magnitude"):
        if getattr(model, name) is not None:
            raise ModelError(
                f"{name} is a parameter of change_point and samples only, not of {test}"
            )
    if model.lower_boundary is None and model.upper_boundary is None:
        raise ModelError(f"the {test} test needs a lower_boundary, an upper_boundary or both")
    for side in ("lower_boundary", "upper_boundary"):
        value = _number(model, side)
        if value is None:
            continue
        if test in _CDF_TESTS and not 0.5 <= value < 1.0:
            raise ModelError(
                f"{side} of {test} must be a cumulative probability in [0.5, 1.0) "
                f"(0.977 is two standard deviations), got {value}"
            )
        if test is TestKind.PERCENTAGE and value < 0:
            raise ModelError(
                f"{side} of percentage must be a fraction >= 0 (0.1 is 10 %), got {value}"
            )
        if test in _IQR_TESTS and value < 0:
            raise ModelError(
                f"{side} of {test} must be a multiplier of the inter-quartile range "
                f">= 0, got {value}"
            )
    return model


def _validate_static(model: Model) -> None:
    for name in ("min_sample_size", "max_sample_size", "window", "max_pvalue", "min_magnitude"):
        if getattr(model, name) is not None:
            raise ModelError(f"a static model takes no {name} (its limits are its boundaries)")
    lower = _number(model, "lower_boundary")
    upper = _number(model, "upper_boundary")
    if lower is None and upper is None:
        raise ModelError("a static model needs a lower_boundary, an upper_boundary or both")
    if lower is not None and upper is not None and lower > upper:
        raise ModelError(
            f"lower_boundary ({lower}) of a static model must not be greater than "
            f"upper_boundary ({upper})"
        )


def _validate_counts(model: Model) -> None:
    low = _count(model, "min_sample_size", MIN_SAMPLE_SIZE, "")
    high = _count(model, "max_sample_size", MIN_SAMPLE_SIZE, "")
    _count(model, "window", MIN_WINDOW, " seconds")
    if low is not None and high is not None and low > high:
        raise ModelError(
            f"max_sample_size ({high}) must be greater than or equal to min_sample_size ({low})"
        )


def _validate_change_point(model: Model, max_pvalue: float, min_magnitude: float) -> Model:
    for side in ("lower_boundary", "upper_boundary"):
        if getattr(model, side) is not None:
            raise ModelError(
                f"a {model.test} model takes no {side}: it reports changes in both "
                "directions (use min_magnitude to ignore small ones)"
            )
    pvalue = _number(model, "max_pvalue")
    if pvalue is not None and not 0.0 < pvalue <= 1.0:
        raise ModelError(f"max_pvalue must be in (0, 1], got {pvalue}")
    magnitude = _number(model, "min_magnitude")
    if magnitude is not None and magnitude < 0:
        raise ModelError(
            f"min_magnitude must be a relative change >= 0 (0.05 is 5 %), got {magnitude}"
        )
    return replace(
        model,
        max_pvalue=max_pvalue if pvalue is None else pvalue,
        min_magnitude=min_magnitude if magnitude is None else magnitude,
    )


def _count(model: Model, name: str, least: int, unit: str) -> int | None:
    value: object = getattr(model, name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= MAX_COUNT:
        raise ModelError(
            f"{name} must be an integer from {least} to {MAX_COUNT}{unit}, got {value!r}"
        )
    return value


def _number(model: Model, name: str) -> float | None:
    value: object = getattr(model, name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ModelError(f"{name} must be a finite number, got {value!r}")
    return float(value)
