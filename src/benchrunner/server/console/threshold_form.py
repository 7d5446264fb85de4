"""The threshold form: its fields as text, read into a checked model or into a message per field
(the page shows each beside its field).

The checks are the API's: the counts' and numbers' ranges of
``http.model_bodies.checked_model`` and then ``detection.models.validate``, whose messages
name the parameter they are about; the message goes beside the first parameter it names.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

from benchrunner.detection.models import MAX_COUNT, Model, ModelError, TestKind, validate

COUNT_FIELDS = ("min_sample_size", "max_sample_size", "window")
NUMBER_FIELDS = ("lower_boundary", "upper_boundary", "max_pvalue", "min_magnitude")
MODEL_FIELDS = ("test", *COUNT_FIELDS, *NUMBER_FIELDS)
SERIES_FIELDS = ("branch", "testbed", "measure", "benchmark")
MAX_FIELD_LENGTH = 1024

TESTS = tuple(kind.value for kind in TestKind)
_FIELD_NAMES = re.compile(r"\b(" + "|".join(MODEL_FIELDS) + r")\b")


@dataclass
class ThresholdForm:
    """What the form shows: the values as typed and a message per field that is wrong."""

    values: dict[str, str]
    errors: dict[str, str] = field(default_factory=dict)
    alert_when_noisy: bool = False
    """The checkbox: alert on a report the noise guard found noisy too (the API's field)."""

    @property
    def valid(self) -> bool:
        return not self.errors


def form_values(form: Mapping[str, object], names: tuple[str, ...]) -> ThresholdForm:
    """The form's text fields named ``names`` (missing ones empty; an over-long one an error)
    and its ``alert_when_noisy`` checkbox (a browser sends an unchecked box not at all)."""
    values: dict[str, str] = {}
    errors: dict[str, str] = {}
    for name in names:
        raw = form.get(name)
        text = raw.strip() if isinstance(raw, str) else ""
        if len(text) > MAX_FIELD_LENGTH:
            errors[name] = f"must be at most {MAX_FIELD_LENGTH} characters"
            text = text[:MAX_FIELD_LENGTH]
        values[name] = text
    return ThresholdForm(values, errors, alert_when_noisy=form.get("alert_when_noisy") == "true")


def model_values(model: object | None) -> dict[str, str]:
    """A stored model's fields as the form shows them (empty when there is none)."""
    if model is None:
        return dict.fromkeys(MODEL_FIELDS, "")

    def text(name: str) -> str:
        value = getattr(model, "window_seconds" if name == "window" else name, None)
        return "" if value is None else str(value)

    return {name: text(name) for name in MODEL_FIELDS}


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError("must be a whole number") from None
    if not 0 <= value <= MAX_COUNT:
        raise ValueError(f"must be in [0, {MAX_COUNT}]")
    return value


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError("must be a number") from None
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


def error_field(message: str) -> str:
    """The field a model error is about: the first parameter it names other than ``test``
    (messages name the test for context), else ``test``."""
    named = [m.group(1) for m in _FIELD_NAMES.finditer(message)]
    others = [name for name in named if name != "test"]
    return others[0] if others else "test"


def checked_model(form: ThresholdForm) -> Model | None:
    """The model the form's values describe, or None with ``form.errors`` filled in."""
    values = form.values
    counts: dict[str, int | None] = {}
    numbers: dict[str, float | None] = {}
    for name in COUNT_FIELDS:
        try:
            counts[name] = _count(values[name]) if values[name] else None
        except ValueError as exc:
            form.errors.setdefault(name, str(exc))
    for name in NUMBER_FIELDS:
        try:
            numbers[name] = _number(values[name]) if values[name] else None
        except ValueError as exc:
            form.errors.setdefault(name, str(exc))
    if not values["test"]:
        form.errors.setdefault("test", "choose a test")
    if form.errors:
        return None
    try:
        return validate(
            Model(
                # validate() reads Bencher's test names and aliases and names a wrong one.
                test=cast(TestKind, values["test"]),
                min_sample_size=counts["min_sample_size"],
                max_sample_size=counts["max_sample_size"],
                window=counts["window"],
                lower_boundary=numbers["lower_boundary"],
                upper_boundary=numbers["upper_boundary"],
                max_pvalue=numbers["max_pvalue"],
                min_magnitude=numbers["min_magnitude"],
            )
        )
    except ModelError as exc:
        form.errors[error_field(str(exc))] = str(exc)
        return None
