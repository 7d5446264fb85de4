"""A report's ``PATCH`` body: what a bisection of its alerts needs (docs/how-to/bisect.md); a
report as the server answers it, and ``POST /v0/run``'s answer: the report of the run
(docs/reference/run.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from benchrunner.api.alerts import (
    Alert,
    Boundary,
    BranchDimension,
    ConfirmationRun,
    Dimension,
    DuetMargin,
    MeasureDimension,
    MetricValues,
    Variant,
)
from benchrunner.api.base import Answer, ApiBody
from benchrunner.api.perf import PerfSamples
from benchrunner.api.run import MAX_BISECT_RANGE, BisectCommit, BisectImage
from benchrunner.api.thresholds import Named, NamedMeasure, ThresholdModel
from benchrunner.protocol import NoiseCalibration


class ReportUpdate(ApiBody):
    """``PATCH .../reports/{report}``: a field left out is left as it is."""

    model_config = ConfigDict(extra="forbid")
    bisect_range: list[BisectCommit] | None = Field(
        default=None,
        max_length=MAX_BISECT_RANGE,
        description="the commits after the previous report's hash up to this one's, oldest "
        "first: `git rev-list --reverse --first-parent PREV..HASH`",
    )
    bisect_image: BisectImage | None = Field(
        default=None, description="a tag holding {commit}, e.g. sortlib:{commit}"
    )


class ReportSettings(Answer):
    adapter: str | None = None
    average: str | None = None
    fold: str | None = None


class ReportProject(Answer):
    """The project as a report names it, in Bencher's shape (docs/reference/run.md)."""

    uuid: str
    name: str
    slug: str
    organization: str
    visibility: str
    bmf_version: int | None = None
    url: str | None = None
    claimed: str | None = None
    created: str | None = None
    modified: str | None = None


class ReportThresholdModel(Answer):
    """The threshold that judged a metric, with the model it judged by (``alert_when_noisy``
    only beside a measure's ``metric``)."""

    uuid: str
    project: str | None = None
    model: ThresholdModel
    created: str | None = None
    alert_when_noisy: bool | None = None


class JudgedBoundary(Answer):
    """A metric row's judgement: the threshold and the boundary it drew."""

    threshold: ReportThresholdModel
    boundary: Boundary


class MetricRow(Answer):
    """One of Bencher's metric rows: ``value``, ``lower_value`` or ``upper_value`` (the bounds'
    rows have UUIDs derived from the metric's), with the boundaries that judged it."""

    name: str
    uuid: str
    value: float | None = None
    boundaries: list[JudgedBoundary] = Field(default_factory=list)


class ReportMeasure(Answer):
    """A measure of a benchmark in one iteration (Bencher's ``JsonReportMeasure``):
    ``threshold`` and ``boundary`` always sent, null when unjudged; ``confirmation`` the
    alert's confirmation outcome and ``alert`` why a noisy report raised none, only when so;
    ``samples`` only when asked for."""

    measure: MeasureDimension
    metric: MetricValues
    metrics: list[MetricRow] = Field(default_factory=list)
    threshold: ReportThresholdModel | None = None
    boundary: Boundary | None = None
    confirmation: str | None = None
    alert: str | None = None
    samples: PerfSamples | None = None


class ReportBenchmark(Answer):
    """A benchmark's results in one iteration: its one variant and its measures."""

    iteration: int | None = None
    benchmark: Dimension
    variant: Variant | None = None
    """Null from a server that names no variants."""
    measures: list[ReportMeasure] = Field(default_factory=list)


class DuetResultAlert(Answer):
    uuid: str | None = None
    limit: str
    status: str | None = None


class DuetResult(Answer):
    """A benchmark's paired ratio in a duet: contender / baseline, its interval, the margin it
    was judged with, and the alert it raised, if any."""

    benchmark: Named
    measure: NamedMeasure
    rounds: int
    ratio: float
    lower_value: float
    upper_value: float
    margin: DuetMargin
    verdict: str
    alert: DuetResultAlert | None = None


class ReportDuet(Answer):
    """How a duet ran (its seed, rounds and their order: A the baseline, B the contender) and
    was judged, with each benchmark's ratio."""

    seed: int
    rounds: int
    order: str
    order_legend: dict[str, str] = Field(default_factory=dict)
    statistic: str
    method: str
    resamples: int
    confidence: float
    margin: float | None = None
    """The run's margin; null: each result's came from a threshold (or none)."""
    results: list[DuetResult] = Field(default_factory=list)
    alerts: int = 0


class ReportTestbed(Dimension):
    """The testbed as a report names it; ``spec`` (Bencher's testbed spec) is always null."""

    spec: None = None


class ReportNoise(Answer):
    """The noise guard's figures around the report's job (the runner's ``NoiseGuard``), and
    the verdict on them under its spec's limits (docs/explanation/noise.md): ``judged`` names
    the figure held to ``cv_limit`` (``spread``, or ``cv`` from a runner that sends none);
    ``alerts`` says what a noisy verdict kept back."""

    before: NoiseCalibration | None = None
    after: NoiseCalibration | None = None
    drift: float | None = None
    before_age_ms: float | None = None
    cv: float | None = None
    spread: float | None = None
    judged: str | None = None
    cv_limit: float | None = None
    drift_limit: float | None = None
    verdict: str | None = None
    alerts: str | None = None


class Report(Answer):
    """A report in Bencher's shape (``JsonReport``): ``results`` per iteration, each a list of
    benchmarks with their measures; the alerts its evaluation raised. ``job``: the runner job
    that runs it, if one does; ``duet`` a duet's verdict; ``confirms`` the report a
    confirmation run re-measures; ``judgment`` says a direct run's is not judged yet."""

    uuid: str
    project: ReportProject
    branch: BranchDimension
    testbed: ReportTestbed
    adapter: str | None = None
    settings: ReportSettings | None = None
    start_time: str | None = None
    end_time: str | None = None
    results: list[list[ReportBenchmark]] = Field(default_factory=list)
    error: str | None = None
    noise: ReportNoise | None = None
    alerts: list[Alert] = Field(default_factory=list)
    created: str | None = None
    confirms: str | None = None
    confirmation_runs: list[ConfirmationRun] | None = None
    job: str | None = None
    duet: ReportDuet | None = None
    judgment: Literal["pending"] | None = None
    """``pending`` while a direct run's report awaits its judgment (a database failure cut
    its request's short): its alerts may still come; absent once judged."""

    @property
    def held_back(self) -> int:
        """Its alerts held back while confirmation runs re-measure (status ``pending``)."""
        return sum(1 for alert in self.alerts if alert.status == "pending")


class RunAnswer(Report):
    """``POST /v0/run``'s answer: the report, and whether an idempotency key repeated an
    earlier submission (whose report it is)."""

    deduplicated: bool = False
