"""A direct ``POST /v0/run`` whose thresholds judge its metrics (docs/decisions/processing.md):
its report and metrics commit in the request's write transaction, and its judgment writes the
boundaries and alerts in write transactions of their own after that commit, before the answer,
which carries the alert. Both engines, a real server in this process (its write engine's
transactions observed)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.databases import fresh_database
from tests.inprocess import serve_in_process

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
TIGHT = {"test": "percentage", "upper_boundary": 0.1, "min_sample_size": 3}


class Commits:
    """The rows of ``metric`` and ``boundary`` as each write transaction on ``engine`` is
    about to commit, read in it (some statements run straight on the driver's cursor)."""

    def __init__(self, engine: sa.Engine) -> None:
        self.seen: list[tuple[int, int]] = []
        sa.event.listen(engine, "commit", self._commit)

    def _commit(self, conn: sa.Connection) -> None:
        counted = conn.exec_driver_sql(
            "SELECT (SELECT count(*) FROM metric), (SELECT count(*) FROM boundary)"
        ).one()
        self.seen.append((int(counted[0]), int(counted[1])))


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_a_direct_run_is_judged_after_its_store_commits_and_answers_with_its_alert(
    engine: str, tmp_path: Path
) -> None:
    with (
        fresh_database(engine, tmp_path) as url,
        serve_in_process(tmp_path, url) as server,
        httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {server.token}"}, timeout=30
        ) as http,
    ):

        def run(minute: int, value: float, **body: Any) -> dict[str, Any]:
            at = (T0 + dt.timedelta(minutes=minute)).isoformat()
            answer = http.post(
                "/v0/run",
                json={
                    "project": "bench",
                    "branch": "main",
                    "testbed": "ci",
                    "start_time": at,
                    "end_time": at,
                    "settings": {"adapter": "json"},
                    "results": [json.dumps({"b": {"latency": {"value": value}}})],
                    **body,
                },
            )
            assert answer.status_code == 201, answer.text
            found: dict[str, Any] = answer.json()
            return found

        run(0, 100.0, thresholds={"models": {"latency": TIGHT}})
        for minute in range(1, 6):
            assert run(minute, 100.0)["alerts"] == []
        commits = Commits(server.state("ctx").db.write_engine)
        answer = run(6, 130.0)
        [alert] = answer["alerts"]
        assert alert["limit"] == "upper"
        # 6 metrics and boundaries before; the 7th metric commits without its boundary
        states = [state for state in commits.seen if state != (6, 6)]
        assert states[0] == (7, 6) and states[-1] == (7, 7), commits.seen
