"""A direct run's report a stop left awaiting its judgment (``store.pending_judgments``),
judged by recovery: its results kept on the report are stored where the report lacks them
(``metric_parts``) and judged by ``judgment.judge_later``, as its request would have
(docs/decisions/processing.md). A metric keeps the boundary and alert it has, so nothing is
written twice."""

from __future__ import annotations

import asyncio
import datetime as dt

from benchrunner.server.processing.judgment import Judged, JudgmentLater, judge_later
from benchrunner.server.store import pending_judgments
from benchrunner.server.store.engine import Database


async def judge_awaiting(db: Database, report_id: int, now: dt.datetime) -> Judged | None:
    """Judge the report if it still awaits its judgment (None: it does not)."""
    found = await db.read(pending_judgments.awaiting, report_id)
    if found is None:
        return None
    values = await asyncio.to_thread(pending_judgments.decode, found.direct_results)
    later = JudgmentLater(
        report_id, (), noisy=False, rest=tuple(values), project_id=int(found.project_id)
    )
    return await judge_later(db, later, now)
