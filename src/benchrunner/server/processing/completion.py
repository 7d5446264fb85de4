"""The write behind a runner's ``completed``: one transaction for the move to ``completed``,
the output when it is small enough for a row, and, when it is small enough to parse at once,
its processing too (metrics, report, ``processed``; where thresholds judge the metrics, the
job stays ``completed`` until their judgment after the runner's ``ack``, ``processing.judgment``).

Doing it all at once spares a small job the blob file and its two flushes, and the
processor's own reads and transaction; its ``ack`` then also means that the job's metrics are
stored. A larger output is written to the blob store before the transaction and processed in
the background (``processing``), as is any job whose processing here fails: the caller then
writes the completion again without it (no savepoint: two fewer round trips on PostgreSQL for
every job, for a failure that should not happen).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass

from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.server.moves.move import Move, apply, apply_reading
from benchrunner.server.processing.judgment import JudgmentLater
from benchrunner.server.processing.processor import (
    INLINE_PARSE_BYTES,
    measure_job,
    measured_with_noise,
    record_processed,
)
from benchrunner.server.store import job_outputs, jobs, reports
from benchrunner.server.store.job_logs import LogTail
from benchrunner.server.store.signed_outputs import (
    SignedOutput,
    signed_columns,
    signed_output_put,
)


@dataclass(frozen=True)
class Completion:
    completed: bool
    """The job moved to ``completed`` (False: it had left ``running``/``failed`` meanwhile)."""
    processed: bool = False
    """... and on to ``processed`` in the same transaction (False while its metrics, stored,
    await their judgment: ``judge``)."""
    error: str | None = None
    """Why the output gave no metrics, when processed."""
    row: jobs.JobRow | None = None
    """The job as it was completed, when processed."""
    moves: tuple[Move, ...] = ()
    """The moves made, for ``Moves.done`` once they committed."""
    judge: JudgmentLater | None = None
    """The report's judgment and look-back, for after the runner's ``ack``; it moves the job
    to ``processed``."""


def complete(
    conn: Connection,
    job: jobs.JobRow,
    now: dt.datetime,
    actor: str,
    late: bool,
    row_output: bytes | None,
    process: bool,
    signed: SignedOutput | None = None,
    log: LogTail | None = None,
) -> Completion:
    """Move ``job`` to ``completed``, keep ``row_output`` (None: its output is a blob), the
    runner's ``signed`` over it and the job's last live-log chunks (``log``), and with
    ``process`` also process it from that output."""
    # A late result replaces the failure's signature too (with none, when it is unsigned).
    resigned = signed is not None or late
    message = "runner delivered a result after the job had failed" if late else "runner completed"
    # A small output is kept by the move's own statement, which also reads how to parse it
    # when it is parsed here: on PostgreSQL, one round trip for all three.
    parse_here = row_output is not None and process and len(row_output) <= INLINE_PARSE_BYTES
    done = Move(
        job,
        JobStatus.COMPLETED,
        now,
        message,
        actor,
        runner=actor,
        values=signed_columns(signed) if resigned else {},
        output=row_output,
        log=log,
    )
    if not parse_here:
        if not apply(conn, done):
            return Completion(completed=False)
        return Completion(completed=True, moves=(done,))
    assert row_output is not None
    parsing = apply_reading(conn, done, reports.REPORT_PARSING, {"report_id": job.report_id})
    if parsing is None:
        return Completion(completed=False)
    completed = _as_completed(conn, job, now, signed if resigned else job.signed)
    if completed is None:
        return Completion(completed=True, moves=(done,))
    item = measured_with_noise(
        completed,
        *measure_job(
            completed.config.duet, parsing.adapter, parsing.average, parsing.fold, row_output
        ),
        parsing,
    )
    recorded = record_processed(
        conn, completed, item.values, item.error, now, parsing, item.noise, item.duet
    )
    if recorded is None:
        return Completion(completed=True, moves=(done,))
    return Completion(
        completed=True,
        processed=recorded.move is not None,
        error=item.error,
        row=completed,
        moves=(done,) if recorded.move is None else (done, recorded.move),
        judge=recorded.judge,
    )


def _as_completed(
    conn: Connection, job: jobs.JobRow, now: dt.datetime, signed: SignedOutput | None
) -> jobs.JobRow | None:
    """The job as its move to ``completed`` at ``now`` left it, its times exactly as stored
    (its report's are taken from them). Only ``started`` may be unknown to the caller's copy
    (a job it saw before it ran); once set it never changes, so a copy that has it needs no
    read."""
    if job.started is None:
        return jobs.job_get(conn, job.id)
    return dataclasses.replace(
        job, status=JobStatus.COMPLETED, completed=now, modified=now, signed=signed
    )


def fail_with_output(
    conn: Connection, failed: Move, row_output: bytes | None, signed: SignedOutput | None = None
) -> bool:
    """Make ``failed`` (a move to ``failed``) and keep ``row_output`` (None: its output is a
    blob) and the runner's ``signed`` over it."""
    if signed is not None:
        failed = dataclasses.replace(failed, values={**failed.values, **signed_columns(signed)})
    return apply(conn, dataclasses.replace(failed, output=row_output))


def keep_late_output(
    conn: Connection, job_id: int, row_output: bytes | None, signed: SignedOutput | None
) -> None:
    """Keep the output (None: it is a blob, stored already) and its signature of a job that has
    already left flight, or is leaving it in this transaction."""
    if row_output is not None:
        job_outputs.output_put(conn, job_id, row_output)
    if signed is not None:
        signed_output_put(conn, job_id, signed)
