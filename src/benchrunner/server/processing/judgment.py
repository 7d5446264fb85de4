"""A runner job's report judged after its metrics committed (docs/reference/thresholds.md,
"Scale"): never in the transaction that stores them, so never on the path of the runner's
``ack``, and on SQLite never holding the single writer for more than a short write.

``judge_later`` reads the history and draws every verdict on a reader thread, outside any
write transaction (``evaluation.judge_report``), then writes them ``verdicts.WRITE_ROWS`` rows a
write transaction on SQLite (all in one where writers run concurrently: PostgreSQL), each
re-checking what the judgment read (``verdicts.verdicts_write``). A write that finds a
threshold's model changed or a baseline reset since the read writes nothing: the metrics left
without a boundary are judged again, from a new read (``STALE_TRIES`` times, then in one write
transaction). Then one write opens the report's confirmation when it held alerts back and
moves the job to ``processed`` (docs/reference/thresholds.md, "When": a job ``processed`` has
its report judged); then it looks back over its series (``look_back.look_back_later``), which
is not part of the judgment.

A server stopped before that move, a storing of the rest of the metrics that failed (whatever
the failure: moving on would lose the metrics not stored), or a judgment the database cut short (a
connection lost, SQLite busy: ``unavailable``) leaves the job ``completed`` with its metrics
stored: the processor finds it so on start or from the sweeper and judges them again
(``processor.record_processed``); a metric keeps the boundary and alert it has, so nothing is
written twice. A failure that recurs is tried again so at every sweep, logged as an error each
time. A runner job's judgment that fails for a reason not the database's moves it to
``processed`` all the same, its event naming the failure (what failed, the error's type and
database code, never its message, which may quote a value of the data), its metrics left
unjudged; a direct run's report then stays awaiting (its answer says ``pending``). A direct run's
report is judged the same way, its last write ending its wait
(``store.pending_judgments``): one a stop left waiting is judged again by
``pending_judgment.judge_awaiting``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import functools
import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.core.events import JUDGMENT_FAILED_META
from benchrunner.server.moves.move import Move, apply
from benchrunner.server.processing.confirmation_duets import can_run_as_duet
from benchrunner.server.processing.confirmations import open_confirmation
from benchrunner.server.processing.evaluation import judge_report
from benchrunner.server.processing.look_back import LookBackLater, look_back_later
from benchrunner.server.processing.metric_parts import Owner, job_owner, metrics_rest
from benchrunner.server.processing.verdicts import (
    WRITE_ROWS,
    Stale,
    Verdicts,
    Written,
    verdicts_write,
)
from benchrunner.server.store import (
    alerts,
    capabilities,
    history,
    jobs,
    pending_judgments,
    report_rows,
    reports,
    thresholds,
)
from benchrunner.server.store.engine import Database
from benchrunner.server.store.unavailable import (
    database_unavailable,
    described,
    failure_name,
)

log = logging.getLogger(__name__)

STALE_TRIES = 3
"""Judgments from a new read after a write found what the last one read changed; then the
rest is judged in one write transaction."""


@dataclass(frozen=True)
class JudgmentLater:
    """A report whose metrics committed, to be judged (``judge_later``)."""

    report_id: int
    metrics: tuple[reports.StoredMetric, ...]
    noisy: bool
    """The noise guard found the report noisy: only thresholds with ``alert_when_noisy``
    raise alerts."""
    job: jobs.JobRow | None = None
    """The runner job whose report it is, whose crossings wait for confirmation runs (None:
    a direct run's report, never re-run, awaiting its judgment: ``store.pending_judgments``)."""
    processed: Move | None = None
    """The job's move to ``processed``, made by the judgment's last write (None: made
    already)."""
    rest: tuple[reports.MetricValue, ...] = ()
    """Its metrics not stored yet, stored before the judgment (``metric_parts``), after
    ``metrics`` (its first part): ``metric_parts.metrics_rest`` numbers the rest's results
    of the same metric after them."""
    project_id: int | None = None
    """A direct run's project, where its ``rest`` is stored (a job names its own)."""

    def owner(self) -> Owner:
        if self.job is not None:
            return job_owner(self.job)
        assert self.project_id is not None, "a direct run's rest needs its project"
        return Owner(self.report_id, self.project_id, None)


@dataclass
class Judged:
    """What ``judge_later`` did."""

    written: Written
    moved: bool = False
    """The job moved to ``processed`` (for ``Moves.done``)."""
    ended: bool = False
    """The judgment's last write ran: the job left ``completed`` (here or elsewhere), a direct
    run's report no longer awaits its judgment. False: recovery judges it again."""
    confirming: bool = False
    """The report holds alerts back for confirmation runs (its confirmation was opened)."""
    looked_back: int = 0
    """Alerts its look-back raised or re-opened."""


@dataclass
class _Plan:
    verdicts: Verdicts
    found: list[Any]
    reads: history.SeriesReads
    parts_of: int | None
    """Rows a write takes at most (None: all in one)."""


def _plan(
    conn: Connection, later: JudgmentLater, again: bool, cache: report_rows.ReportRows | None
) -> _Plan:
    """The verdicts on ``later``'s metrics (``again``: those still without a boundary), read
    and drawn; ``cache`` (a read connection's: it sees committed rows alone), where the
    history's newest reports are kept between reports."""
    metrics = list(later.metrics)
    if again:
        judged = alerts.report_boundaries(conn, later.report_id)
        metrics = [m for m in metrics if m.id not in judged]
    # read, not cached: the write re-checks the models this read found
    found = thresholds.thresholds_of_report(conn, later.report_id, {m.measure_id for m in metrics})
    reads = history.SeriesReads(cache)
    job = later.job
    verdicts = judge_report(
        conn,
        later.report_id,
        metrics,
        found=found,
        noisy=later.noisy,
        confirming=job is not None,
        duet_possible=functools.cache(
            lambda level: job is not None and can_run_as_duet(conn, job, level)
        ),
        reads=reads,
    )
    parts_of = None if capabilities.of(conn).concurrent_writers else WRITE_ROWS
    return _Plan(verdicts, found, reads, parts_of)


def _judge_whole(conn: Connection, later: JudgmentLater, now: dt.datetime) -> Written:
    """The last resort: judged and written in one write transaction."""
    verdicts = _plan(conn, later, again=True, cache=None).verdicts
    return verdicts_write(conn, verdicts, verdicts.units, now, check=False)


async def judge_later(db: Database, later: JudgmentLater, now: dt.datetime) -> Judged:
    """Store the rest of ``later``'s metrics (``metric_parts``), judge its report (see the
    module), then, in one write, open its confirmation
    when it held alerts back and move its job to ``processed`` (a direct run's report: end
    its wait); then look back over its series.

    A storing of the rest that fails, whatever the failure, leaves the metrics stored so far and
    the job ``completed`` (the report awaiting, its results kept) for recovery: moving on would
    lose the metrics not stored. A judgment cut short by the database
    (``unavailable.database_unavailable``: a connection lost, SQLite busy) leaves the metrics
    judged so far and the job ``completed``, judged again by recovery. Any other failure of the
    judgment would recur on every recovery: a runner job's is logged as an error and the job
    moved all the same, its event naming the failure (``_failed``), the metrics left unjudged;
    a direct run's report stays awaiting, so that its answer says its judgment is pending and no
    gate passes on it unjudged. The look-back's failure is logged and leaves the judgment. A
    failure of the last write leaves the job ``completed`` (the report awaiting), judged again
    by recovery."""
    written = Written()
    if later.rest:
        try:
            rest = await metrics_rest(db, later.owner(), later.rest, now, later.metrics)
        except Exception as exc:
            _log_left(later, "storing its metrics", exc)
            return Judged(written)
        # the job left ``completed`` or the report was judged, elsewhere
        if rest is None:
            return Judged(written)
        later = dataclasses.replace(later, metrics=later.metrics + tuple(rest), rest=())
    first: _Plan | None = None
    failed = False
    try:
        for attempt in range(STALE_TRIES + 1):
            if attempt == STALE_TRIES:
                written.add(await db.write(_judge_whole, later, now))
                break
            plan = await db.read_apart(_plan, later, attempt > 0, report_rows.SHARED)
            first = first or plan
            try:
                await _write_parts(db, plan, now, written)
                break
            except Stale as stale:
                log.info("judging report %s again: %s", later.report_id, stale)
    except Exception as exc:
        if database_unavailable(exc) or later.job is None:
            _log_left(later, "its judgment", exc)
            return Judged(written)
        log.error(
            "judging report %s failed; its metrics stay unjudged", later.report_id, exc_info=True
        )
        later = _failed(later, "judgment", exc)
        failed = True
    found = [] if first is None or failed else first.found
    # Not only when this judgment held alerts back: a judgment stopped before its last write
    # left them written, and raises none anew (``open_confirmation`` reads them).
    confirming, moved = await db.write(_judged, later, found or None, now)
    if first is None or failed:  # nothing judged to look back from
        return Judged(written, moved, ended=True)
    looked = LookBackLater(later.report_id, later.metrics, later.noisy, first.found, first.reads)
    try:
        looked_back = await look_back_later(db, looked, now)
    except Exception:
        log.exception("looking back over report %s's series failed", later.report_id)
        looked_back = 0
    return Judged(written, moved, ended=True, confirming=confirming, looked_back=looked_back)


def _log_left(later: JudgmentLater, doing: str, exc: Exception) -> None:
    """The line for a failure that leaves the report to be judged again: a warning, without the
    statement or its parameters, when the database cut it short; else an error with its trace
    (it recurs at every recovery until what fails is mended)."""
    if database_unavailable(exc):
        log.warning(
            "report %s: %s was cut short by the database (%s); it is judged again later",
            later.report_id,
            doing,
            described(exc),
        )
        return
    log.error(
        "report %s: %s failed; it is left for recovery, which tries again",
        later.report_id,
        doing,
        exc_info=True,
    )


def _failed(later: JudgmentLater, what: str, exc: Exception) -> JudgmentLater:
    """``later`` whose move to ``processed`` says that ``what`` failed, naming the failure
    without its message (``unavailable.failure_name``): the event is shown to the project's
    viewers, and a driver's message may quote a value of the data; the server's log has it."""
    if later.processed is None:
        return later
    message = f"{later.processed.message}; {what} failed: {failure_name(exc)}"
    failed = dataclasses.replace(later.processed, message=message, meta=JUDGMENT_FAILED_META)
    return dataclasses.replace(later, processed=failed)


def _judged(
    conn: Connection, later: JudgmentLater, held: list[Any] | None, now: dt.datetime
) -> tuple[bool, bool]:
    """The judgment's last write: the report's confirmation opened when it holds alerts back
    (``held``: its thresholds), its job moved to ``processed`` (a direct run's report no
    longer awaiting); (opened, moved)."""
    if later.job is None:
        pending_judgments.judged(conn, later.report_id)
    confirming = False
    if held is not None and later.job is not None:
        try:
            with conn.begin_nested():
                confirming = open_confirmation(conn, later.job, held, now)
        except Exception:
            log.exception("opening report %s's confirmation failed", later.report_id)
    moved = later.processed is not None and apply(conn, later.processed)
    return confirming, moved


async def _write_parts(db: Database, plan: _Plan, now: dt.datetime, written: Written) -> None:
    verdicts = plan.verdicts
    parts = [verdicts.units] if plan.parts_of is None else list(verdicts.parts(plan.parts_of))
    for index, part in enumerate(parts):
        if index:
            await asyncio.sleep(0)  # an inline write does not yield by itself
        written.add(await db.write(verdicts_write, verdicts, part, now))
