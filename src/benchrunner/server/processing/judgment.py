"""A report's judgment off the writer (docs/decisions/processing.md): its metrics' boundaries
and alerts drawn on a reader, then written in short transactions.

The transaction that stores a report's metrics (a runner job's in processing, a direct run's
in its request) marks the report's judgment under way (``store.judgings``) and leaves its job
``completed``. Then ``judge_apart`` reads the history and judges every metric in a read unit on
a reader thread (``judgment_plan``: ``evaluation.judge_report``, outside any write
transaction), and writes the verdicts ``WRITE_ROWS`` rows a transaction (``judgment_write``),
the event loop running in between. Each write first checks, under its thresholds' locks, that
what the judgment read still holds: its series' thresholds are the same, with the same models
and history versions (``store.history_versions``: no metric stored on its branch and testbed,
nor a baseline reset, since it read), and no change-point alert appeared since on the points a
step alert of the write was drawn from; when not, the rest is judged again on a fresh read
(what is written stands: a metric is judged once). The last reading is written without the
first check, but never raises a second alert on a step.
The last write also opens the report's confirmation, clears the mark and moves the job to
``processed``: a client that sees ``processed`` sees every alert of the report.

A crash between the writes leaves the mark, and the job ``completed``: at startup the processor
takes the job again and, finding the metrics stored, judges the report again; a direct run's
report is judged again at startup (``judge_left_over``), and looks back. Writing a verdict
twice is harmless. A judgment that fails is counted on its mark (``judgment_failed``): after
``ATTEMPTS`` the report keeps the error and its job moves to ``processed`` unjudged, as a
report whose output did not parse.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import functools
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.server.moves.move import Move, apply
from benchrunner.server.processing.confirmation_duets import Level, can_run_as_duet
from benchrunner.server.processing.confirmations import open_confirmation
from benchrunner.server.processing.evaluation import judge_report
from benchrunner.server.processing.look_back import LookBackLater, look_back_later
from benchrunner.server.processing.verdicts import AlertVerdict, Verdict, Verdicts, verdicts_write
from benchrunner.server.store import (
    alerts,
    capabilities,
    history,
    history_versions,
    jobs,
    judgings,
    reports,
    thresholds,
)
from benchrunner.server.store.engine import Database

log = logging.getLogger(__name__)

WRITE_ROWS = 100
"""Rows (metrics stored in parts; boundaries, an alert counting ``verdicts.ALERT_ROWS``) one
write transaction of a judgment writes at most, by default (the server's
``judgment_write_rows``): on SQLite a few milliseconds of the single writer
(``benchmarks/reports_scale.py`` prints the longest)."""

REREADS = 2
"""How often a judgment whose history changed under it is read again; after that it is
written as judged (a report stored meanwhile is judged against this one by its own)."""

ATTEMPTS = 3
"""Judgments of a report that may fail (a write's error) before it is left unjudged with the
error on it: a job is not judged again for ever."""


@dataclass(frozen=True)
class Judging:
    """What judging a report needs beside its stored metrics, kept in ``report.judging`` while
    its judgment is under way."""

    report_id: int
    noisy: bool = False
    """The noise guard found the run noisy: only thresholds with ``alert_when_noisy`` alert."""
    confirming: bool = False
    """A runner job's report: thresholds with confirmation runs hold their alerts back."""
    never_alerts: tuple[str, ...] = ()
    """The benchmarks (their stored names) whose metrics never alert."""
    attempts: int = 0
    """Judgments of the report that failed so far (``judgment_failed``)."""

    def encoded(self) -> str:
        return json.dumps(
            {
                "noisy": self.noisy,
                "confirming": self.confirming,
                "never_alerts": list(self.never_alerts),
                "attempts": self.attempts,
            }
        )

    def storing(self) -> str:
        """``report.judging`` while the report's metrics are stored in parts."""
        return judgings.STORING + self.encoded()

    @classmethod
    def decoded(cls, report_id: int, text: str) -> Judging:
        data = json.loads(text.removeprefix(judgings.STORING))
        return cls(
            report_id,
            bool(data["noisy"]),
            bool(data["confirming"]),
            tuple(str(name) for name in data["never_alerts"]),
            int(data.get("attempts", 0)),
        )


def never_alert_benchmarks(values: Sequence[reports.MetricValue]) -> tuple[str, ...]:
    """The benchmarks (named as stored) of the values whose result was named with an ignore
    suffix."""
    named = (reports.without_ignore_suffix(v.benchmark) for v in values)
    return tuple(sorted({name for name, never in named if never}))


@dataclass(frozen=True)
class Storing:
    """A report's metrics to store in parts before its judgment (``store_part``)."""

    project_id: int
    values: list[reports.MetricValue]
    now: dt.datetime


def stores_in_parts(conn: Connection) -> bool:
    """Whether a report's metrics that thresholds judge are stored in parts, each a write
    transaction of its own: where a write transaction holds the database's single writer
    (SQLite). Elsewhere they are stored in one, with the mark."""
    return not capabilities.of(conn).concurrent_writers


@dataclass(frozen=True)
class JudgmentDue:
    """A report whose metrics are stored (or, with ``storing``, to store first) and whose
    judgment is to be written."""

    judging: Judging
    job: jobs.JobRow | None = None
    """Its runner job (None: a direct run)."""
    processed: Move | None = None
    """The job's move to ``processed``, made by the judgment's last write."""
    storing: Storing | None = None


@dataclass(frozen=True)
class Plan:
    """A report's judgment as read: its verdicts, and what must still hold to write them."""

    judging: Judging
    metrics: list[reports.StoredMetric]
    found: list[Any]
    verdicts: Verdicts
    versions: history_versions.Versions
    """The thresholds of the report's series as the judgment read them."""
    measure_ids: tuple[int, ...]
    scope: history.Scope
    reads: history.SeriesReads


def judgment_plan(conn: Connection, judging: Judging, job: jobs.JobRow | None) -> Plan:
    """The report's judgment: reads only. A failure of the judgment itself is logged and
    judges nothing (the report keeps its metrics unjudged), so its job still ends
    ``processed``."""
    report_id = judging.report_id
    scope = history.scope_of(reports.report_row(conn, report_id))
    metrics = judgings.stored_metrics(conn, report_id, judging.never_alerts)
    measure_ids = tuple(sorted({m.measure_id for m in metrics}))
    # before the history: what changes after it is news
    versions = history_versions.versions(conn, _branches(scope), scope.testbed_id, measure_ids)
    found = thresholds.thresholds_of_report(conn, report_id, set(measure_ids))
    verdicts = Verdicts()
    reads = history.SeriesReads()
    duet_possible: Callable[[Level], bool] = _no_duet
    if job is not None:
        duet_possible = functools.cache(lambda level: can_run_as_duet(conn, job, level))
    try:
        judge_report(
            conn,
            report_id,
            metrics,
            verdicts,
            noisy=judging.noisy,
            found=found,
            confirming=judging.confirming,
            duet_possible=duet_possible,
            reads=reads,
        )
    except Exception:  # an evaluation bug must not leave the job `completed` for ever
        log.exception("judging report %s failed; its metrics stay unjudged", report_id)
        verdicts = Verdicts()
    return Plan(judging, metrics, found, verdicts, versions, measure_ids, scope, reads)


def _branches(scope: history.Scope) -> list[int]:
    """The branches a history of ``scope`` reads: its own, and its start point's."""
    if scope.start_point_branch_id is None:
        return [scope.branch_id]
    return [scope.branch_id, scope.start_point_branch_id]


def _no_duet(_level: Level) -> bool:
    return False


@dataclass(frozen=True)
class Written:
    raised: int
    moved: Move | None = None
    """The job's move to ``processed`` the last write made."""
    confirming: bool = False
    """The last write opened a confirmation of the report."""


def judgment_write(
    conn: Connection,
    plan: Plan,
    items: Sequence[Verdict],
    now: dt.datetime,
    last: JudgmentDue | None,
    check: bool,
) -> Written | None:
    """Write ``items`` of ``plan``'s verdicts, and with ``last`` end the judgment (open the
    report's confirmation, clear its mark, move its job to ``processed``); with ``check``,
    first check that what the judgment read still holds: None, with nothing written, when it
    does not. Without ``check`` the thresholds are locked all the same, and a step's alert on
    whose points another appeared since the read is left out."""
    thresholds.lock_thresholds(conn, sorted(plan.versions))  # one check and write at a time
    if check and _stale(conn, plan, items):
        return None
    if not check:
        alerted = _alerted_since(conn, plan, items)
        items = [i for i in items if i not in alerted]
    report_id = plan.judging.report_id
    raised = verdicts_write(conn, report_id, items, now).raised
    if last is None:
        return Written(raised)
    confirming = False
    if last.job is not None and plan.judging.confirming:
        confirming = open_confirmation(conn, last.job, plan.found, now)
    judgings.judging_end(conn, report_id)
    moved = None if last.processed is None else dataclasses.replace(last.processed, now=now)
    if moved is not None and not apply(conn, moved):
        moved = None
    return Written(raised, moved, confirming)


def _stale(conn: Connection, plan: Plan, items: Sequence[Verdict]) -> bool:
    """Whether what ``plan`` read changed: its thresholds (one created, dropped, its model
    replaced, its history changed), or an alert on the points of a step of ``items``. A few
    rows read through indexes: no scan of what was stored meanwhile."""
    scope = plan.scope
    now = history_versions.versions(conn, _branches(scope), scope.testbed_id, plan.measure_ids)
    return now != plan.versions or bool(_alerted_since(conn, plan, items))


def _alerted_since(conn: Connection, plan: Plan, items: Sequence[Verdict]) -> list[Verdict]:
    """The step alerts of ``items`` on whose points (``AlertVerdict.zone``) a change-point
    alert appeared since the judgment read them, other than its own."""
    steps = [i for i in items if isinstance(i, AlertVerdict) and i.zone]
    if not steps:
        return []
    own = {i.metric_id for i in plan.verdicts.items if isinstance(i, AlertVerdict) and i.zone}
    alerted = alerts.change_alerted(conn, sorted({m for i in steps for m in i.zone}))
    return [i for i in steps if (alerted & set(i.zone)) - i.known - own]


@dataclass(frozen=True)
class Judged:
    """A judgment written."""

    processed: Move | None
    """The job's move to ``processed``, made (for ``Moves.done``)."""
    confirming: bool
    raised: int
    look_back: LookBackLater | None
    """The report's look-back, to run next (``look_back.look_back_later``); None when it was
    left unjudged."""


def store_part(
    conn: Connection,
    report_id: int,
    storing: Storing,
    part: slice,
    judging: Judging | None,
) -> None:
    """Insert a part of a report's metrics; with ``judging``, the last: the report is history
    from now on (its mark says what judging it needs, its series' judgments under way read
    again)."""
    values = storing.values[part]
    reports.metrics_insert(conn, report_id, storing.project_id, values, storing.now)
    if judging is not None:
        judgings.judging_set(conn, report_id, judging.encoded())
        history_versions.report_history_changed(conn, report_id)


async def store_apart(db: Database, due: JudgmentDue, rows: int = WRITE_ROWS) -> None:
    """Store ``due.storing`` ``rows`` metrics a write transaction, the event loop running in
    between; the report is left out of histories until the last (``judgings.STORING``)."""
    storing = due.storing
    assert storing is not None
    report_id = due.judging.report_id
    count = len(storing.values)
    for start in range(0, max(count, 1), rows):
        if start:
            await asyncio.sleep(0)  # an inline write does not yield by itself
        end = start + rows
        last = due.judging if end >= count else None
        await db.write(store_part, report_id, storing, slice(start, end), last)


async def judge_apart(
    db: Database,
    due: JudgmentDue,
    clock: Callable[[], dt.datetime],
    *,
    rows: int = WRITE_ROWS,
) -> Judged:
    """Store ``due``'s metrics when they are to be stored in parts (``store_apart``), then
    judge its report on a reader and write its verdicts ``rows`` rows a transaction (the
    module's docstring). Raises what a write raises: the report's mark stays, and it is
    judged again later."""
    judging = due.judging
    if due.storing is not None:
        await store_apart(db, due, rows)
    raised = 0
    for reread in range(REREADS + 1):
        plan = await db.read_apart(judgment_plan, judging, due.job)
        slices = plan.verdicts.slices(rows)
        written: Written | None = None
        for index, items in enumerate(slices):
            if index:
                await asyncio.sleep(0)  # an inline write does not yield by itself
            last = due if index == len(slices) - 1 else None
            written = await db.write(judgment_write, plan, items, clock(), last, reread < REREADS)
            if written is None:
                break
            raised += written.raised
        if written is not None:
            look_back = LookBackLater(
                judging.report_id, tuple(plan.metrics), judging.noisy, plan.found, plan.reads
            )
            return Judged(written.moved, written.confirming, raised, look_back)
        log.info(
            "report %s's history changed as it was judged: judging it again", judging.report_id
        )
    raise AssertionError("the last reading is written unchecked")


async def judge_left_over(
    db: Database, clock: Callable[[], dt.datetime], rows: int = WRITE_ROWS
) -> int:
    """Judge again the direct runs' reports whose judgment a crash interrupted (a runner
    job's is judged again by the processor, its job being still ``completed``); how many."""
    report_ids = await db.read(judgings.direct_judgings)
    for report_id in report_ids:
        text = await db.read(judgings.judging_of, report_id)
        if text is None:
            continue
        if text.startswith(judgings.STORING):  # its metrics are gone with the request
            await db.write(_not_stored, report_id)
            continue
        await judge_and_look_back(db, JudgmentDue(Judging.decoded(report_id, text)), clock, rows)
    return len(report_ids)


NOT_STORED = "not stored: the server stopped while it stored the report's metrics"


def _not_stored(conn: Connection, report_id: int) -> None:
    judgings.metrics_drop(conn, report_id)
    judgings.judging_end(conn, report_id, error=NOT_STORED)


async def judge_and_look_back(
    db: Database,
    due: JudgmentDue,
    clock: Callable[[], dt.datetime],
    rows: int = WRITE_ROWS,
    on_judged: Callable[[Judged], None] = lambda _judged: None,
) -> Judged | None:
    """``due``'s judgment (``judge_apart``), then ``on_judged`` and its look-back; None when
    the judgment failed: logged and counted (``judgment_failed``), the report judged again
    later or, after ``ATTEMPTS``, left unjudged with the error (``on_judged`` is then told of
    its job's move). A look-back that fails is logged: the judgment stands."""
    try:
        judged = await judge_apart(db, due, clock, rows=rows)
    except Exception as exc:
        report_id = due.judging.report_id
        log.exception("judging report %s failed", report_id)
        try:
            moved = await db.write(judgment_failed, due, _reason(exc), clock())
        except Exception:
            log.exception("counting report %s's failed judgment failed", report_id)
            return None
        if moved is None:
            return None
        judged = Judged(moved, False, 0, None)
        on_judged(judged)
        return judged
    on_judged(judged)
    if judged.look_back is not None:
        try:
            await look_back_later(db, judged.look_back, clock())
        except Exception:
            log.exception("looking back over report %s's series failed", due.judging.report_id)
    return judged


def _reason(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 300 else text[:297] + "..."


def judgment_failed(
    conn: Connection, due: JudgmentDue, reason: str, now: dt.datetime
) -> Move | None:
    """Count a failed judgment of ``due``'s report on its mark; at the ``ATTEMPTS``th, leave
    the report unjudged with ``reason`` as its error, clear the mark and move its job to
    ``processed`` (the move made, for ``Moves.done``). Nothing when it was judged meanwhile."""
    report_id = due.judging.report_id
    text = judgings.judging_of(conn, report_id)
    if text is None:
        return None
    judging = Judging.decoded(report_id, text)
    attempts = judging.attempts + 1
    storing = text.startswith(judgings.STORING)
    if attempts < ATTEMPTS:
        counted = dataclasses.replace(judging, attempts=attempts)
        judgings.judging_set(conn, report_id, counted.storing() if storing else counted.encoded())
        return None
    error = f"not judged after {attempts} attempts: {reason}"
    if storing:  # no report half stored
        judgings.metrics_drop(conn, report_id)
    judgings.judging_end(conn, report_id, error=error)
    if due.processed is None:
        return None
    moved = dataclasses.replace(due.processed, now=now, message=error, reason=error)
    return moved if apply(conn, moved) else None


def judged_apart(conn: Connection, parsing: Any) -> bool:
    """Whether a job's metrics are judged apart from their storing (``parsing``: its report's
    ``reports.reports_parsing`` row): its branch and testbed have thresholds, and it is not a
    confirmation run's report (those are judged by their confirmation)."""
    if parsing.confirms_report_id is not None:
        return False
    return thresholds.series_judged(conn, parsing.branch_id, parsing.testbed_id)


def judge_here(
    conn: Connection, due: JudgmentDue, now: dt.datetime
) -> tuple[Written, LookBackLater]:
    """``due``'s judgment read and written at once in the caller's transaction (a threshold
    appeared after processing chose to store a job's metrics with its move; tests and
    benchmarks that build histories): what was written, and the report's look-back."""
    judging = due.judging
    plan = judgment_plan(conn, judging, due.job)
    try:
        with conn.begin_nested():  # a write that fails leaves the metrics stored, unjudged
            written = judgment_write(conn, plan, plan.verdicts.items, now, due, check=False)
    except Exception:
        log.exception("writing report %s's judgment failed; it stays unjudged", judging.report_id)
        written = judgment_write(conn, plan, [], now, due, check=False)
    assert written is not None
    later = LookBackLater(
        judging.report_id, tuple(plan.metrics), judging.noisy, plan.found, plan.reads
    )
    return written, later
