"""A project's calibrations: the create body (docs/how-to/thresholds-alerts.md)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from benchrunner.api.base import ApiBody

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
