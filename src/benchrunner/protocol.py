"""The wire: channel messages and the job payloads shared by server, runner and tests.

Runner -> server: ready, running, heartbeat, completed, failed, canceled
(docs/decisions/channel.md), and ``log`` (live output, only from a runner that lists ``"log"`` in
its ready's ``extensions``; the server never answers a ``log`` unless it refuses it with ``error``).
Server -> runner: ack, job, no_job, cancel, update (docs/decisions/channel.md), and ``error``
(docs/decisions/channel.md), only to a runner that announced the ``error`` extension, naming the
message it refuses (``reply_to``, ``job``); the job's ``nonce`` likewise. Every message is a JSON
object whose ``event`` field names its type. Messages read from the channel are validated
strictly (``parse_runner_message``, ``parse_server_message``): a JSON value of the wrong type is
an error, never coerced (``true`` is not a poll timeout, ``"0"`` is not an exit code).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    model_serializer,
    model_validator,
)

from benchrunner.core.canonical import canonical_hash

MIN_POLL_TIMEOUT = 1
MAX_POLL_TIMEOUT = 900
DEFAULT_POLL_TIMEOUT = 30
MAX_ITER = 1000
MAX_TIMEOUT = 2**31 - 1  # seconds; the database column is a 32-bit integer
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
MAX_LOG_CHUNK = 65536
"""Characters of ``log`` data in one message (a runner cuts chunks of at most this many bytes)."""
LOG_EXTENSION = "log"
ERROR_EXTENSION = "error"
NONCE_EXTENSION = "nonce"
UPDATE_EXTENSION = "update"
"""Announced by a runner that installs the server's runner releases (benchrunner wheels) when
offered ``update``; a runner started with ``--no-update`` leaves it out."""
TEMPLATE_EXTENSION = "template"
"""The runner runs template jobs (``config.template``); a runner that does not announce it is
never offered one, since Bencher's runner would take it for an image job without an image."""
OUR_EXTENSIONS = (
    ERROR_EXTENSION,
    LOG_EXTENSION,
    NONCE_EXTENSION,
    TEMPLATE_EXTENSION,
    UPDATE_EXTENSION,
)
"""What benchrunner's own runner understands beyond Bencher's protocol. A runner announces its
extensions in ``ready``, and before its first ``ready`` in the ``EXTENSIONS_HEADER`` of the
handshake (a spooled result is resent before any ``ready``); a runner that announces none
(Bencher's own runner binary) is sent nothing outside Bencher's protocol."""
EXTENSIONS_HEADER = "Benchrunner-Extensions"
MAX_NESTING = 200
"""Levels of arrays and objects a message may nest. The JSON parser (pydantic's jiter) refuses
one a level or two deeper, depending on the shape, and counts depth instead of recursing on the
stack: a channel message nested 100,000 deep is an ordinary validation error."""


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


# ---------------------------------------------------------------- job payloads


OperatingSystem = Literal["linux", "macos", "windows"]
Sandbox = Literal["firecracker"]


class JsonSpec(_Wire):
    """A spec as Bencher's runner reads it: ``os``, ``architecture``, ``sandbox`` (absent or
    null: none), sizes as integers (bytes), and ``fallback``, when an admin marked it the spec
    of jobs submitted without one."""

    uuid: uuid.UUID
    name: str
    slug: str
    os: OperatingSystem = "linux"
    architecture: Literal["x86_64", "aarch64"]
    sandbox: Sandbox | None = None
    cpu: int = Field(ge=1, le=2**31 - 1)
    memory: int = Field(ge=1, le=2**63 - 1)
    disk: int = Field(ge=1, le=2**63 - 1)
    network: bool = False
    fallback: dt.datetime | None = None
    created: dt.datetime
    modified: dt.datetime
    archived: dt.datetime | None = None
    noise_guard: bool = True
    """Whether runners calibrate the job cores around this spec's jobs (docs/decisions/noise.md)."""
    noise_cv_limit: float | None = Field(default=None, ge=0, le=1e9)
    """A report above this coefficient of variation is noisy (None: the server's default)."""
    noise_drift_limit: float | None = Field(default=None, ge=0, le=1e9)
    """... or above this before/after drift, either way (None: the server's default)."""


DuetSide = Literal["baseline", "contender"]


