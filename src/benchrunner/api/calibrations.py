"""A project's calibrations: the create body, and a calibration with its proposal as the server
answers it (docs/how-to/thresholds-alerts.md)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from benchrunner.api.base import Answer, ApiBody

MAX_RUNS = 100


class CalibrationCreate(ApiBody):
    spec: str = Field(min_length=1, max_length=64, description="the spec every run runs on")
    template: str | None = Field(default=None, description="the job: a template ...")
    args: dict[str, int | float | bool | str] | None = None
    image: str | None = Field(default=None, description="... or an image")
    iterations: Annotated[int, Field(ge=1, le=100)] = 1
    adapter: str = "json"
    runs: Annotated[int, Field(ge=3, le=MAX_RUNS)] = 10
    false_alarm_rate: Annotated[float, Field(gt=0, le=0.5)] = 0.01
    """False alarms per run the proposed thresholds allow (0.01: one run in a hundred)."""
    branch: str = Field(default="main", min_length=1, max_length=256)
    """The branch whose thresholds the proposal is for; the runs report to one of their own."""
    testbed: str = Field(default="localhost", min_length=1, max_length=64)


class CalibrationTarget(Answer):
    """The branch and testbed the proposal is for."""

    branch: str
    testbed: str


class CalibrationRun(Answer):
    """One run: its report, and its job with the job's status once there is one."""

    report: str
    job: str | None = None
    status: str | None = None


class ProposedModel(Answer):
    """The threshold model proposed for a benchmark and measure."""

    test: str
    lower_boundary: float | None = None
    upper_boundary: float | None = None
    max_sample_size: int | None = None


class CalibratedBenchmark(Answer):
    """A benchmark and measure's noise over the runs and the threshold proposed for it;
    ``proposal`` None (and ``why`` says why) when too few runs gave a value."""

    benchmark: str
    measure: str
    units: str
    runs: int
    values: int
    mean: float | None = None
    sd: float | None = None
    cv: float | None = None
    detectable_change: float | None = None
    """Relative: the smallest change the proposal catches in one run ``power`` of the time."""
    proposal: ProposedModel | None = None
    why: str | None = None


class Calibration(Answer):
    """A calibration: ``state`` running, done or failed; ``stale`` why it no longer describes
    its spec (None while it holds); ``benchmarks`` its proposal, once done."""

    uuid: str
    spec: str
    branch: str
    """The branch of its own its runs report to."""
    target: CalibrationTarget
    runs: int
    false_alarm_rate: float
    power: float
    state: str
    processed: int
    failed: int
    jobs: list[CalibrationRun] = Field(default_factory=list)
    stale: str | None = None
    benchmarks: list[CalibratedBenchmark] = Field(default_factory=list)
    created: str
    applied: str | None = None


class AppliedCalibration(Calibration):
    """A calibration just applied, with the UUIDs of the thresholds it set."""

    thresholds: list[str]
