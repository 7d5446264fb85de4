"""Completed job -> adapter -> metrics in the report -> thresholds judged -> ``processed``
(docs/decisions/processing.md). A runner's small output is processed by its channel after the
``ack`` (``completion``), with this module's write (``write_processed``); this processor takes
the rest: large outputs, and the jobs left ``completed`` (startup, the sweeper, a failure).

Nothing slow runs on the event loop: the outputs are read from their rows, or from their blobs
in a worker thread, decoded and
parsed by the adapters in worker processes (``parsers``), a batch at a time, before the batch's
write. A job's metrics (their first part, on SQLite, of a report with more than one part:
``metric_parts``) and its report's times commit together, with its transition to
``processed`` unless a threshold judges them or parts remain: such a job stays ``completed``
until its report's judgment, after that commit, outside the write transaction but for short
writes (``processing.judgment``), stores the rest and moves it. So a crash half-way leaves
the jobs not yet moved ``completed``, and startup (or the sweeper) processes them again,
storing only the metrics their reports lack. Where the database work runs inline
on the loop (SQLite), a batch's jobs are written in transactions of about
``WRITE_STEP_SECONDS`` each (one job at least), the loop running in between.

A job is processed once whatever its output holds. An output that cannot be read (missing,
unreadable), is too large, or does not parse as a job output ends the job ``processed`` with the
reason on its report: leaving it ``completed`` would have the sweeper re-queue it forever.

It also judges the direct runs' reports a stop left awaiting their judgment
(``pending_judgment``): those it finds on start, and those the sweeper finds.

Memory is bounded by bytes, not only by count: the outputs of one batch are read and parsed
together only up to ``processing_batch_bytes``; the rest wait for the next batch.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import BrokenExecutor, Executor
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.adapters.base import Average, Fold
from benchrunner.core.states import JobStatus
from benchrunner.protocol import JsonDuet, NoiseGuard
from benchrunner.server.blobs.blob_store import job_output_key
from benchrunner.server.context import ServerContext
from benchrunner.server.moves.move import Move, Moves, apply, apply_reading
from benchrunner.server.processing.evaluation import series_thresholds_to_judge
from benchrunner.server.processing.judgment import JudgmentLater, judge_later
from benchrunner.server.processing.metric_parts import first_part, stored_in_parts
from benchrunner.server.processing.noise import NoiseVerdict, verdict
from benchrunner.server.processing.outputs import (
    UnusableOutput,
    output_size,
    read_output,
    row_output,
)
from benchrunner.server.processing.parsers import measure_stored, measure_stored_duet, parser_pool
from benchrunner.server.processing.pending_judgment import judge_awaiting
from benchrunner.server.processing.webhooks import emit_alert_event
from benchrunner.server.store import (
    alerts,
    capabilities,
    duets,
    job_outputs,
    jobs,
    pending_judgments,
    reports,
    thresholds,
)
from benchrunner.server.store.engine import Database
from benchrunner.server.tasks import cancel_and_wait

log = logging.getLogger(__name__)

MAX_BATCH = 64
"""Jobs taken from the queue (and read from the job table) at once."""
AWAITING_AT_START = 500
"""Direct runs' reports awaiting their judgment read on start; the sweeper finds the rest."""

INLINE_PARSE_BYTES = 16 * 1024
"""A batch whose outputs add up to no more than this is parsed on the loop: it takes well
under a millisecond, less than the trip to a worker process and back."""

WRITE_STEP_SECONDS = 0.001
"""Where writes run inline on the event loop: a write transaction takes further jobs of the
batch only while it has run for less than this. A 64 KiB benchmark output's job takes longer
than this to write, so a backlog of them is written a job per transaction: an ack waits behind
one job's write, not several (``benchmarks/RESULTS.md``, "Write steps of one job")."""


def byte_batches(sizes: Sequence[int], budget: int) -> list[range]:
    """Consecutive index ranges whose sizes add up to at most ``budget``; an item larger than
    the budget alone makes a batch of one (it is refused unread)."""
    batches: list[range] = []
    start, total = 0, 0
    for index, size in enumerate(sizes):
        if index > start and total + size > budget:
            batches.append(range(start, index))
            start, total = index, 0
        total += size
    if start < len(sizes):
        batches.append(range(start, len(sizes)))
    return batches


