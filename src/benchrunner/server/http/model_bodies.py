"""The server's check of a threshold model in a request body, shared by ``POST /v0/run`` and
the thresholds routes: ``api.thresholds.ThresholdModelBody`` into a validated ``Model`` (git
hashes are checked by the body models themselves, ``api.run.checked_hash``)."""

from __future__ import annotations

import math
from typing import cast

from benchrunner.api.thresholds import MAX_COUNT, ThresholdModelBody
from benchrunner.detection.models import Model, ModelError, TestKind, validate
from benchrunner.server.http.errors import bad_request


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
