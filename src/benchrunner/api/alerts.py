"""A project's alerts: the ``PATCH`` body that sets an alert's status or verdict, and an alert
as the server answers it, in Bencher's ``JsonAlert`` shape with the triage, the confirmation
runs and a bisect threshold's request beside it (docs/how-to/thresholds-alerts.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from benchrunner.api.base import Answer, ApiBody
from benchrunner.api.thresholds import Named

AlertStatus = Literal["active", "dismissed", "silenced"]
"""What a user sets on an alert."""
ListedAlertStatus = Literal["active", "dismissed", "silenced", "pending", "suspected"]
"""``pending`` and ``suspected``: alerts held back for confirmation runs."""
Verdict = Literal["true_positive", "false_positive", "expected"]
VerdictFilter = Literal["true_positive", "false_positive", "expected", "untriaged"]


class AlertUpdate(ApiBody):
    """``PATCH .../alerts/{alert}``: a field left out is left as it is."""

    model_config = ConfigDict(extra="forbid")
    status: AlertStatus | None = None
    verdict: Verdict | None = None
    """Set: the triage; null takes it back. Absent: left as it is."""


class Dimension(Named):
    """A branch, testbed, benchmark or measure in Bencher's shape."""

    project: str
    created: str | None = None
    modified: str | None = None
    archived: str | None = None


class MeasureDimension(Dimension):
    units: str


class BranchDimension(Dimension):
    head: dict[str, Any] | None = None
    """The branch's head: its UUID and when it began."""


class ConfirmationRun(Answer):
    job: str
    report: str


class Confirmation(Answer):
    """How confirmation runs judged an alert: pending, confirmed, suspected or unconfirmed;
    ``reason`` when the outcome alone does not say why (``unknown after 50 rounds``)."""

    outcome: str
    reason: str | None = None
    runs: list[ConfirmationRun] = Field(default_factory=list)


class AlertBisect(Answer):
    """A bisect threshold's request for the alert: pending, started or skipped (with why)."""

    state: str
    reason: str | None = None


class Alert(Answer):
    """An alert. ``report`` is the report of the metric it is on, ``raised_by`` the report
    whose evaluation raised it; ``kind`` ``boundary`` or ``duet`` (``value`` is then the
    contender/baseline ratio, ``metric`` and ``boundary`` null). ``bisection`` only in a read of
    one alert. ``kind`` and ``verdict`` are read as any string, so that a client reads a newer
    server's alert of a kind or verdict it does not know (``Verdict`` lists today's)."""

    uuid: str
    kind: str = "boundary"
    report: str
    raised_by: str | None = None
    iteration: int | None = 0
    """Null for a duet's alert, which is on no single iteration."""
    threshold: dict[str, Any] | None = None
    branch: BranchDimension
    testbed: Dimension
    benchmark: Dimension
    variant: dict[str, Any] | None = None
    measure: MeasureDimension
    value: float | None = None
    metric: dict[str, Any] | None = None
    boundary: dict[str, Any] | None = None
    duet: dict[str, Any] | None = None
    limit: str | None = None
    status: str
    change: dict[str, Any] | None = None
    created: str | None = None
    modified: str | None = None
    verdict: str | None = None
    verdict_by: Named | None = None
    verdict_at: str | None = None
    confirmation: Confirmation | None = None
    bisect: AlertBisect | None = None
    bisection: dict[str, Any] | None = None


class PrecisionCounts(Answer):
    alerts: int
    true_positive: int
    false_positive: int
    expected: int
    untriaged: int
    precision: float | None = None


class ThresholdPrecision(Answer):
    """A threshold's counts (``threshold`` null for duet alerts whose margin came from none)."""

    threshold: str | None = None
    branch: str | None = None
    testbed: str | None = None
    measure: str | None = None
    alerts: int
    true_positive: int
    false_positive: int
    expected: int
    untriaged: int
    precision: float | None = None


class AlertPrecision(Answer):
    """A project's alert precision: (true_positive + expected) / triaged, overall and per
    threshold; null while no alert is triaged."""

    project: str
    overall: PrecisionCounts
    thresholds: list[ThresholdPrecision] = Field(default_factory=list)
