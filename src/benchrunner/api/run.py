"""``POST /v0/run``'s body (docs/decisions/submission.md): Bencher's fields and ours, each
checked for its type and range here. Which combinations of fields make a valid run (direct
results, an image job, a template job, a duet) the server decides
(``server.submission.body``).

Every optional field may be absent or ``null`` (Bencher's CLI writes ``null`` for what it does
not set). ``image`` is a digest or a tag, in any registry form.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
)

from benchrunner.api.base import ApiBody
from benchrunner.api.thresholds import MAX_COUNT, ThresholdModelBody
from benchrunner.core.versions import is_git_hash
from benchrunner.protocol import MAX_ITER, MAX_TIMEOUT

COMMIT = "{commit}"
"""What a bisection's image tag or template argument holds in place of each commit."""
ArgValue = int | float | bool | str


def checked_hash(value: str) -> str:
    """The hash, lowercased; ValueError (a 400 naming the field) when it is not one."""
    if not is_git_hash(value):
        raise ValueError("is not a full git hash (40 or 64 hexadecimal digits)")
    return value.lower()


class RunDuetSide(ApiBody):
    model_config = ConfigDict(extra="forbid")
    image: str | None = None
    args: dict[str, ArgValue] | None = None


class RunDuetOptions(ApiBody):
    model_config = ConfigDict(extra="forbid")
    margin: float | None = Field(default=None, ge=0, lt=1)
    confidence: float = Field(default=0.95, ge=0.5, le=0.999)
    resamples: int = Field(default=10_000, ge=100, le=100_000)
    seed: int | None = Field(default=None, ge=0, le=2**63 - 1)


class RunJob(ApiBody):
    """Bencher's nested ``job`` object (``JsonNewRunJob``)."""

    model_config = ConfigDict(extra="forbid")
    image: str | None = None
    spec: str | None = None
    entrypoint: list[str] | None = None
    cmd: list[str] | None = None
    env: dict[str, str] | None = None
    timeout: int | None = Field(default=None, ge=1, le=MAX_TIMEOUT)
    file_paths: list[str] | None = None
    iter: int | None = Field(default=None, ge=1, le=MAX_ITER)
    build_time: bool | None = None
    file_size: bool | None = None
    allow_failure: bool | None = None
    backdate: AwareDatetime | None = None

    @field_validator("backdate")
    @classmethod
    def _backdate_in_utc(cls, value: dt.datetime | None) -> dt.datetime | None:
        return None if value is None else _utc(value)


class RunSettings(ApiBody):
    adapter: str | None = None
    """None: ``magic``, as Bencher."""
    average: Literal["mean", "median"] | None = None
    fold: Literal["min", "max", "mean", "median"] | None = None

    @property
    def adapter_name(self) -> str:
        return self.adapter or "magic"


class RunStartPoint(ApiBody):
    """Bencher's ``start_point``: the branch a new branch's history starts from."""

    model_config = ConfigDict(extra="forbid")
    branch: str | None = Field(default=None, min_length=1, max_length=256)
    hash: str | None = None
    max_versions: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    clone_thresholds: bool | None = None
    reset: bool | None = None

    @field_validator("hash")
    @classmethod
    def _git_hash(cls, value: str | None) -> str | None:
        return None if value is None else checked_hash(value)


class RunThresholds(ApiBody):
    """Bencher's ``thresholds``: models by measure for this branch and testbed; ``reset``
    removes the branch/testbed's thresholds of measures not listed."""

    model_config = ConfigDict(extra="forbid")
    models: dict[str, ThresholdModelBody] | None = None
    reset: bool | None = None


BisectCommit = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[0-9A-Za-z_][^\s]*$")
]
"""A commit of ``bisect_range``: never starting with ``-`` (it may become a template's
argument, where it would read as an option)."""
MAX_BISECT_RANGE = 4096


def _holds_commit(image: str) -> str:
    if COMMIT not in image.rpartition(":")[2]:
        raise ValueError("its tag must hold {commit}, e.g. sortlib:{commit}")
    return image


BisectImage = Annotated[str, StringConstraints(max_length=512), AfterValidator(_holds_commit)]
"""A tag of the project's registry holding ``{commit}``: how a bisection runs each commit."""


class RunBody(ApiBody):
    ADAPTER_INPUT = frozenset({"results"})

    project: str | None = Field(default=None, max_length=64)
    branch: str | None = Field(default=None, min_length=1, max_length=256)
    testbed: str | None = Field(default=None, min_length=1, max_length=64)
    hash: str | None = None
    start_point: RunStartPoint | None = None
    thresholds: RunThresholds | None = None
    settings: RunSettings | None = None
    results: list[str] | None = None
    start_time: AwareDatetime | None = None
    end_time: AwareDatetime | None = None
    image: str | None = None
    spec: str | None = None
    template: str | None = None
    args: dict[str, int | float | bool | str] | None = None
    job: RunJob | None = None
    baseline: RunDuetSide | None = None
    contender: RunDuetSide | None = None
    duet: RunDuetOptions | None = None
    context: dict[str, str] | None = None
    idempotency_key: str | None = None
    bisect_range: list[BisectCommit] | None = Field(default=None, max_length=MAX_BISECT_RANGE)
    """The commits after the previous report's hash up to this one's, oldest first
    (docs/how-to/bisect.md)."""
    bisect_image: BisectImage | None = None
    """How a bisection runs each commit (docs/how-to/bisect.md)."""
    spec_reset: bool | None = None
    """Bencher clears the testbed's current spec, which its next image job naming no spec
    would otherwise take. A testbed here keeps no spec (a job takes the spec it names, else the
    fallback spec), so every run is already as if reset: accepted, with nothing to clear."""

    @field_validator("hash")
    @classmethod
    def _git_hash(cls, value: str | None) -> str | None:
        return None if value is None else checked_hash(value)

    @field_validator("start_time", "end_time")
    @classmethod
    def _in_utc(cls, value: dt.datetime | None) -> dt.datetime | None:
        return None if value is None else _utc(value)

    @property
    def run_settings(self) -> RunSettings:
        return self.settings or RunSettings()


def _utc(value: dt.datetime) -> dt.datetime:
    """Stored as UTC; a time that has no UTC equivalent (year 1 east of Greenwich, year 9999
    west of it) is refused."""
    try:
        return value.astimezone(dt.UTC)
    except OverflowError:
        raise ValueError("is out of range once converted to UTC") from None
