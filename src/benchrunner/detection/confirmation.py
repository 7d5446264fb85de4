"""Confirmation before alerting (docs/how-to/thresholds-alerts.md): whether the re-runs of a
runner job agree with the crossing its report made. Pure: the server reads the values.

A crossing is confirmed when every re-run that measured the metric crossed the same way: beyond
the same limit on the same side (a limit test), or on the far side of the step's midpoint (a
change point). One re-run back within the limit makes the crossing *suspected*: a one-off blip.
When no re-run measured the metric (they failed, or their output lacked it) nothing speaks
against the crossing and the alert is raised as it stood, marked *unconfirmed*.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Literal

DEFAULT_CONFIRM_RUNS = 0
"""Confirmation runs of a threshold that sets none (its ``confirm`` is null)."""

MAX_CONFIRM_RUNS = 10
"""The most re-runs one crossing may queue."""

Side = Literal["lower", "upper"]


class Outcome(StrEnum):
    PENDING = "pending"
    """Re-runs queued or running: no alert yet."""
    CONFIRMED = "confirmed"
    """Every re-run agreed: the alert is raised."""
    SUSPECTED = "suspected"
    """A re-run disagreed: no alert; the metric is marked suspected."""
    UNCONFIRMED = "unconfirmed"
    """No re-run measured the metric: the alert is raised as it stood."""


def confirm_runs(stored: int | None) -> int:
    """A threshold's confirmation runs: its own ``confirm``, else the default."""
    return DEFAULT_CONFIRM_RUNS if stored is None else stored


def limit_agrees(side: Side, lower: float | None, upper: float | None, value: float) -> bool:
    """Whether a re-run's ``value`` is beyond the limit the report crossed, on its side."""
    if side == "upper":
        return upper is not None and value > upper
    return lower is not None and value < lower


def change_agrees(side: Side, before: float, after: float, value: float) -> bool:
    """Whether a re-run's ``value`` lies on the new level's side of a step's midpoint."""
    middle = (before + after) / 2
    return value > middle if side == "upper" else value < middle


def decide(agreements: Sequence[bool]) -> Outcome:
    """The outcome of a crossing from each measuring re-run's agreement."""
    if not agreements:
        return Outcome.UNCONFIRMED
    return Outcome.CONFIRMED if all(agreements) else Outcome.SUSPECTED
