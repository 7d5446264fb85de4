"""A project's history: the body that ignores a benchmark, and the one that resets a
series' baseline (docs/how-to/thresholds-alerts.md)."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from benchrunner.api.base import ApiBody


class BenchmarkUpdate(ApiBody):
    model_config = ConfigDict(extra="forbid")
    ignored: bool | None = None


class BaselineReset(ApiBody):
    model_config = ConfigDict(extra="forbid")
    branch: str = Field(min_length=1, max_length=256)
    testbed: str = Field(min_length=1, max_length=64)
    measure: str | None = Field(default=None, min_length=1, max_length=64)
    report: str = Field(min_length=1, max_length=64)
