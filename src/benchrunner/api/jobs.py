"""Jobs: the body a runner claims a job with over HTTP (docs/explanation/runner-protocol.md),
and a job as the server answers it (docs/reference/jobs.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from benchrunner.api.base import Answer, ApiBody, FreeJson
from benchrunner.api.run import ArgValue
from benchrunner.api.specs import Spec
from benchrunner.protocol import DEFAULT_POLL_TIMEOUT, IterationResult, NoiseGuard

MAX_CLAIM_POLL_TIMEOUT = 600


class ClaimRequest(ApiBody):
    poll_timeout: int = Field(
        default=DEFAULT_POLL_TIMEOUT,
        ge=1,
        le=MAX_CLAIM_POLL_TIMEOUT,
        description="seconds to wait for a job before answering null",
    )


class JobEvent(Answer):
    """A step of a job's life: ``status`` the one it reached (null: no status change)."""

    event_type: str
    status: str | None = None
    message: str | None = None
    actor: str | None = None
    meta: FreeJson = Field(default_factory=dict)
    created: str


class JobSignature(Answer):
    """Whether the runner signed the job's output, and the signature the server verified."""

    signed: bool = False
    verified: bool = False
    output_hash: str | None = None
    signature: str | None = None
    key_fingerprint: str | None = None


class JobOutput(Answer):
    """A finished job's output (the runner's ``JsonJobOutput``): each iteration's result, the
    error that ended the job, if one did, and the machine's noise around it; an output the
    server cannot read is shown as its ``error``."""

    results: list[IterationResult] = Field(default_factory=list)
    error: str | None = None
    noise: NoiseGuard | None = None


class JobDuetSide(Answer):
    """One side of a duet job: an image (``digest``) or a template's arguments (``args``)."""

    digest: str | None = None
    args: dict[str, ArgValue] | None = None


class JobDuet(Answer):
    """A duet job's rounds: each runs ``baseline`` and ``contender`` once, in an order drawn
    from ``seed``; ``confidence``, ``resamples`` and ``margin`` are how the server judges the
    pair (no ``margin``: each benchmark's threshold gives it)."""

    baseline: JobDuetSide
    contender: JobDuetSide
    seed: int
    confidence: float
    resamples: int
    margin: float | None = None


class JobConfig(Answer):
    """What the job's runner executes (the runner's ``JsonJobConfig``), its unset fields left
    out: an image job's ``registry``, ``project`` and ``digest`` with its overrides, or a
    template job's ``template`` and ``args``; ``duet`` for a duet job of either kind, whose
    ``digest`` or ``args`` are then the baseline's."""

    timeout: int
    iter: int = 1
    file_paths: list[str] | None = None
    registry: str | None = None
    project: str | None = None
    digest: str | None = None
    entrypoint: list[str] | None = None
    cmd: list[str] | None = None
    env: dict[str, str] | None = None
    build_time: bool | None = None
    file_size: bool | None = None
    allow_failure: bool | None = None
    backdate: str | None = None
    template: str | None = None
    args: dict[str, ArgValue] | None = None
    duet: JobDuet | None = None


class Job(Answer):
    """A job of a report; ``events`` and ``output`` only in a read of one job (``output``
    once it finished)."""

    uuid: str
    status: str
    kind: str | None = None
    report: str
    project: str
    spec: Spec | None = None
    config: JobConfig
    timeout: int | None = None
    priority: int | None = None
    runner: str | None = None
    claimed: str | None = None
    started: str | None = None
    completed: str | None = None
    last_heartbeat: str | None = None
    created: str
    modified: str
    signature: JobSignature = Field(default_factory=JobSignature)
    events: list[JobEvent] = Field(default_factory=list)
    """Empty (and left out) in a list of jobs."""
    output: JobOutput | None = None
    """Left out until the job has finished."""


class JobLogPage(Answer):
    """A page of a job's live log."""

    job_id: str
    offset: int
    next_offset: int
    is_complete: bool
    content: str
    redaction_version: int


class JobLogPiece(Answer):
    """A ``log`` event of ``.../logs/follow``: a new piece of the log."""

    event: Literal["log"] = "log"
    offset: int
    next_offset: int
    content: str


class JobLogEnd(Answer):
    """The ``end`` event of ``.../logs/follow``: the job has finished and every piece of its
    log was sent (``status`` ``deleted`` when the job is gone)."""

    event: Literal["end"] = "end"
    next_offset: int
    status: str
