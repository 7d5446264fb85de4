"""A project's bisections: the create body and its search's defaults, and a bisection as the
server answers it (docs/how-to/bisect.md)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from benchrunner.api.base import Answer, ApiBody
from benchrunner.api.run import ArgValue
from benchrunner.protocol import MAX_TIMEOUT

MAX_CANDIDATES = 4096
MAX_ROUNDS = 640
"""The most rounds of a step's duet."""
DEFAULTS: dict[str, Any] = {"rounds": 10, "margin": 0.02, "confidence": 0.95, "job_budget": 40}
"""A bisection's search settings unless asked otherwise: ``POST .../bisections``' defaults,
and those of every bisection the server starts by itself."""
# A commit never starts with "-": it goes into a template's arguments, where it would read as
# an option.
COMMIT_REF = re.compile(r"[0-9A-Za-z_][^\s]*")
Commit = Field(min_length=1, max_length=64, pattern=f"^{COMMIT_REF.pattern}$")


class BisectionCreate(ApiBody):
    benchmarks: list[str] = Field(min_length=1, max_length=16)
    measure: str = Field(min_length=1, max_length=255)
    good: str = Commit
    bad: str = Commit
    candidates: list[str] = Field(
        min_length=1,
        max_length=MAX_CANDIDATES,
        description="the commits after good up to bad, oldest first (bad is added when last "
        "is another): `git rev-list --first-parent --reverse GOOD..BAD`",
    )
    image: str | None = Field(
        default=None, max_length=512, description="a tag holding {commit}, e.g. sortlib:{commit}"
    )
    template: str | None = Field(default=None, max_length=255)
    args: dict[str, ArgValue] | None = Field(
        default=None, description="the template's arguments; {commit} in a value is each commit"
    )
    alert: str | None = Field(
        default=None, description="the project's alert this bisection explains: its page shows it"
    )
    spec: str | None = None
    adapter: str = "magic"
    branch: str = Field(default="bisections", min_length=1, max_length=255)
    testbed: str = Field(default="localhost", min_length=1, max_length=255)
    rounds: int = Field(
        default=DEFAULTS["rounds"], ge=2, le=MAX_ROUNDS, description="of a step's first duet"
    )
    margin: float = Field(
        default=DEFAULTS["margin"],
        gt=0,
        lt=1,
        description="the least change of bad against good that counts",
    )
    confidence: float = Field(default=DEFAULTS["confidence"], ge=0.5, le=0.999)
    job_budget: int = Field(default=DEFAULTS["job_budget"], ge=1, le=1000)
    timeout: int | None = Field(default=None, ge=1, le=MAX_TIMEOUT)


class StepJob(Answer):
    uuid: str
    status: str


class BisectionStep(Answer):
    """One step: a duet of ``commit`` against ``baseline`` (``kind`` says which step), with
    its ``verdict`` and the change's ``ratio`` and interval once judged."""

    kind: str
    commit: str
    baseline: str
    position: int
    status: str
    verdict: str | None = None
    rounds: int
    ratio: float | None = None
    lower_value: float | None = None
    upper_value: float | None = None
    reason: str | None = None
    jobs: list[StepJob] = Field(default_factory=list)
    created: str


class Culprit(Answer):
    """The first bad commit, its change against its parent and that change's interval."""

    commit: str
    parent: str | None = None
    ratio: float | None = None
    lower_value: float | None = None
    upper_value: float | None = None


class BisectionResult(Answer):
    """How a finished bisection ended: its culprit, or the ``reason`` there is none."""

    culprit: Culprit | None = None
    reason: str | None = None


class Bisection(Answer):
    """A bisection with its question, every step and, once finished, its ``result``."""

    uuid: str
    project: str
    state: str
    alert: str | None = None
    spec: str
    benchmarks: list[str]
    measure: str
    good: str
    bad: str
    candidates: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    """Candidates without an image of their own."""
    image: str | None = None
    template: str | None = None
    args: dict[str, ArgValue] | None = None
    rounds: int
    margin: float
    confidence: float
    job_budget: int
    jobs_used: int
    followed: str | None = None
    bad_ratio: float | None = None
    steps: list[BisectionStep] = Field(default_factory=list)
    result: BisectionResult | None = None
    created: str
    finished: str | None = None
