"""A runner's ``completed``, in two writes, each committed on its own, the runner's ``ack``
sent between them (docs/explanation/results-safety.md):

1. ``complete``: one statement (on PostgreSQL, in autocommit: ``Database.write_acked_each``;
   a few, each committed, when a resent chunk straddles the log's stored end or the move's
   compare-and-set fails) stores the job's last live-log chunks, when it sent some, and moves
   the job to ``completed`` with its output row when the output is small enough for one
   (a larger one is in the blob store, synced, before it), the runner's signature over it, and
   reads the report's parse info when the output is small enough to parse at once
   (``INLINE_PARSE_BYTES``). Once it is durable the ``ack`` goes out: it promises that the
   output is stored and the job ``completed``, nothing more.
2. ``process_completed``, after the ``ack``: the output parsed on the loop and the move to
   ``processed`` with its metrics, the write the background processor makes too
   (``processor.write_processed``); where thresholds judge the metrics, the job stays
   ``completed`` until their judgment (``processing.judgment``).

A server stopped between the two leaves the job ``completed`` with its output: the processor
processes it at startup, or the sweeper's leader (``recovery``); a larger output is
processed in the background from the start.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.server.moves.move import Move, apply, apply_reading
from benchrunner.server.processing.processor import (
    INLINE_PARSE_BYTES,
    Recorded,
    measure_job,
    measured_with_noise,
    write_processed,
)
from benchrunner.server.store import job_outputs, jobs, reports
from benchrunner.server.store.engine import Database
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
    moves: tuple[Move, ...] = ()
    """The move made, for ``Moves.done`` once it committed."""
    parse: ToProcess | None = None
    """What ``process_completed`` needs, when the output is processed here after the ``ack``
    (None: the background processor processes it)."""


@dataclass(frozen=True)
class ToProcess:
    """A job just completed whose small output is processed after the runner's ``ack``."""

    job: jobs.JobRow
    """The job as its move to ``completed`` left it (``started`` None: not known here)."""
    output: bytes
    parsing: Any
    """Its report's ``reports.reports_parsing`` row, read by the move's statement."""


def complete(
    conn: Connection,
    job: jobs.JobRow,
    now: dt.datetime,
    actor: str,
    late: bool,
    row_output: bytes | None,
    signed: SignedOutput | None = None,
    log: LogTail | None = None,
) -> Completion:
    """Move ``job`` to ``completed``, keep ``row_output`` (None: its output is a blob), the
    runner's ``signed`` over it and the job's last live-log chunks (``log``, stored ahead of
    it), reading the report's parse info when the output is parsed here: on PostgreSQL, one
    statement for the chunks, move, output and read (``moves.move.apply_reading``)."""
    # A late result replaces the failure's signature too (with none, when it is unsigned).
    resigned = signed is not None or late
    message = "runner delivered a result after the job had failed" if late else "runner completed"
    parse_here = row_output is not None and len(row_output) <= INLINE_PARSE_BYTES
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
    completed = dataclasses.replace(
        job,
        status=JobStatus.COMPLETED,
        completed=now,
        modified=now,
        signed=signed if resigned else job.signed,
    )
    return Completion(True, (done,), ToProcess(completed, row_output, parsing))


async def process_completed(db: Database, acked: ToProcess, now: dt.datetime) -> Recorded | None:
    """Parse a completed job's output and write its move to ``processed`` with its metrics
    (``processor.write_processed``); None when it had left ``completed`` (processed
    elsewhere)."""
    job = acked.job
    if job.started is None:  # a job seen before it ran: its report's start is its ``started``
        found = await db.read(jobs.job_get, job.id)
        if found is None or found.status != JobStatus.COMPLETED:
            return None
        job = found
    parsing = acked.parsing
    item = measured_with_noise(
        job,
        *measure_job(job.config.duet, parsing.adapter, parsing.average, parsing.fold, acked.output),
        parsing,
    )
    return await write_processed(db, item, now)


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
