"""A report's judgment off the writer (docs/decisions/processing.md): its metrics' boundaries
and alerts drawn on a reader, then written in short transactions.

The transaction that stores a report's metrics (a runner job's in processing, a direct run's
in its request) marks the report's judgment under way (``store.judgings``) and leaves its job
``completed``. Then ``judge_apart`` reads the history and judges every metric in a read unit on
a reader thread (``judgment_plan``: ``evaluation.judge_report``, outside any write
transaction), and writes the verdicts ``WRITE_ROWS`` rows a transaction (``judgment_write``),
the event loop running in between. Each write first checks that what the judgment read still
holds: the thresholds' models are the ones it judged by, and no metric of the report's
history (nor a baseline reset of its series) was stored since it read; when either changed,
the rest is judged again on a fresh read (what is written stands: a metric is judged once).
The last write also opens the report's confirmation, clears the mark and moves the job to
``processed``: a client that sees ``processed`` sees every alert of the report.

A crash between the writes leaves the mark, and the job ``completed``: at startup the processor
takes the job again and, finding the metrics stored, judges the report again; a direct run's
report is judged again at startup (``judge_left_over``). Writing a verdict twice is harmless.
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
from benchrunner.server.processing.evaluation import judge_report, thresholds_to_judge
from benchrunner.server.processing.look_back import LookBackLater
from benchrunner.server.processing.verdicts import Verdict, Verdicts, verdicts_write
from benchrunner.server.store import history, jobs, judgings, reports, thresholds
from benchrunner.server.store.engine import Database

log = logging.getLogger(__name__)

WRITE_ROWS = 250
"""Rows (boundaries; an alert counts ``verdicts.ALERT_ROWS``) one write transaction of a
judgment writes at most, by default (the server's ``judgment_write_rows``): on SQLite a few
milliseconds of the single writer (``benchmarks/reports_scale.py`` prints the longest)."""

REREADS = 2
"""How often a judgment whose history changed under it is read again; after that it is
written as judged (a report stored meanwhile is judged against this one by its own)."""


@dataclass(frozen=True)
class Judging:
    """What judging a report needs beside its stored metrics, kept in ``report.judging`` while
    its judgment is under way."""

    report_id: int
    noisy: bool = False
    """The noise guard found the run noisy: only thresholds with ``alert_when_noisy`` alert."""
    confirming: bool = False
    """A runner job's report: thresholds with confirmation runs hold their alerts back."""
    never_alerts: tuple[int, ...] = ()
    """The positions, in the order they were stored, of the metrics that never alert."""

    def encoded(self) -> str:
        return json.dumps(
            {
                "noisy": self.noisy,
                "confirming": self.confirming,
                "never_alerts": list(self.never_alerts),
            }
        )

    @classmethod
    def decoded(cls, report_id: int, text: str) -> Judging:
        data = json.loads(text)
        return cls(
            report_id,
            bool(data["noisy"]),
            bool(data["confirming"]),
            tuple(int(i) for i in data["never_alerts"]),
        )


def never_alert_positions(values: Sequence[reports.MetricValue]) -> tuple[int, ...]:
    """The positions of the values whose result was named with an ignore suffix."""
    return tuple(i for i, v in enumerate(values) if reports.without_ignore_suffix(v.benchmark)[1])


@dataclass(frozen=True)
class JudgmentDue:
    """A report whose metrics are stored and whose judgment is to be written."""

    judging: Judging
    job: jobs.JobRow | None = None
    """Its runner job (None: a direct run)."""
    processed: Move | None = None
    """The job's move to ``processed``, made by the judgment's last write."""


@dataclass(frozen=True)
class Plan:
    """A report's judgment as read: its verdicts, and what must still hold to write them."""

    judging: Judging
    metrics: list[reports.StoredMetric]
    found: list[Any]
    verdicts: Verdicts
    models: dict[int, int]
    """Each judging threshold's model."""
    scope: history.Scope
    mark: judgings.HistoryMark
    reads: history.SeriesReads


def judgment_plan(conn: Connection, judging: Judging, job: jobs.JobRow | None) -> Plan:
    """The report's judgment: reads only. A failure of the judgment itself is logged and
    judges nothing (the report keeps its metrics unjudged), so its job still ends
    ``processed``."""
    mark = judgings.history_mark(conn)  # before the history: what comes after it is news
    report_id = judging.report_id
    metrics = judgings.stored_metrics(conn, report_id, judging.never_alerts)
    found = thresholds_to_judge(conn, report_id, metrics)
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
    scope = history.scope_of(reports.report_row(conn, report_id))
    models = {t.threshold_id: t.id for t in found}
    return Plan(judging, metrics, found, verdicts, models, scope, mark, reads)


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
    does not."""
    if check and _stale(conn, plan):
        return None
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


def _stale(conn: Connection, plan: Plan) -> bool:
    threshold_ids = sorted(plan.models)
    thresholds.lock_thresholds(conn, threshold_ids)  # one judgment's check and write at a time
    current = thresholds.current_models(conn, threshold_ids)
    for threshold_id, model_id in plan.models.items():
        row = current.get(threshold_id)
        if row is None or row.id != model_id:
            return True
    measure_ids = [t.measure_id for t in plan.found]
    return judgings.history_moved(conn, plan.scope, measure_ids, plan.mark)


@dataclass(frozen=True)
class Judged:
    """A judgment written."""

    processed: Move | None
    """The job's move to ``processed``, made (for ``Moves.done``)."""
    confirming: bool
    raised: int
    look_back: LookBackLater
    """The report's look-back, to run next (``look_back.look_back_later``)."""


async def judge_apart(
    db: Database,
    due: JudgmentDue,
    clock: Callable[[], dt.datetime],
    *,
    rows: int = WRITE_ROWS,
) -> Judged:
    """Judge ``due``'s report on a reader and write its verdicts ``rows`` rows a transaction
    (the module's docstring). Raises what a write raises: the report's mark stays, and it is
    judged again later."""
    judging = due.judging
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
        try:
            await judge_apart(db, JudgmentDue(Judging.decoded(report_id, text)), clock, rows=rows)
        except Exception:
            log.exception("judging report %s again failed", report_id)
    return len(report_ids)


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
    written = judgment_write(conn, plan, plan.verdicts.items, now, due, check=False)
    assert written is not None
    later = LookBackLater(
        judging.report_id, tuple(plan.metrics), judging.noisy, plan.found, plan.reads
    )
    return written, later
