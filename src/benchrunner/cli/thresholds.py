"""``--threshold-*`` flags of ``benchrunner run`` -> the ``thresholds`` object of ``POST /v0/run``.

As Bencher's CLI: each ``--threshold-measure`` starts a threshold; the n-th ``--threshold-test``,
``--threshold-min-sample-size``, ... belong to the n-th measure. A threshold that should leave an
option out while a later one sets it writes ``_`` in its place. Each model is checked with the
server's own rules (``detection.models.validate``, Bencher's ranges) so that a typo is a usage
error before anything is sent.

Beyond Bencher: the ``change_point`` test, with ``--threshold-max-pvalue`` and
``--threshold-min-magnitude`` (the same positional pairing), and no boundaries.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from benchrunner.api.run import RunThresholds
from benchrunner.api.thresholds import ThresholdModelBody
from benchrunner.detection.models import Model, ModelError, TestKind, parse_test, validate

SKIP = "_"
"""Written in place of an option a threshold does not set."""


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
_PARAMETER = {
    "min_sample_sizes": "min_sample_size",
    "max_sample_sizes": "max_sample_size",
    "windows": "window",
    "lower_boundaries": "lower_boundary",
    "upper_boundaries": "upper_boundary",
    "max_pvalues": "max_pvalue",
    "min_magnitudes": "min_magnitude",
}
"""Flag group -> the model parameter it sets (the body's key)."""
_INTEGERS = frozenset({"min_sample_size", "max_sample_size", "window"})


def thresholds_body(flags: ThresholdFlags) -> RunThresholds | None:
    """``{"models": {measure: model}, "reset": true}`` (keys only when set), or None when no
    threshold flag was given. Raises ``ThresholdsError`` naming the flag and the measure.
    """
    measures = list(flags.measures)
    for name, flag in _FLAG.items():
        given = getattr(flags, name)
        if len(given) > len(measures):
            extra = ", ".join(given[len(measures) :])
            raise ThresholdsError(
                f"{flag} is given {len(given)} times for {len(measures)} "
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
    models: dict[str, ThresholdModelBody] = {}
    for index, measure in enumerate(measures):
        if index >= len(flags.tests):
            raise ThresholdsError(
                f"the threshold for measure {measure!r} has no test: give a --threshold-test "
                f"({', '.join(TestKind)}) for each --threshold-measure"
            )
        try:
            models[measure] = _model(measure, index, flags)
        except ThresholdsError as exc:
            if len(measures) == 1:
                raise
            raise ThresholdsError(
                f"{exc} (with several --threshold-measure, the n-th of each --threshold-* "
                "option goes to the n-th measure: write _ where a measure takes none)"
            ) from None
    if not models and not flags.reset:
        return None
    return RunThresholds(models=models or None, reset=True if flags.reset else None)


def _model(measure: str, index: int, flags: ThresholdFlags) -> ThresholdModelBody:
    where = f"(measure {measure!r})"
    parameters: dict[str, int | float] = {}
    for name, key in _PARAMETER.items():
        given: Sequence[str] = getattr(flags, name)
        if index < len(given) and given[index].strip() != SKIP:
            what = f"{_FLAG[name]} {given[index]!r} {where}"
            parameters[key] = (
                _integer(given[index], what) if key in _INTEGERS else _real(given[index], what)
            )
    return model_body(flags.tests[index], parameters, flag_prefix="--threshold-", where=where)


def model_body(
    test: str,
    parameters: Mapping[str, int | float | None],
    *,
    flag_prefix: str = "--",
    where: str = "",
) -> ThresholdModelBody:
    """``{"test": ..., parameter: value}`` (the parameters that are not None), checked with
    the server's rules. ``ThresholdsError`` names the flag (``flag_prefix`` + the parameter,
    dashed) and ``where``, e.g. ``(measure 'latency')``.
    """
    where = f" {where}" if where else ""
    try:
        kind = parse_test(test)
    except ModelError as exc:
        raise ThresholdsError(f"{flag_prefix}test{where}: {exc}") from None
    model: dict[str, Any] = {"test": kind.value}
    for key, value in parameters.items():
        if value is None:
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise ThresholdsError(f"{_flag(flag_prefix, key)} {value}{where} must be finite")
        model[key] = value
    try:
        # Checked, not sent as validated: change_point's defaults stay the server's to fill.
        validate(Model(**{**model, "test": kind}))
    except ModelError as exc:
        message = _in_flags(str(exc), flag_prefix)
        raise ThresholdsError(f"the {kind} threshold{where}: {message}") from None
    try:
        return ThresholdModelBody.model_validate(model)
    except ValidationError as exc:
        raise ThresholdsError(f"the {kind} threshold{where}: {exc.errors()[0]['msg']}") from None


def _flag(prefix: str, key: str) -> str:
    return prefix + key.replace("_", "-")


def _in_flags(message: str, prefix: str) -> str:
    """The validator names body keys; the user typed flags."""
    for key in _PARAMETER.values():
        message = re.sub(rf"\b(an? )?{key}\b", _flag(prefix, key), message)
    return message


def _integer(text: str, what: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ThresholdsError(f"{what} is not a whole number") from None


def _real(text: str, what: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise ThresholdsError(f"{what} is not a number") from None
    if not math.isfinite(value):
        raise ThresholdsError(f"{what} must be a finite number")
    return value
