"""A direct run's report judged after its request's write committed and before its answer
(docs/decisions/processing.md): never in the request's write
transaction, so on SQLite its reads never hold the single writer. The report awaits its
judgment meanwhile, its results kept (``store.pending_judgments``): a stop before the judgment's
last write leaves it to recovery (``processing.pending_judgment``), and so does a judgment that
failed (or could not store the rest of its metrics), handed to recovery at once, whose
judgment the request waits for a while (``RECOVERY_WAIT_SECONDS``)."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

from benchrunner.server.context import ServerContext
from benchrunner.server.http.answers import BuiltJson
from benchrunner.server.processing.judgment import JudgmentLater, judge_later
from benchrunner.server.store.unavailable import database_unavailable, described
from benchrunner.server.views.report_json import new_report_view

log = logging.getLogger(__name__)

RECOVERY_WAIT_SECONDS = 10.0
"""How long a request whose judgment did not end waits for recovery's (a database busy for a
moment): then its answer is the judged report, else the report as stored, marked
``"judgment": "pending"`` (docs/decisions/processing.md)."""


async def judge_direct(
    ctx: ServerContext,
    later: JudgmentLater,
    now: dt.datetime,
    *,
    stored: BuiltJson,
    recover: Callable[[int], asyncio.Future[bool]],
) -> BuiltJson:
    """A direct run's report judged as a runner job's is (``judgment.judge_later``: the rest
    of its metrics stored in short parts on SQLite, read and drawn off SQLite's writer,
    written in short parts, then looked back on), after its first part committed, so that its
    answer, read then, carries all its metrics and its alerts
    (docs/decisions/processing.md). Shielded: a request cancelled meanwhile leaves it to
    finish.

    The run is stored once its request's write committed, so what follows never fails the
    request (a client retries a failed one, and would store the run twice): a judgment that did
    not end (it raised, or the database cut it short, or the storing of the rest of the metrics
    failed) is handed to recovery (``recover``: the
    processor's queue of reports awaiting their judgment, which returns the end of its judgment
    there), which stores the metrics missing and judges them. The request waits for that
    judgment up to ``RECOVERY_WAIT_SECONDS`` (``ctx.monotonic``); the answer is then the report
    as stored, read back: judged, or, still awaiting its judgment, with the metrics and alerts
    written so far and ``"judgment": "pending"`` (the report's row says so:
    ``views.report_json``). Should that read fail too, the answer is ``stored``: the report as
    its request's write left it, without its metrics, marked pending as well."""
    report_id = later.report_id
    ended = False
    try:
        judged = await asyncio.shield(asyncio.ensure_future(judge_later(ctx.db, later, now)))
        ended = judged.ended
    except Exception as exc:
        _log_failure(f"judging report {report_id} failed; recovery judges it", exc)
    if not ended:
        await _wait_for_recovery(ctx, recover(report_id))
    try:
        return await ctx.db.read(new_report_view, report_id, None, with_metrics=True)
    except Exception as exc:
        _log_failure(f"reading report {report_id} back failed; answered as stored", exc)
        return stored


async def _wait_for_recovery(ctx: ServerContext, ends: asyncio.Future[bool]) -> None:
    """Until recovery's judgment ``ends`` or ``RECOVERY_WAIT_SECONDS`` pass."""
    deadline = ctx.monotonic.monotonic() + RECOVERY_WAIT_SECONDS
    timer: asyncio.Future[Any] = asyncio.ensure_future(ctx.monotonic.sleep_until(deadline))
    ended = asyncio.shield(ends)
    try:
        await asyncio.wait((ended, timer), return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()
        ended.cancel()  # the shield's outer future, not ``ends``


def _log_failure(what: str, exc: Exception) -> None:
    """The database's failure as a warning, without its statement or parameters; any other
    (a bug) as an error, with its traceback."""
    if database_unavailable(exc):
        log.warning("%s: %s", what, described(exc))
    else:
        log.error("%s", what, exc_info=exc)
