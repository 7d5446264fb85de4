"""A direct run's report judged after its request's write committed and before its answer
(docs/decisions/processing.md): never in the request's write
transaction, so on SQLite its reads never hold the single writer. The report awaits its
judgment meanwhile, its results kept (``store.pending_judgments``): a stop before the judgment's
last write leaves it to recovery (``processing.pending_judgment``)."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

from benchrunner.server.context import ServerContext
from benchrunner.server.processing.judgment import JudgmentLater, judge_later
from benchrunner.server.views.resources import new_report_view


async def judge_direct(
    ctx: ServerContext, later: JudgmentLater, now: dt.datetime
) -> dict[str, Any]:
    """A direct run's report judged as a runner job's is (``judgment.judge_later``: the rest
    of its metrics stored in short parts on SQLite, read and drawn off SQLite's writer,
    written in short parts, then looked back on), after its first part committed, so that its
    answer, read then, carries all its metrics and its alerts
    (docs/decisions/processing.md). Shielded: a request cancelled meanwhile leaves it to
    finish."""
    await asyncio.shield(asyncio.ensure_future(judge_later(ctx.db, later, now)))
    return await ctx.db.read(new_report_view, later.report_id, None, with_metrics=True)
