"""Thresholds, boundaries and change points: pure statistics over a measure's history.

No database, no clock, no I/O: a caller hands in a model and the history (oldest first) and
gets back limits, the side a value is outside of, or the change points of a series.

- ``models``: the tests (Bencher's seven and ``change_point``), a model's parameters and their
  validation.
- ``boundary``: the baseline and lower and upper limits a model draws from a history.
- ``change_point``: E-divisive means with a Student's t-test, windowed, as Apache Otava.
"""

from __future__ import annotations

from benchrunner.detection.boundary import Limits, Side, limits, outside
from benchrunner.detection.change_point import ChangePoint, change_points
from benchrunner.detection.models import Model, ModelError, TestKind, parse_test, validate

__all__ = [
    "ChangePoint",
    "Limits",
    "Model",
    "ModelError",
    "Side",
    "TestKind",
    "change_points",
    "limits",
    "outside",
    "parse_test",
    "validate",
]
