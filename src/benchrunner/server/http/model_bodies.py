"""Request bodies shared by ``POST /v0/run`` and the thresholds routes: a threshold model as
Bencher sends it (plus ``change_point``'s parameters), and git hashes."""

from __future__ import annotations

import math
from typing import cast

from pydantic import ConfigDict

from benchrunner.core.versions import is_git_hash
from benchrunner.detection.models import Model, ModelError, TestKind, validate
from benchrunner.server.http.bodies import ApiBody
from benchrunner.server.http.errors import bad_request

MAX_COUNT = 2**32 - 1
"""The largest sample size, window or version count Bencher accepts (unsigned 32 bits)."""


def checked_hash(value: str) -> str:
    """The hash, lowercased; ValueError (a 400 naming the field) when it is not one."""
    if not is_git_hash(value):
        raise ValueError("is not a full git hash (40 or 64 hexadecimal digits)")
    return value.lower()


class ThresholdModelBody(ApiBody):
    """A threshold's model: Bencher's ``test`` and parameters, checked by ``checked_model``."""

    model_config = ConfigDict(extra="forbid")
    test: str
    min_sample_size: int | None = None
    max_sample_size: int | None = None
    window: int | None = None
    lower_boundary: float | None = None
    upper_boundary: float | None = None
    max_pvalue: float | None = None
    min_magnitude: float | None = None


def checked_model(body: ThresholdModelBody, where: str) -> Model:
    """The validated model, or a 400 naming ``where`` and the parameter out of range."""
    for name in ("min_sample_size", "max_sample_size", "window"):
        value = getattr(body, name)
        if value is not None and not 0 <= value <= MAX_COUNT:
            raise bad_request(f"{where}: {name} must be in [0, {MAX_COUNT}], got {value}")
    for name in ("lower_boundary", "upper_boundary", "max_pvalue", "min_magnitude"):
        value = getattr(body, name)
        if value is not None and not math.isfinite(value):
            raise bad_request(f"{where}: {name} must be a finite number, got {value}")
    try:
        return validate(
            Model(
                # validate() reads Bencher's test names and aliases and names a wrong one.
                test=cast(TestKind, body.test),
                min_sample_size=body.min_sample_size,
                max_sample_size=body.max_sample_size,
                window=body.window,
                lower_boundary=body.lower_boundary,
                upper_boundary=body.upper_boundary,
                max_pvalue=body.max_pvalue,
                min_magnitude=body.min_magnitude,
            )
        )
    except ModelError as exc:
        raise bad_request(f"{where}: {exc}") from None
