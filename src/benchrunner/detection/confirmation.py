"""Confirmation before alerting (docs/how-to/thresholds-alerts.md): whether the re-runs of a
runner job agree with the crossing its report made. Pure: the server reads the values.

A crossing is confirmed when every re-run that measured the metric crossed the same way: beyond
the same limit on the same side (a limit test), or on the far side of the step's midpoint (a
change point). One re-run back within the limit makes the crossing *suspected*: a one-off blip.
When no re-run measured the metric (they failed, or their output lacked it) nothing speaks
against the crossing and the alert is raised as it stood, marked *unconfirmed*.

A confirmation run as a duet (the new version against the baseline's, round by round) answers
with the interval of the new/baseline ratio instead: the crossing is confirmed when the
interval lies wholly beyond ``1 ± margin`` on the crossing's side (**different**); an interval
wholly within (**same**; for a ``samples`` threshold, within its whole ``min_magnitude``:
``same_margin``) does not confirm it. One that straddles the margin (**unknown**) asks
for more rounds: another duet of the same sides, judged with the earlier ones pooled
(``detection.duet.pooled_interval``), while all of them stay within ``MAX_DUET_ROUNDS``; still
unknown then, the crossing is not confirmed either.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Literal

from benchrunner.detection.models import SAMPLES_MIN_MAGNITUDE

DEFAULT_CONFIRM_RUNS = 2
"""Confirmation runs of a threshold that sets none (its ``confirm`` is null); why two:
docs/how-to/thresholds-alerts.md."""

DUET_ROUNDS_PER_RUN = 5
"""Paired rounds a confirmation duet runs per confirmation run asked for: the default two
give a duet's own default of ten."""

DEFAULT_DUET_MARGIN = 0.02
"""The margin a confirmation duet judges a crossing of a threshold that is not a percentage
against (a bisection's default margin)."""

MAX_CONFIRM_RUNS = 10
"""The most re-runs one crossing may queue."""

MAX_DUET_ROUNDS = MAX_CONFIRM_RUNS * DUET_ROUNDS_PER_RUN
"""The most rounds one crossing's confirmation duets may run together (a first duet, and more
of the same rounds while they answer unknown): ``MAX_CONFIRM_RUNS`` runs' worth."""

Side = Literal["lower", "upper"]
DuetVerdict = Literal["same", "different", "unknown"]


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


def duet_margin(
    side: Side,
    test: str,
    lower: float | None,
    upper: float | None,
    min_magnitude: float | None = None,
) -> float:
    """The margin a duet confirms a crossing on ``side`` of a threshold by: a percentage
    model's boundary on that side; half a ``samples`` model's smallest shift that counts (its
    ``min_magnitude``, else the default), so that a step of that size is confirmed while the
    duet's interval still excludes a change of half of it; else (a ``min_magnitude`` of 0
    too) ``DEFAULT_DUET_MARGIN``."""
    boundary = upper if side == "upper" else lower
    if test == "percentage" and boundary is not None:
        return boundary
    if test == "samples":
        half = (SAMPLES_MIN_MAGNITUDE if min_magnitude is None else min_magnitude) / 2
        if half > 0:  # a margin of 0 could never answer same: every duet would run to the end
            return half
    return DEFAULT_DUET_MARGIN


def same_margin(test: str, margin: float, min_magnitude: float | None = None) -> float:
    """How close to 1 a duet's interval must lie for **same**: for a ``samples`` threshold its
    whole ``min_magnitude`` (else the default), since a change smaller than that does not
    count, and never less than its duet ``margin`` (a ``min_magnitude`` of 0 judges by the
    default margin both ways); for any other threshold the ``margin`` itself."""
    if test != "samples":
        return margin
    smallest = SAMPLES_MIN_MAGNITUDE if min_magnitude is None else min_magnitude
    return max(smallest, margin)


def duet_verdict(
    side: Side, lower: float, upper: float, margin: float, same_within: float | None = None
) -> DuetVerdict:
    """What a duet's interval ``[lower, upper]`` of the new/baseline ratio says of a crossing
    on ``side``: ``different`` when it lies wholly beyond ``1 ± margin`` on that side, ``same``
    when it lies wholly within ``1 ± same_within`` (default ``margin``), else ``unknown``."""
    if (side == "upper" and lower > 1 + margin) or (side == "lower" and upper < 1 - margin):
        return "different"
    within = margin if same_within is None else same_within
    if lower >= 1 - within and upper <= 1 + within:
        return "same"
    return "unknown"


def decide_duet(verdict: DuetVerdict) -> Outcome:
    """A crossing confirmed by a duet only when it found the versions different that way."""
    return Outcome.CONFIRMED if verdict == "different" else Outcome.SUSPECTED
