"""A project's thresholds: the model a threshold judges by (Bencher's ``test`` and parameters,
plus ``change_point``'s), the create and update bodies, and a threshold as the server answers
it (docs/how-to/thresholds-alerts.md)."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from benchrunner.api.base import Answer, ApiBody
from benchrunner.detection.confirmation import MAX_CONFIRM_RUNS

MAX_COUNT = 2**32 - 1
"""The largest sample size, window or version count Bencher accepts (unsigned 32 bits)."""


class ThresholdModelBody(ApiBody):
    """A threshold's model as a request gives it: the test and its parameters (None: left to
    the server); the server checks the ranges (``http.model_bodies.checked_model``)."""

    model_config = ConfigDict(extra="forbid")
    test: str
    min_sample_size: int | None = None
    max_sample_size: int | None = None
    window: int | None = None
    lower_boundary: float | None = None
    upper_boundary: float | None = None
    max_pvalue: float | None = None
    min_magnitude: float | None = None


class ThresholdUpdate(ThresholdModelBody):
    """``PUT .../thresholds/{threshold}``: the whole new model, and the settings to change
    (None: unchanged)."""

    model_config = ConfigDict(extra="forbid")
    alert_when_noisy: bool | None = None
    confirm: int | None = Field(default=None, ge=0, le=MAX_CONFIRM_RUNS)
    """Confirmation runs before a runner job's crossing alerts (0: none); None keeps it."""
    bisect: bool | None = Field(
        default=None,
        description="its alerts start a bisection by themselves (docs/how-to/bisect.md)",
    )


class ThresholdCreate(ThresholdUpdate):
    """``POST .../thresholds``: the series (UUIDs, slugs or names) and its model."""

    model_config = ConfigDict(extra="forbid")
    branch: str = Field(min_length=1, max_length=256)
    testbed: str = Field(min_length=1, max_length=64)
    measure: str = Field(min_length=1, max_length=64)
    benchmark: str | None = Field(default=None, min_length=1, max_length=1024)


class Named(Answer):
    """A named thing's reference: a branch, testbed, benchmark or measure."""

    uuid: str
    name: str
    slug: str


class NamedMeasure(Named):
    units: str


class ThresholdModel(Answer):
    """A model a threshold has (had): ``replaced`` says when it stopped being current;
    ``max_pvalue`` and ``min_magnitude`` only for the tests that read them."""

    uuid: str
    test: str
    min_sample_size: int | None = None
    max_sample_size: int | None = None
    window: int | None = None
    lower_boundary: float | None = None
    upper_boundary: float | None = None
    created: str | None = None
    replaced: str | None = None
    max_pvalue: float | None = None
    min_magnitude: float | None = None


class Threshold(Answer):
    """A threshold with its current ``model`` and, read one at a time, ``models``: every model
    it has had, newest first."""

    uuid: str
    project: str
    branch: Named
    testbed: Named
    measure: NamedMeasure
    benchmark: Named | None = None
    model: ThresholdModel | None = None
    alert_when_noisy: bool = False
    confirm: int = 0
    bisect: bool = False
    created: str | None = None
    modified: str | None = None
    models: list[ThresholdModel] | None = None
