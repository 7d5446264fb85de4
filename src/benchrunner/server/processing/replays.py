"""A terminal message for a job that has left flight: the identical resend is acknowledged, a
different result is refused as a replay (``Assignment already submitted``) and
changes nothing (docs/decisions/result-delivery.md), and a late result that nothing of the runner's
stands against is applied.

What is on record decides, not the message's kind alone:

- ``completed`` or ``processed``: the runner's results. ``completed`` with the same results is
  acknowledged; a different ``completed``, any ``failed`` or ``canceled`` is refused.
- ``failed`` with the runner's failure (an output carrying its error, from its ``failed``):
  ``failed`` with the same results and error is acknowledged; anything else is refused.
- ``failed`` by the server (a heartbeat timeout, a lost runner, an undelivered claim: no
  failure of the runner's on record): the late result is applied (``completed`` replaces the
  failure, ``failed`` adds its output), ``canceled`` is acknowledged and changes nothing.
- ``canceled`` by its runner: the resent ``canceled`` is acknowledged; ``completed`` or
  ``failed`` is refused.
- ``canceled`` by a user or the job's hard timeout: every message is acknowledged and changes
  nothing (the runner's answer to the cancel, or a result that crossed it).

An output on record that cannot be read back leaves nothing to compare: a message of the same
kind is acknowledged.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from benchrunner.core.states import JobStatus
from benchrunner.protocol import (
    Ack,
    Canceled,
    Completed,
    Error,
    Failed,
    JsonJobOutput,
    received_output_hash,
    results_hash,
)
from benchrunner.server.store.jobs import JobRow
from benchrunner.server.store.signed_outputs import SignedOutput

TerminalEvent = Literal["completed", "failed", "canceled"]


@dataclasses.dataclass(frozen=True)
class OnRecord:
    """What a finished job keeps of its runner's terminal message."""

    event: TerminalEvent | None
    """None: nothing of the runner's (the server failed the job, or a user or its timeout
    canceled it)."""
    output: JsonJobOutput | None = None
    """The stored output of a ``completed`` or ``failed``; None when it cannot be read."""


def on_record(
    job: JobRow, output: JsonJobOutput | None, *, unreadable: bool, canceled_by_runner: bool
) -> OnRecord:
    """``job`` (which has left flight) as its record stands: its stored ``output`` (None: none,
    or ``unreadable``) and who canceled it."""
    if job.status in (JobStatus.COMPLETED, JobStatus.PROCESSED):
        return OnRecord("completed", output)
    if job.status == JobStatus.FAILED:
        runners = unreadable or (output is not None and output.error is not None)
        return OnRecord("failed", output) if runners else OnRecord(None)
    return OnRecord("canceled" if canceled_by_runner else None)


def judge(
    job: JobRow,
    record: OnRecord,
    message: Completed | Failed | Canceled,
    signed: SignedOutput | None,
) -> Ack | Error | None:
    """The reply to ``message`` for a job that has left flight, or None when it is a late
    result to apply (the server failed the job and the message is ``completed`` or
    ``failed``)."""
    if record.event is None:
        if job.status == JobStatus.FAILED and not isinstance(message, Canceled):
            return None
        return Ack(job=job.uuid)
    if message.event != record.event:
        return replayed(job, record.event, message.event)
    if isinstance(message, Canceled):
        return Ack(job=job.uuid)
    if record.output is None and compares_hashes(job, message, signed):
        assert job.signed is not None  # the caller did not read the output: the hashes tell
        same = job.signed.output_hash == received_output_hash(message)
        return Ack(job=job.uuid) if same else replayed(job, record.event, message.event)
    if record.output is None or _same_result(record.output, message):
        return Ack(job=job.uuid)
    return replayed(job, record.event, message.event)


def compares_hashes(
    job: JobRow, message: Completed | Failed | Canceled, signed: SignedOutput | None
) -> bool:
    """A signed ``completed`` resent for a job completed under a signature: the two output
    hashes decide, and the stored output need not be read."""
    return (
        isinstance(message, Completed)
        and job.status in (JobStatus.COMPLETED, JobStatus.PROCESSED)
        and job.signed is not None
        and signed is not None
    )


def _same_result(output: JsonJobOutput, message: Completed | Failed) -> bool:
    if isinstance(message, Failed) and output.error != message.error:
        return False
    return results_hash(output.results) == results_hash(message.results)


def replayed(job: JobRow, recorded: TerminalEvent, sent: str) -> Error:
    return Error(
        message=f"Job already submitted: job {job.uuid} already has a different result "
        f"({recorded}); the repeated {sent} message was rejected as a replay"
    )
