"""Change points found after the fact: which steps of a series still lack an alert, and which
dismissed steps persisted (docs/how-to/thresholds-alerts.md#change-points-that-look-back).

Pure: the series (oldest first, the newest report last), its change points and the alerts
already on its points in; what to raise and what to re-open out. The server's
``processing.look_back`` reads the series, finds the change points of many at once and writes
the alerts.

A step belongs to an alert when the alert is a change point's nearer to it than to any other
step found (the rule of ``processing.evaluation.already_alerted``), or a threshold's on any
point of the step's first report or of a report next to it (a limit test catches a step on its
first report, or one report late). Reports, not points: a report of several iterations is as
many points, and its threshold alert may be on any of them; so the counts below are of reports
too. A step that begins in the newest report is left to the thresholds, which judge that
report as it arrives; a step with fewer than ``MIN_BEFORE`` reports before it in the window is
an edge of the window, not a step seen in context.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchrunner.detection.change_point import ChangePoint

PERSIST = 5
"""A dismissed step re-opens once this many reports stored after its dismissal stay at the new
level (the step is still found, and they lie in the segment after it)."""
MIN_BEFORE = 3
"""The fewest reports before a step for it to be raised after the fact."""


@dataclass(frozen=True)
class Known:
    """An alert already on a point of the series."""

    alert_id: int
    index: int
    """The point it is on."""
    change: bool
    """A change point's alert (else a threshold's: a limit, or the samples test)."""
    dismissed: bool
    """Dismissed by a user (and not marked ``expected``): it may re-open."""
    first_after_dismissal: int
    """The first point stored after it was dismissed; the series' length when none was (and
    for an alert that is not dismissed)."""


@dataclass(frozen=True)
class Raise:
    """A step without an alert: raise one on ``change.index``."""

    change: ChangePoint


@dataclass(frozen=True)
class Reopen:
    """A dismissed step that persisted: make its alert active again."""

    alert_id: int
    change: ChangePoint


def look_back(
    values: Sequence[float],
    known: Sequence[Known],
    found: list[ChangePoint],
    *,
    persist: int = PERSIST,
    reports: Sequence[int] | None = None,
) -> list[Raise | Reopen]:
    """The steps of ``values`` to raise, and the dismissed alerts to re-open, in series order.
    ``found``: the change points of ``values`` (``change_point.change_points_many``, which
    finds those of many series at once). ``reports``: each point's report, as numbers that
    rise by one from a report to the next (the iterations of one report share it); None: each
    point a report of its own."""
    report_of = list(range(len(values))) if reports is None else list(reports)
    newest = report_of[-1] if report_of else 0
    actions: list[Raise | Reopen] = []
    for k, step in enumerate(found):
        if report_of[step.index] >= newest or report_of[step.index] - report_of[0] < MIN_BEFORE:
            continue
        mine = [a for a in known if _belongs(found, k, a, report_of)]
        if not mine:
            actions.append(Raise(step))
            continue
        if not all(a.dismissed for a in mine):
            continue  # an open (or silenced, or expected) alert already stands for the step
        stop = found[k + 1].index if k + 1 < len(found) else len(values)
        nearest = min(mine, key=lambda a: (abs(a.index - step.index), a.alert_id))
        since = max(step.index, nearest.first_after_dismissal)
        if len(set(report_of[since:stop])) >= persist:
            actions.append(Reopen(nearest.alert_id, step))
    return actions


def _belongs(found: list[ChangePoint], k: int, alert: Known, report_of: list[int]) -> bool:
    here = found[k].index
    if not alert.change:
        return abs(report_of[alert.index] - report_of[here]) <= 1
    low = (found[k - 1].index + here) / 2 if k > 0 else -1
    high = (here + found[k + 1].index) / 2 if k + 1 < len(found) else float("inf")
    return low < alert.index < high