@dataclass(frozen=True)
class Measured:
    """A job and what its output gave: its metrics, or why it has none."""

    job: jobs.JobRow
    values: list[reports.MetricValue]
    error: str | None
    parsing: Any
    """Its report's ``reports.reports_parsing`` row."""
    noise: NoiseVerdict | None = None
    duet: duets.NewDuet | None = None


def measure_job(
    duet: JsonDuet | None, adapter: str, average: Average | None, fold: Fold | None, raw: bytes
) -> tuple[list[reports.MetricValue], str | None, NoiseGuard | None, duets.NewDuet | None]:
    """A job's metrics or, for a duet job (``duet`` its config's), its verdict; or why there
    are none; and the noise guard's figures (of a plain job) when the runner took them. Runs in
    the parser pool (picklable arguments and result) or inline."""
    if duet is None:
        return (*measure_stored(adapter, average, fold, raw), None)
    verdict, error = measure_stored_duet(adapter, average, duet, raw)
    return [], error, None, verdict


class Processor:
    """Processes completed jobs in the background, each queued once however often it is
    enqueued (by the channel, startup recovery and the sweeper alike).

    ``on_batch`` is called with the job ids of each batch after it commits (it lets tests
    observe batch boundaries); ``on_confirming`` after a batch in which a report began to hold
    alerts back for confirmation runs.
    """

    def __init__(
        self,
        ctx: ServerContext,
        *,
        batch_bytes: int | None = None,
        on_batch: Callable[[list[int]], None] | None = None,
        on_confirming: Callable[[], None] | None = None,
        write_step: float = WRITE_STEP_SECONDS,
        parsers: Executor | None = None,
        inline_parse_bytes: int = INLINE_PARSE_BYTES,
    ) -> None:
        self._ctx = ctx
        self._moves = Moves(ctx)
        self._budget = batch_bytes or ctx.settings.processing_budget()
        self._write_step = write_step if ctx.db.inline else None
        self._parsers = parsers
        self._inline_parse_bytes = inline_parse_bytes
        self._own_parsers = parsers is None
        """A pool of our own is started on first use and shut down by ``stop``."""
        self._on_batch = on_batch or (lambda _ids: None)
        self._on_confirming = on_confirming or (lambda: None)
        self._confirming = False
        """A job of the batch being written opened a confirmation."""
        self._judgments: list[JudgmentLater] = []
        """The judgments of the reports of the jobs written, run after their commit."""
        self._queue: asyncio.Queue[int] = asyncio.Queue()
        self._queued: set[int] = set()
        """Jobs waiting in the queue or being processed."""
        self._task: asyncio.Task[None] | None = None
        self._awaiting: asyncio.Queue[int] = asyncio.Queue()
        self._awaiting_queued: set[int] = set()
        """Direct runs' reports awaiting their judgment, queued or being judged."""
        self._awaiting_ends: dict[int, asyncio.Future[bool]] = {}
        """The end of the next judgment of a queued report a request waits for
        (``judgment_of_awaiting``)."""
        self._judging: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="processor")
        self._judging = asyncio.create_task(self._judge_awaiting(), name="direct judgments")

    async def stop(self) -> None:
        await cancel_and_wait(self._judging)
        await cancel_and_wait(self._task)
        # A request waiting for a recovery that will not run now answers its report pending.
        for ends in self._awaiting_ends.values():
            if not ends.done():
                ends.set_result(False)
        self._awaiting_ends.clear()
        if self._own_parsers and self._parsers is not None:
            pool, self._parsers = self._parsers, None
            await _shut_down(pool)

    def enqueue(self, job_id: int) -> None:
        """Queue a job for processing unless it is queued or being processed already."""
        if job_id in self._queued:
            return
        self._queued.add(job_id)
        self._queue.put_nowait(job_id)

    def enqueue_awaiting(self, report_id: int) -> None:
        """Queue a direct run's report awaiting its judgment unless it is queued already."""
        if report_id in self._awaiting_queued:
            return
        self._awaiting_queued.add(report_id)
        self._awaiting.put_nowait(report_id)

    def judgment_of_awaiting(self, report_id: int) -> asyncio.Future[bool]:
        """``enqueue_awaiting``, and the end of the report's next judgment here: True once the
        report no longer awaits it (judged then, or elsewhere before), False when it failed
        (it awaits the sweeper), and False when the processor stops first. Await it shielded:
        every waiter of the report shares it."""
        ends = self._awaiting_ends.get(report_id)
        if ends is None:
            ends = self._awaiting_ends[report_id] = asyncio.get_running_loop().create_future()
        self.enqueue_awaiting(report_id)
        return ends

    async def _judge_awaiting(self) -> None:
        """Judge the direct runs' reports a stop left awaiting their judgment: on start, those
        created before it; then those queued (by the sweeper), one at a time."""
        ctx = self._ctx
        try:
            found = await ctx.db.read(
                pending_judgments.reports_awaiting, ctx.clock.now(), AWAITING_AT_START
            )
        except Exception:  # the sweeper queues them later
            log.exception("reading the reports awaiting their judgment failed")
            found = []
        for report_id in found:
            self.enqueue_awaiting(report_id)
        while True:
            report_id = await self._awaiting.get()
            ended = False
            try:
                judged = await judge_awaiting(ctx.db, report_id, ctx.clock.now())
                ended = judged is None or judged.ended
            except Exception:
                log.exception("judging report %s failed; it still awaits its judgment", report_id)
            finally:
                self._awaiting_queued.discard(report_id)
                ends = self._awaiting_ends.pop(report_id, None)
                if ends is not None and not ends.done():
                    ends.set_result(ended)

    @property
    def waiting(self) -> int:
        """Jobs in the queue, not yet taken into a batch."""
        return self._queue.qsize()

    @property
    def backlog(self) -> int:
        """Jobs queued or being processed."""
        return len(self._queued)

    async def _run(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while len(batch) < MAX_BATCH and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                await self._process_or_one_by_one(batch)
            finally:
                self._queued.difference_update(batch)

    async def _process_or_one_by_one(self, batch: list[int]) -> None:
        try:
            await self.process(batch)
        except Exception:
            log.exception("processing %d jobs together failed; trying one by one", len(batch))
            for job_id in batch:
                try:
                    await self.process([job_id])
                except Exception:
                    log.exception("processing job %s failed; it stays completed", job_id)

    async def process(self, job_ids: list[int]) -> None:
        """Process those of ``job_ids`` still completed, in batches of at most the byte budget
        of outputs, each read and parsed in a worker thread and then written (on SQLite in
        transactions of a few milliseconds; each job's writes commit together)."""
        found = await self._ctx.db.read(jobs.jobs_completed_among, job_ids)
        if not found:
            return
        in_rows = await self._ctx.db.read(job_outputs.outputs_get, [job.id for job in found])
        sizes = await self._sizes(found, in_rows)
        for indexes in byte_batches(sizes, self._budget):
            group = [found[i] for i in indexes]
            parsing = await self._ctx.db.read(
                reports.reports_parsing, [job.report_id for job in group]
            )
            measured = await self._measure_all(group, in_rows, parsing)
            done = 0
            while done < len(measured):
                if done:
                    await asyncio.sleep(0)  # an inline write does not yield by itself
                done, moves = await self._ctx.db.write(self._commit_some, measured, done)
                self._moves.done(*moves)
                await self._judge()
            self._on_batch([job.id for job in group])
            if self._confirming:
                self._confirming = False
                self._on_confirming()

    async def _sizes(self, found: list[jobs.JobRow], in_rows: dict[int, bytes]) -> list[int]:
        in_blobs = [job for job in found if job.id not in in_rows]
        blob_sizes = await asyncio.to_thread(self._blob_sizes, in_blobs) if in_blobs else {}
        return [len(in_rows[job.id]) if job.id in in_rows else blob_sizes[job.id] for job in found]

    def _blob_sizes(self, found: list[jobs.JobRow]) -> dict[int, int]:
        return {
            job.id: output_size(self._ctx.blobs, job_output_key(job.project_uuid, job.uuid))
            for job in found
        }

    def _read_blobs(self, group: list[jobs.JobRow]) -> dict[int, bytes | str]:
        """Each job's output blob, or why it cannot be read. Blocking: for a worker thread."""
        read: dict[int, bytes | str] = {}
        for job in group:
            try:
                key = job_output_key(job.project_uuid, job.uuid)
                read[job.id] = read_output(self._ctx.blobs, key, self._budget)
            except UnusableOutput as exc:
                read[job.id] = str(exc)
        return read

    async def _read_all(
        self, group: list[jobs.JobRow], in_rows: dict[int, bytes]
    ) -> list[bytes | str]:
        """Each job's stored output, or why it cannot be read: from its row, else its blob (in
        a thread)."""
        in_blobs = [job for job in group if job.id not in in_rows]
        from_blobs = await asyncio.to_thread(self._read_blobs, in_blobs) if in_blobs else {}
        read: list[bytes | str] = []
        for job in group:
            raw = in_rows.get(job.id)
            if raw is None:
                read.append(from_blobs[job.id])
                continue
            try:
                read.append(row_output(raw, self._budget))
            except UnusableOutput as exc:
                read.append(str(exc))
        return read

    async def _measure_all(
        self, group: list[jobs.JobRow], in_rows: dict[int, bytes], parsing: dict[int, Any]
    ) -> list[Measured]:
        """Read the outputs of ``group``, then decode and parse them in the parser pool, each
        output on its own."""
        read = await self._read_all(group, in_rows)
        if sum(len(raw) for raw in read if isinstance(raw, bytes)) <= self._inline_parse_bytes:
            return [
                self._measure_here(job, raw, parsing) for job, raw in zip(group, read, strict=True)
            ]
        if self._parsers is None:
            self._parsers = parser_pool()
        pool = self._parsers
        loop = asyncio.get_running_loop()
        pending: list[
            asyncio.Future[
                tuple[
                    list[reports.MetricValue], str | None, NoiseGuard | None, duets.NewDuet | None
                ]
            ]
        ] = []
        for job, raw in zip(group, read, strict=True):
            if isinstance(raw, bytes):
                p = parsing[job.report_id]
                pending.append(
                    loop.run_in_executor(
                        pool, measure_job, job.config.duet, p.adapter, p.average, p.fold, raw
                    )
                )
        try:
            parsed = iter(await asyncio.gather(*pending))
        except BrokenExecutor:  # a worker died (killed, out of memory): start anew next time
            if self._own_parsers and self._parsers is pool:
                self._parsers = None
                await _shut_down(pool)
            raise
        return [
            measured_with_noise(job, *next(parsed), parsing[job.report_id])
            if isinstance(raw, bytes)
            else Measured(job, [], raw, parsing[job.report_id])
            for job, raw in zip(group, read, strict=True)
        ]

    @staticmethod
    def _measure_here(job: jobs.JobRow, raw: bytes | str, parsing: dict[int, Any]) -> Measured:
        if isinstance(raw, str):
            return Measured(job, [], raw, parsing[job.report_id])
        p = parsing[job.report_id]
        return measured_with_noise(
            job, *measure_job(job.config.duet, p.adapter, p.average, p.fold, raw), p
        )

    def _commit_some(
        self, conn: Connection, measured: list[Measured], start: int
    ) -> tuple[int, list[Move]]:
        """Write the jobs of ``measured`` from ``start`` on, while the write step lasts (all of
        them where writes do not run on the loop); returns the index of the first not written
        and the moves made, for ``Moves.done`` once they committed."""
        deadline = None if self._write_step is None else time.perf_counter() + self._write_step
        self._judgments = []  # only this transaction's: one rolled back wrote no report
        index = start
        moves: list[Move] = []
        while index < len(measured):
            move = self._commit(conn, measured[index])
            if move is not None:
                moves.append(move)
            index += 1
            if deadline is not None and time.perf_counter() >= deadline:
                break
        return index, moves

    def _commit(self, conn: Connection, item: Measured) -> Move | None:
        """Store one job's metrics; the move to ``processed`` made (None: none, or its
        judgment makes it). The guard comes first, so a job another replica (or an earlier
        batch) processed meanwhile adds nothing. Its judgment is kept for after the commit
        (``_judge``)."""
        now = self._ctx.clock.now()
        recorded = record_processed(
            conn,
            item.job,
            item.values,
            item.error,
            now,
            item.parsing,
            item.noise,
            item.duet,
        )
        if recorded is None:
            return None
        if recorded.judge is not None:
            self._judgments.append(recorded.judge)
        return recorded.move  # None: its judgment moves it

    async def _judge(self) -> None:
        """The judgments (and look-backs) of the reports just committed, each outside the
        write transaction but for its short writes (``judgment.judge_later``), each moving
        its job to ``processed``. A write that was rolled back leaves some here that never
        committed: their metrics are gone and their jobs ``completed``, for the next try. A
        judgment that raises (its last write failed) is logged and leaves its job
        ``completed``, for the sweeper; the others are judged all the same."""
        pending, self._judgments = self._judgments, []
        for later in pending:
            try:
                judged = await judge_later(self._ctx.db, later, self._ctx.clock.now())
            except Exception:
                log.exception("judging report %s failed; it is judged again", later.report_id)
                continue
            if judged.moved and later.processed is not None:
                self._moves.done(later.processed)
            self._confirming = self._confirming or judged.confirming


def measured_with_noise(
    job: jobs.JobRow,
    values: list[reports.MetricValue],
    error: str | None,
    noise: NoiseGuard | None,
    duet: duets.NewDuet | None,
    parsing: Any,
) -> Measured:
    """What a job's output gave, its noise figures judged against its report's limits
    (``parsing``: the report's ``reports_parsing`` row)."""
    judged = verdict(noise, parsing.noise_cv_limit, parsing.noise_drift_limit)
    return Measured(job, values, error, parsing, judged, duet)


@dataclass(frozen=True)
class Recorded:
    """A job whose metrics ``record_processed`` stored."""

    move: Move | None
    """Its move to ``processed``, made, for ``Moves.done`` once it committed; None while its
    report awaits its judgment (``judge``), which makes it."""
    judge: JudgmentLater | None = None
    """Its report's judgment (and look-back), for the caller to run after the job's
    transaction committed and its runner was answered (``judgment.judge_later``)."""


class InTransaction(Exception):
    """``record_processed`` with ``alone`` found that the job's write takes more than one
    statement (a threshold to judge, metrics stored in parts, a duet's verdict, samples,
    SQLite): nothing was written; it must run in a transaction (``write_processed``)."""


def record_processed(
    conn: Connection,
    job: jobs.JobRow,
    values: list[reports.MetricValue],
    error: str | None,
    now: dt.datetime,
    parsing: Any,
    noise: NoiseVerdict | None = None,
    duet: duets.NewDuet | None = None,
    *,
    alone: bool = False,
) -> Recorded | None:
    """Store a completed job's metrics (or why it has none) in its report, and a duet job's
    verdict beside them; None, with nothing written, when the job is not ``completed``
    (already processed elsewhere) or, its metrics judged nowhere, when a judgment of them
    began elsewhere since ``job`` was read (``Move.unchanged``): they are stored once
    whatever ``parsing``, read before, said. ``parsing`` is its report's
    ``reports.reports_parsing`` row.

    A job ``processed`` has its report judged (docs/reference/thresholds.md, "When"): one whose
    metrics some threshold judges stays ``completed``, and its judgment, returned for the
    caller to run after the commit (``Recorded.judge``), moves it once written; a job left so
    (the server stopped, ``metrics_stored``) has its stored metrics judged again, never stored
    twice. So does one with more metrics than one short write stores on SQLite
    (``metric_parts``), whose judgment stores the rest first. Any other moves to
    ``processed`` here.

    With ``alone`` (a connection in autocommit: each statement commits on its own), it writes
    only where the move, the report's times and its metrics are one statement (PostgreSQL, a
    plain job without samples or a threshold), and otherwise raises ``InTransaction`` before
    any write. Before that statement, the benchmarks and measures its metrics name are found
    or created (``reports.metrics_with_finish``), each creation committed on its own: a job
    processed elsewhere meanwhile leaves them, as its own processing would have."""
    if error is not None:
        message = f"not parsed: {error}"
    elif duet is not None:
        message = f"paired {len(duet.estimates)} duet results"
    else:
        message = f"parsed {len(values)} metrics"
    processed = Move(
        job, JobStatus.PROCESSED, now, message, source=JobStatus.COMPLETED, reason=error
    )
    start_time, end_time = job.started or job.created, job.completed or now
    if job.config.backdate is not None:  # Bencher's --backdate: the same duration, moved
        start_time, end_time = job.config.backdate, job.config.backdate + (end_time - start_time)
    finish = reports.finish_params(
        job.report_id,
        start_time=start_time,
        end_time=end_time,
        error=error,
        noise=None if noise is None else noise.stored(),
    )
    noisy = noise is not None and noise.noisy
    to_judge = parsing.metrics_stored or (
        values
        and parsing.confirms_report_id is None
        and (
            stored_in_parts(conn, values)
            or thresholds.series_has_thresholds(conn, parsing.branch_id, parsing.testbed_id)
        )
    )
    if alone and (
        to_judge
        or duet is not None
        or not capabilities.of(conn).writes_in_ctes
        or any(len(value.samples) > 1 for value in values)  # stored apart (``samples``)
    ):
        raise InTransaction
    if to_judge:
        return _record_to_judge(conn, processed, values, finish, parsing, noisy)
    # The report's times and outcome, and on PostgreSQL its metrics, are written by the
    # move's own statement. It moves the job only as this processor read it: a judgment
    # another began since (``_record_to_judge``) touched it and stored its metrics.
    unchanged = dataclasses.replace(processed, unchanged=True)
    metrics = reports.metrics_with_finish(conn, job.report_id, job.project_id, values, now)
    if metrics is None:
        moved = apply_reading(conn, unchanged, reports.FINISH_AFTER_MOVE, finish)
    else:
        with_metrics = {**finish, **metrics.params()}
        moved = apply_reading(conn, unchanged, reports.FINISH_WITH_METRICS_AFTER_MOVE, with_metrics)
    if moved is None:
        return None
    if duet is not None and duets.duet_add(conn, job.report_id, job.project_id, duet, now):
        emit_alert_event(conn, "alert.raised", alerts.duet_alert_ids(conn, job.report_id), now)
    if metrics is None:
        reports.metrics_add(conn, job.report_id, job.project_id, values, now)
    else:
        metrics.stored(conn, moved.metric_ids)  # their samples
    return Recorded(processed)


async def write_processed(db: Database, item: Measured, now: dt.datetime) -> Recorded | None:
    """``record_processed`` of one job on its own (a runner's result, after its ``ack``):
    one statement committed on its own where it is one (``write_each``: no BEGIN and COMMIT
    on PostgreSQL), else one transaction."""
    args = (item.job, item.values, item.error, now, item.parsing, item.noise, item.duet)
    if not db.capabilities.writes_in_ctes:  # a move is two statements: one transaction
        return await db.write(record_processed, *args)
    try:
        return await db.write_each(record_processed, *args, alone=True)
    except InTransaction:
        return await db.write(record_processed, *args)


def _record_to_judge(
    conn: Connection,
    processed: Move,
    values: list[reports.MetricValue],
    finish: dict[str, Any],
    parsing: Any,
    noisy: bool,
) -> Recorded | None:
    """``record_processed`` of a job whose metrics a threshold may judge, or too many to
    store in one short write (``metric_parts``): their first part stored (those the report
    does not hold yet), the rest and the move left to its judgment when there is a rest or
    a threshold judges them. The job's row is locked (and touched) first, so that a second
    processor of it finds them stored, or, having read it before, moves nothing."""
    job = processed.job
    if not jobs.job_hold_completed(conn, job.id, processed.now):
        return None
    reports.report_finish(conn, finish)
    part, rest = first_part(conn, values)
    stored = reports.metrics_add_missing(conn, job.report_id, job.project_id, part, processed.now)
    if rest or (
        stored and series_thresholds_to_judge(conn, parsing.branch_id, parsing.testbed_id, stored)
    ):
        later = JudgmentLater(job.report_id, tuple(stored), noisy, job, processed, tuple(rest))
        return Recorded(None, later)
    apply(conn, processed)  # nothing to judge after all: the job was locked as ``completed``
    return Recorded(processed)


async def _shut_down(pool: Executor) -> None:
    """Stop a parser pool and wait for its workers to end, off the loop. A pool left to end
    with the interpreter leaves its semaphores to the resource tracker, which warns of them
    on stderr, outside the JSON log."""
    await asyncio.to_thread(pool.shutdown, wait=True, cancel_futures=True)