class JsonDuetSide(_Wire):
    """One side of a duet: an image (``digest``) or a template's arguments (``args``)."""

    digest: str | None = None
    args: dict[str, int | float | bool | str] | None = None


class JsonDuet(_Wire):
    """A duet job: ``iter`` rounds, each running the baseline and the contender once, in an
    order drawn per round from ``seed`` (``core.duet_order``). ``confidence``, ``resamples``
    and ``margin`` are the server's: how it judges the paired ratios (``detection.duet``);
    no ``margin``: each benchmark's threshold gives it (``store.duets``)."""

    baseline: JsonDuetSide
    contender: JsonDuetSide
    seed: int = Field(ge=0, le=2**63 - 1)
    confidence: float = Field(default=0.95, gt=0, lt=1)
    resamples: int = Field(default=10_000, ge=100, le=1_000_000)
    margin: float | None = Field(default=None, ge=0, lt=1)


class JsonJobConfig(_Wire):
    """What a runner needs to execute a job; nothing about repo, branch or adapter
    (docs/decisions/executors.md).

    Image jobs carry ``registry``/``project``/``digest`` and optional overrides; template jobs
    carry ``template`` and its already-checked ``args``.
    """

    timeout: int = Field(ge=1, le=MAX_TIMEOUT)
    iter: int = Field(default=1, ge=1, le=MAX_ITER)
    file_paths: list[str] | None = None
    # image jobs
    registry: str | None = None
    project: uuid.UUID | None = None
    digest: str | None = None
    entrypoint: list[str] | None = None
    cmd: list[str] | None = None
    env: dict[str, str] | None = None
    # Bencher's job flags: ``build_time``/``file_size`` make the runner time each iteration's
    # command and measure the sizes of ``file_paths`` (not read then); ``backdate`` moves the report
    build_time: bool | None = None
    file_size: bool | None = None
    allow_failure: bool | None = None
    backdate: dt.datetime | None = None
    # template jobs
    template: str | None = None
    args: dict[str, int | float | bool | str] | None = None
    # duet jobs (either kind): ``digest``/``args`` above are the baseline's
    duet: JsonDuet | None = None

    @property
    def kind(self) -> Literal["image", "template"]:
        return "template" if self.template is not None else "image"


class JsonClaimedJob(_Wire):
    uuid: uuid.UUID
    spec: JsonSpec
    config: JsonJobConfig
    oci_token: str
    timeout: int
    created: dt.datetime
    nonce: str | None = None
    """Ours (extension ``nonce``): left out for a runner that did not announce it."""


