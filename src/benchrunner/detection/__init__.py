"""Thresholds, boundaries and change points: pure statistics over a measure's history.

No database, no clock, no I/O: a caller hands in a model and the history (oldest first) and
gets back limits, the side a value is outside of, or the change points of a series.

- ``models``: the tests (Bencher's seven and ``change_point``), a model's parameters and their
  validation.
- ``boundary``: the baseline and lower and upper limits a model draws from a history.
- ``change_point``: E-divisive means with a Student's t-test, windowed, as Apache Otava.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchrunner.detection.boundary import Limits, Side, limits, outside
    from benchrunner.detection.change_point import ChangePoint, change_points_many
    from benchrunner.detection.models import Model, ModelError, TestKind, parse_test, validate

_HOME = {
    "ChangePoint": "change_point",
    "change_points_many": "change_point",
    "Limits": "boundary",
    "Side": "boundary",
    "limits": "boundary",
    "outside": "boundary",
    "Model": "models",
    "ModelError": "models",
    "TestKind": "models",
    "parse_test": "models",
    "validate": "models",
}
"""Where each name lives. Imported on first use: ``models`` alone (what the CLI checks
thresholds with) must not pay for SciPy, which ``boundary`` loads."""


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


__all__ = [
    "ChangePoint",
    "Limits",
    "Model",
    "ModelError",
    "Side",
    "TestKind",
    "change_points_many",
    "limits",
    "outside",
    "parse_test",
    "validate",
]
