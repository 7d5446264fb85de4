"""What a perf query returns, independent of how it is shown: one series per branch, testbed,
benchmark and measure, its points in time order."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Point:
    report: str
    """The report's UUID."""
    start_time: dt.datetime
    end_time: dt.datetime
    value: float
    lower_value: float | None = None
    upper_value: float | None = None
    version: int | None = None
    hash: str | None = None
    baseline: float | None = None
    lower_limit: float | None = None
    upper_limit: float | None = None
    alert_limit: str | None = None
    """``lower`` or ``upper`` when this point raised an alert."""
    alert_status: str | None = None
    noisy: bool = False
    """The point's report was taken on a noisy machine (docs/decisions/noise.md): its alerts were
    withheld."""


@dataclass(frozen=True)
class Series:
    branch: str
    testbed: str
    benchmark: str
    measure: str
    units: str
    points: list[Point] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.benchmark} · {self.branch} · {self.testbed}"
