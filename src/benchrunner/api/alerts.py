"""A project's alerts: the ``PATCH`` body that sets an alert's status or verdict, and an alert
as the server answers it, in Bencher's ``JsonAlert`` shape with the triage, the confirmation
runs and a bisect threshold's request beside it (docs/how-to/thresholds-alerts.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from benchrunner.api.base import Answer, ApiBody, FreeJson
from benchrunner.api.bisections import BisectionResult
from benchrunner.api.thresholds import Named, ThresholdModel

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
    """A branch, testbed, benchmark or measure in Bencher's shape (``project`` null: a server
    that did not say)."""

    project: str | None = None
    created: str | None = None
    modified: str | None = None
    archived: str | None = None


class MeasureDimension(Dimension):
    units: str


class HeadVersion(Answer):
    """A branch version: its number and commit hash."""

    number: int | None = None
    hash: str | None = None


class HeadStartPoint(Answer):
    """Where a branch's head started: the start point branch, its head and version."""

    branch: str
    head: str
    version: HeadVersion
    max_versions: int | None = None


class BranchHead(Answer):
    """A branch's head: its UUID and when it began; in a report, also the report's version on
    it and its start point."""

    uuid: str
    version: HeadVersion | None = None
    start_point: HeadStartPoint | None = None
    created: str | None = None
    replaced: str | None = None


class BranchDimension(Dimension):
    head: BranchHead | None = None


class Variant(Answer):
    """A benchmark's one variant (results here carry no parameters)."""

    uuid: str
    benchmark: str | None = None
    parameters: FreeJson = Field(default_factory=dict)
    created: str | None = None
    modified: str | None = None


class MetricValues(Answer):
    """A metric: its value and the bounds its harness gave, if any."""

    uuid: str
    value: float
    lower_value: float | None = None
    upper_value: float | None = None


class Boundary(Answer):
    """The limits a metric was judged against; ``verdict`` (same, different, unknown) only
    when the ``samples`` test drew them."""

    baseline: float | None = None
    lower_limit: float | None = None
    upper_limit: float | None = None
    verdict: str | None = None


class AlertThreshold(Answer):
    """The threshold whose model raised the alert (Bencher's ``JsonThreshold``)."""

    uuid: str
    project: str
    branch: BranchDimension
    testbed: Dimension
    measure: MeasureDimension
    model: ThresholdModel
    created: str | None = None
    modified: str | None = None


class DuetMargin(Answer):
    """The margins a duet result was judged with (fractions; null: that side raises nothing)
    and where they came from: ``run``, ``threshold`` (the one named, null once deleted) or
    ``none``."""

    lower: float | None = None
    upper: float | None = None
    source: str
    threshold: str | None = None


class AlertDuet(Answer):
    """A duet alert's ratio interval and the margin it crossed."""

    statistic: str
    rounds: int | None = None
    ratio: float | None = None
    lower_value: float | None = None
    upper_value: float | None = None
    margin: DuetMargin


class ChangeEnd(Answer):
    """A report at one end of a change point's step, with its version and hash."""

    report: str
    version: int | None = None
    hash: str | None = None


class ChangeBetween(Answer):
    """Where a change point's step lies: ``from`` the last report before it, ``to`` the first
    in it, and ``text`` "between versions X and Y"."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)
    since: ChangeEnd = Field(alias="from")
    to: ChangeEnd
    text: str


class Change(Answer):
    """A change point's step: the means before and after, its magnitude and p-value."""

    before: float | None = None
    after: float | None = None
    magnitude: float | None = None
    pvalue: float | None = None
    between: ChangeBetween | None = None


class AlertBisection(Answer):
    """The latest bisection started from the alert, in short, or what its bisect threshold
    asked (``pending``, or ``skipped`` with ``reason``; ``uuid`` null then)."""

    uuid: str | None = None
    state: str
    result: BisectionResult | None = None
    reason: str | None = None
    text: str


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
    threshold: AlertThreshold | None = None
    branch: BranchDimension
    testbed: Dimension
    benchmark: Dimension
    variant: Variant | None = None
    measure: MeasureDimension
    value: float | None = None
    metric: MetricValues | None = None
    boundary: Boundary | None = None
    duet: AlertDuet | None = None
    limit: str | None = None
    status: str
    change: Change | None = None
    created: str | None = None
    modified: str | None = None
    verdict: str | None = None
    verdict_by: Named | None = None
    verdict_at: str | None = None
    confirmation: Confirmation | None = None
    bisect: AlertBisect | None = None
    bisection: AlertBisection | None = None


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