class IterationResult(_Wire):
    """One iteration's outcome on the runner; ``output`` maps collected file paths to text."""

    exit_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None
    output: dict[str, str] | None = None
    side: DuetSide | None = None
    """In a duet job: which side ran in this iteration, in round ``round`` (0-based)."""
    round: int | None = Field(default=None, ge=0)
    build_time: dict[str, float] | None = None
    """With the job's ``build_time``: the command as run -> its wall time in seconds."""
    file_sizes: dict[str, int] | None = None
    """With the job's ``file_size``: each file of ``file_paths`` found -> its size in bytes."""

    @model_serializer(mode="wrap")
    def _later_fields_only_when_set(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Outputs and result hashes of jobs without duets or Bencher's build-time/file-size
        # flags stay exactly as they were before these fields.
        data = handler(self)
        if isinstance(data, dict):
            for tag in ("side", "round", "build_time", "file_sizes"):
                if data.get(tag, 0) is None:
                    del data[tag]
        return data


class NoiseCalibration(_Wire):
    """One run of the noise guard's fixed-work loop on the job's cores."""

    rounds: int = Field(ge=1)
    median_ns: int = Field(ge=0)
    cv: float = Field(ge=0)
    """Coefficient of variation of the rounds' times (sample standard deviation / mean)."""
    spread: float | None = Field(default=None, ge=0)
    """How much the machine's speed wandered: the interquartile range of the medians of
    consecutive blocks of rounds, over their median. A round that met a scheduler tick moves
    no block's median; a neighbour that slows the core for a while moves several. None from a
    runner that predates it (the server then judges ``cv``)."""


class NoiseGuard(_Wire):
    """The machine's quietness around one job: calibrations right before and right after it."""

    before: NoiseCalibration
    after: NoiseCalibration | None = None
    drift: float | None = None
    """``after.median_ns / before.median_ns - 1``: the machine got slower (+) or faster (-)."""
    before_age_ms: float | None = Field(default=None, ge=0)
    """How long before the job's first iteration ``before`` was taken (the runner takes it
    while it waits for work, so that the job's pickup does not wait for it)."""


class JsonJobOutput(_Wire):
    """What is stored at ``{project}/output/v0/jobs/{job}`` and returned on a job read."""

    results: list[IterationResult] = Field(default_factory=list)
    error: str | None = None
    noise: NoiseGuard | None = None


def results_hash(results: list[IterationResult]) -> str:
    """SHA-256 of the canonical JSON of a result list: tells a resend from a different result."""
    return canonical_hash([r.model_dump(mode="json") for r in results])


# ---------------------------------------------------------------- runner -> server


class RunnerMetadata(_Wire):
    """What a runner says about itself in ``ready``: nested as ``runner`` by Bencher's runner,
    whose ``channel`` and ``checksum`` are our ``ready``'s top-level ``update_channel`` and
    ``checksum``."""

    os: str | None = Field(default=None, max_length=128)
    arch: str | None = Field(default=None, max_length=64)
    version: str | None = Field(default=None, max_length=64)
    channel: str | None = Field(default=None, max_length=32)
    checksum: str | None = Field(default=None, max_length=128)


class Ready(_Wire):
    event: Literal["ready"] = "ready"
    poll_timeout: int | None = Field(default=None, ge=MIN_POLL_TIMEOUT, le=MAX_POLL_TIMEOUT)
    os: str | None = Field(default=None, max_length=128)
    arch: str | None = Field(default=None, max_length=64)
    version: str | None = Field(default=None, max_length=64)
    runner: RunnerMetadata | None = None
    extensions: list[Annotated[str, Field(max_length=64)]] | None = Field(
        default=None, max_length=32
    )
    """Protocol additions the runner understands (``OUR_EXTENSIONS``); the server sends a
    runner nothing that it did not announce."""
    update_channel: str | None = Field(default=None, max_length=32)
    """The release channel the runner follows (absent: ``stable``), as Bencher's runner's
    ``--update-channel``; a channel the server does not know is offered nothing (text, not an
    enumeration: another runner's channel name must not make its ready invalid)."""
    checksum: str | None = Field(default=None, max_length=128)
    """SHA-256 (hex) of the release wheel the runner runs, when it was installed from one: how
    a ``canary`` runner is told from the newest canary build."""

    def metadata(self) -> RunnerMetadata:
        """The runner's os, arch and version, sent inline or nested as ``runner`` (both are
        accepted; inline wins)."""
        nested = self.runner or RunnerMetadata()
        return RunnerMetadata(
            os=self.os or nested.os,
            arch=self.arch or nested.arch,
            version=self.version or nested.version,
        )

    def release_channel(self) -> str | None:
        """The release channel the runner follows: ``update_channel``, or Bencher's nested
        ``runner.channel``; None when it names neither (the caller's default applies)."""
        return self.update_channel or (self.runner.channel if self.runner else None)

    def running_checksum(self) -> str | None:
        """The checksum of the release the runner runs: ``checksum``, or Bencher's nested
        ``runner.checksum``."""
        return self.checksum or (self.runner.checksum if self.runner else None)


class Running(_Wire):
    event: Literal["running"] = "running"
    job: uuid.UUID | None = None


class Heartbeat(_Wire):
    event: Literal["heartbeat"] = "heartbeat"


class Log(_Wire):
    """A piece of a running job's output. ``offset`` counts UTF-8 bytes of ``stream`` since the
    job began (all iterations in turn); the runner sends its stream as UTF-8 text, invalid bytes
    replaced, so ``data`` always advances the offset by its own encoded length."""

    event: Literal["log"] = "log"
    job: uuid.UUID
    stream: Literal["stdout", "stderr"]
    offset: int = Field(ge=0, le=2**53)
    data: str = Field(min_length=1, max_length=MAX_LOG_CHUNK)


class SignedResult(_Wire):
    """What a runner registered with a public key adds to every terminal message
    (docs/decisions/signed-results.md): the claimed job's ``nonce``, ``output_hash``
    (``result_output_hash``) and the base64url Ed25519 ``signature`` of the canonical JSON of
    ``{"job", "nonce", "output_hash"}``. Other runners leave them out; the server then ignores
    them."""

    nonce: str | None = Field(default=None, max_length=128)
    output_hash: str | None = Field(default=None, max_length=128)
    signature: str | None = Field(default=None, max_length=256)
    _received_hash: str | None = PrivateAttr(default=None)
    """``sha256_hex(canonical_json(results))`` of the ``results`` value as it was received,
    before validation drops what the model does not know; kept when ``output_hash`` is sent."""

    @model_validator(mode="wrap")
    @classmethod
    def _hash_results_as_received(
        cls, data: Any, handler: ModelWrapValidatorHandler[SignedResult]
    ) -> SignedResult:
        message = handler(data)
        # Only a signer's hash is checked: other messages are spared hashing their results.
        if isinstance(data, dict) and data.get("output_hash") is not None:
            results = data.get("results", []) if "results" in cls.model_fields else []
            message._received_hash = canonical_hash(_json_value(results))
        return message


def _json_value(value: Any) -> Any:
    """``value`` as JSON types: models as they go on the wire (null fields left out)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, list | tuple):
        return [_json_value(item) for item in value]
    if isinstance(value, dict):
        return {key: _json_value(item) for key, item in value.items()}
    return value


class Completed(SignedResult):
    event: Literal["completed"] = "completed"
    job: uuid.UUID
    results: list[IterationResult]
    noise: NoiseGuard | None = None


class Failed(SignedResult):
    event: Literal["failed"] = "failed"
    job: uuid.UUID
    results: list[IterationResult] = Field(default_factory=list)
    error: str
    noise: NoiseGuard | None = None


class Canceled(SignedResult):
    event: Literal["canceled"] = "canceled"
    job: uuid.UUID


def result_output_hash(message: Completed | Failed | Canceled) -> str:
    """``sha256_hex(canonical_json(results))`` of a terminal message, its results as they go on
    the wire (``encode`` leaves null fields out); ``canceled`` has none: ``[]``."""
    results = [] if isinstance(message, Canceled) else message.results
    return canonical_hash([r.model_dump(mode="json", exclude_none=True) for r in results])


def received_output_hash(message: Completed | Failed | Canceled) -> str:
    """The output hash of the results exactly as received: canonical JSON of the ``results``
    value parsed from the wire, fields this model does not know included (a signer hashes
    what it sends). A message built here rather than received hashes as it would be sent."""
    received = message._received_hash
    return received if received is not None else result_output_hash(message)


RunnerMessage = Annotated[
    Ready | Running | Heartbeat | Log | Completed | Failed | Canceled,
    Field(discriminator="event"),
]
TerminalMessage = Completed | Failed | Canceled
runner_message = TypeAdapter[RunnerMessage](RunnerMessage)


def parse_runner_message(data: str | bytes) -> RunnerMessage:
    """A runner's message from its JSON text, validated strictly.

    Raises ValidationError for anything else: invalid JSON or UTF-8, nesting deeper than
    ``MAX_NESTING``, not an object, an unknown or missing ``event``, a field of the wrong type.
    ``explain_invalid`` turns the error into the text of an ``error`` event.
    """
    return runner_message.validate_json(data, strict=True)


def explain_invalid(exc: ValidationError) -> str:
    """One line for the sender of an invalid message, built from the error alone: the message
    is never parsed a second time (it may be nested too deeply for a recursive parser)."""
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0] if errors else None
    if first is None:
        return "invalid message"
    kind = first["type"]
    if kind == "json_invalid":
        if "recursion limit" in first["msg"]:
            return f"invalid message: nested deeper than {MAX_NESTING} levels"
        return "invalid message: not valid JSON"
    if kind in ("dict_type", "model_type", "model_attributes_type") and not first["loc"]:
        return "invalid message: not a JSON object"
    if kind == "union_tag_not_found":
        return "invalid message: missing 'event'"
    if kind == "union_tag_invalid":
        tag = str((first.get("ctx") or {}).get("tag", ""))[:64]
        return f"invalid message: unknown event {tag!r}"
    if not first["loc"]:
        return f"invalid message: {first['msg']}"[:1000]
    event = first["loc"][0]
    details = "; ".join(
        f"{'.'.join(str(p) for p in e['loc'][1:]) or 'event'}: {e['msg']}" for e in errors
    )
    return f"invalid {event!r} message: {details}"[:1000]


def invalid_event(exc: ValidationError) -> str | None:
    """The ``event`` of an invalid message, when it named a known one."""
    errors = exc.errors(include_url=False, include_input=False)
    if not errors or errors[0]["type"].startswith(("json_", "union_tag")):
        return None
    loc = errors[0]["loc"]
    return str(loc[0]) if loc else None


# ---------------------------------------------------------------- server -> runner


class Ack(_Wire):
    event: Literal["ack"] = "ack"
    job: uuid.UUID | None = None


class JobAssigned(JsonClaimedJob):
    """``job``: the claimed job's fields inline beside the event
    (docs/decisions/bencher-wire.md)."""

    event: Literal["job"] = "job"

    def claimed(self) -> JsonClaimedJob:
        return JsonClaimedJob.model_validate(self.model_dump(exclude={"event"}))


class NoJob(_Wire):
    event: Literal["no_job"] = "no_job"


class Cancel(_Wire):
    event: Literal["cancel"] = "cancel"
    job: uuid.UUID | None = None


class Update(_Wire):
    """docs/decisions/runner-releases.md: install release ``version`` from ``url`` (on the server
    the runner is connected to), whose SHA-256 is ``checksum`` (hex), then restart between jobs."""

    event: Literal["update"] = "update"
    version: str
    url: str
    checksum: str


class Error(_Wire):
    """A refusal. ``reply_to`` and ``job`` name the runner's message it answers: its ``event``
    and, when it has one, its ``job``; both are absent when the server could not read that
    message. A runner must not take the refusal of a ``log`` (answered only when refused, so
    possibly after later messages went out) for the refusal of a result."""

    event: Literal["error"] = "error"
    message: str
    reply_to: str | None = Field(default=None, max_length=64)
    job: uuid.UUID | None = None

    def answering(self, message: RunnerMessage) -> Error:
        """This error as the reply to ``message``."""
        return self.model_copy(update={"reply_to": message.event, "job": _job_of(message)})

    def refused_event(self) -> str | None:
        """The event of the refused message: ``reply_to``. From a server that predates it,
        ``log`` for the refusal of a ``log`` (their text begins ``log:``), else None."""
        if self.reply_to is not None:
            return self.reply_to
        return LOG_EXTENSION if self.message.startswith(f"{LOG_EXTENSION}:") else None


def _job_of(message: RunnerMessage) -> uuid.UUID | None:
    job = getattr(message, "job", None)
    return job if isinstance(job, uuid.UUID) else None


ServerMessage = Annotated[
    Ack | JobAssigned | NoJob | Cancel | Update | Error,
    Field(discriminator="event"),
]
server_message = TypeAdapter[ServerMessage](ServerMessage)


def parse_server_message(data: str | bytes) -> ServerMessage:
    """The server's message from its JSON text, validated strictly; raises ValidationError."""
    return server_message.validate_json(data, strict=True)


def encode(message: BaseModel) -> str:
    """Compact JSON without null fields: a heartbeat is ``{"event":"heartbeat"}``."""
    return message.model_dump_json(exclude_none=True)


def parse_extensions_header(value: str | None) -> frozenset[str]:
    """The extensions named in a handshake's ``EXTENSIONS_HEADER`` (comma separated)."""
    if not value:
        return frozenset()
    names = (name.strip() for name in value.split(",")[:32])
    return frozenset(name for name in names if 0 < len(name) <= 64)


def close_reason(reason: str) -> str:
    """A close frame's reason as Bencher's server writes it: the reason as a JSON string."""
    return json.dumps(reason)


JOB_SOCKET_ENDINGS: dict[str, str] = {
    "completed": "job_completed",
    "failed": "job_failed",
    "canceled": "job_canceled_by_runner",
    "cancel": "job_canceled",
}
"""A per-job socket closes (1000) once its job ended there, with these reasons (as Bencher's
per-job handler), by the message that ended it: the runner's terminal message, acknowledged,
or the server's ``cancel``."""


def is_digest(value: str) -> bool:
    return DIGEST.fullmatch(value) is not None
