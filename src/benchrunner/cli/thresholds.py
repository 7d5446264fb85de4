"""``--threshold-*`` flags of ``benchrunner run`` -> the ``thresholds`` object of ``POST /v0/run``.

As Bencher's CLI: each ``--threshold-measure`` starts a threshold; the n-th ``--threshold-test``,
``--threshold-min-sample-size``, ... belong to the n-th measure. A threshold that should leave an
option out while a later one sets it writes ``_`` in its place. The model is checked here with
Bencher's rules so that a typo is a usage error before anything is sent.

Beyond Bencher: the ``change_point`` test, with ``--threshold-max-pvalue`` and
``--threshold-min-magnitude`` (the same positional pairing), and no boundaries.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

TestName = Literal[
    "static", "percentage", "z_score", "t_test", "log_normal", "iqr", "delta_iqr", "change_point"
]
TESTS: tuple[str, ...] = get_args(TestName)
TEST_ALIASES = {"z": "z_score", "t": "t_test"}
"""Short names Bencher also accepts; the body carries the full name."""
SKIP = "_"
"""Written in place of an option a threshold does not set."""

MIN_SAMPLE_SIZE = 2
MAX_U32 = 2**32 - 1


class ThresholdsError(ValueError):
    """The threshold flags do not describe valid models; the message names the flag."""


@dataclass(frozen=True)
class ThresholdFlags:
    """The raw values of the repeatable ``--threshold-*`` flags, in the order given."""

    measures: Sequence[str] = ()
    tests: Sequence[str] = ()
    min_sample_sizes: Sequence[str] = ()
    max_sample_sizes: Sequence[str] = ()
    windows: Sequence[str] = ()
    lower_boundaries: Sequence[str] = ()
    upper_boundaries: Sequence[str] = ()
    max_pvalues: Sequence[str] = ()
    min_magnitudes: Sequence[str] = ()
    reset: bool = False


_FLAG = {
    "tests": "--threshold-test",
    "min_sample_sizes": "--threshold-min-sample-size",
    "max_sample_sizes": "--threshold-max-sample-size",
    "windows": "--threshold-window",
    "lower_boundaries": "--threshold-lower-boundary",
    "upper_boundaries": "--threshold-upper-boundary",
    "max_pvalues": "--threshold-max-pvalue",
    "min_magnitudes": "--threshold-min-magnitude",
}


def thresholds_body(flags: ThresholdFlags) -> dict[str, Any] | None:
    """``{"models": {measure: model}, "reset": true}`` (keys only when set), or None when no
    threshold flag was given. Raises ``ThresholdsError`` naming the flag and the measure.
    """
    measures = list(flags.measures)
    for name in _FLAG:
        given = getattr(flags, name)
        if len(given) > len(measures):
            extra = ", ".join(given[len(measures) :])
            raise ThresholdsError(
                f"{_FLAG[name]} is given {len(given)} times for {len(measures)} "
                f"--threshold-measure (extra: {extra}); each threshold starts with a "
                "--threshold-measure"
            )
    seen: set[str] = set()
    for measure in measures:
        if not measure.strip():
            raise ThresholdsError("--threshold-measure cannot be empty")
        if measure in seen:
            raise ThresholdsError(f"--threshold-measure {measure!r} is given twice")
        seen.add(measure)
    models: dict[str, dict[str, Any]] = {}
    for index, measure in enumerate(measures):
        if index >= len(flags.tests):
            raise ThresholdsError(
                f"the threshold for measure {measure!r} has no test: give a --threshold-test "
                f"({', '.join(TESTS)}) for each --threshold-measure"
            )
        models[measure] = _model(measure, index, flags)
    if not models and not flags.reset:
        return None
    body: dict[str, Any] = {}
    if models:
        body["models"] = models
    if flags.reset:
        body["reset"] = True
    return body


def _model(measure: str, index: int, flags: ThresholdFlags) -> dict[str, Any]:
    test = TEST_ALIASES.get(flags.tests[index], flags.tests[index])
    if test not in TESTS:
        raise ThresholdsError(
            f"--threshold-test {test!r} (measure {measure!r}) is not one of {', '.join(TESTS)}"
        )
    where = f"(measure {measure!r})"
    model: dict[str, Any] = {"test": test}
    for name, key, read in (
        ("min_sample_sizes", "min_sample_size", _sample_size),
        ("max_sample_sizes", "max_sample_size", _sample_size),
        ("windows", "window", _window),
        ("lower_boundaries", "lower_boundary", _number),
        ("upper_boundaries", "upper_boundary", _number),
        ("max_pvalues", "max_pvalue", _number),
        ("min_magnitudes", "min_magnitude", _number),
    ):
        given: Sequence[str] = getattr(flags, name)
        if index < len(given) and given[index].strip() != SKIP:
            model[key] = read(given[index], f"{_FLAG[name]} {given[index]!r} {where}")
    check_model(model, where)
    return model


def check_model(model: dict[str, Any], where: str) -> None:
    """Bencher's model rules: a static test takes no sample sizes or window and needs
    lower <= upper; every other test needs min <= max sample size and a boundary in its test's
    range; ``change_point`` takes no boundary, a ``max_pvalue`` in (0, 1] and a
    ``min_magnitude`` >= 0, which no other test takes.
    """
    test = model["test"]
    if test != "change_point":
        for key in ("max_pvalue", "min_magnitude"):
            if key in model:
                raise ThresholdsError(f"{key} is for change_point thresholds, not {test} {where}")
    if test == "static":
        _check_static(model, where)
        return
    low, high = model.get("min_sample_size"), model.get("max_sample_size")
    if low is not None and high is not None and low > high:
        raise ThresholdsError(
            f"the threshold {where} has a min sample size {low} above its max sample size {high}"
        )
    if test == "change_point":
        _check_change_point(model, where)
        return
    lower, upper = model.get("lower_boundary"), model.get("upper_boundary")
    if lower is None and upper is None:
        raise ThresholdsError(
            f"the {test} threshold {where} needs --threshold-lower-boundary, "
            "--threshold-upper-boundary or both"
        )
    for side, boundary in (("lower", lower), ("upper", upper)):
        if boundary is None:
            continue
        if test in ("z_score", "t_test", "log_normal") and not 0.5 <= boundary < 1:
            raise ThresholdsError(
                f"the {test} threshold {where} needs its {side} boundary in [0.5, 1) "
                f"(a probability), not {boundary:g}"
            )
        if test in ("percentage", "iqr", "delta_iqr") and boundary < 0:
            raise ThresholdsError(
                f"the {test} threshold {where} needs its {side} boundary >= 0, not {boundary:g}"
            )


def _check_static(model: dict[str, Any], where: str) -> None:
    lower, upper = model.get("lower_boundary"), model.get("upper_boundary")
    for key in ("min_sample_size", "max_sample_size", "window"):
        if key in model:
            raise ThresholdsError(
                f"a static threshold {where} takes no {key.replace('_', ' ')} "
                "(its boundaries are the limits themselves)"
            )
    if lower is None and upper is None:
        raise ThresholdsError(
            f"the static threshold {where} needs --threshold-lower-boundary, "
            "--threshold-upper-boundary or both"
        )
    if lower is not None and upper is not None and lower > upper:
        raise ThresholdsError(
            f"the static threshold {where} has a lower boundary {lower:g} above its "
            f"upper boundary {upper:g}"
        )


def _check_change_point(model: dict[str, Any], where: str) -> None:
    for key in ("lower_boundary", "upper_boundary"):
        if key in model:
            raise ThresholdsError(
                f"a change_point threshold {where} takes no {key.replace('_', ' ')}: it reports "
                "steps either way (--threshold-min-magnitude ignores small ones)"
            )
    pvalue, magnitude = model.get("max_pvalue"), model.get("min_magnitude")
    if pvalue is not None and not 0 < pvalue <= 1:
        raise ThresholdsError(f"the max p-value {where} must be in (0, 1], not {pvalue:g}")
    if magnitude is not None and magnitude < 0:
        raise ThresholdsError(
            f"the min magnitude {where} must be >= 0 (0.05 is 5 %), not {magnitude:g}"
        )


def _integer(text: str, what: str, minimum: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ThresholdsError(f"{what} is not a whole number") from None
    if not minimum <= value <= MAX_U32:
        raise ThresholdsError(f"{what} must be between {minimum} and {MAX_U32}")
    return value


def _sample_size(text: str, what: str) -> int:
    return _integer(text, what, MIN_SAMPLE_SIZE)


def _window(text: str, what: str) -> int:
    return _integer(text, what, 1)


def _number(text: str, what: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise ThresholdsError(f"{what} is not a number") from None
    if not math.isfinite(value):
        raise ThresholdsError(f"{what} must be a finite number")
    return value
