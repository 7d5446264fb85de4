"""An alert held back while its confirmation runs re-measure (status ``pending``) is decided by
them alone: neither the API nor the console changes its status or verdict meanwhile, so it
never reaches a webhook or a triage before it is raised (docs/how-to/thresholds-alerts.md).

The server runs in this process; the alert is put in the state a confirmation leaves it in
while its re-runs are queued, which a real runner would leave only for a moment."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.tables import alert
from tests.inprocess import serve_in_process
from tests.system.test_bisect_alerts import HASHES, Bench


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    url = f"sqlite:///{tmp_path / 'benchrunner.db'}"
    with serve_in_process(tmp_path, url) as server:
        project = Bench(server)
        try:
            yield project
        finally:
            project.http.close()


def _hold_back(database: Path, alert_uuid: str) -> None:
    engine = make_engine(f"sqlite:///{database}")
    try:
        with engine.begin() as conn:
            held = conn.execute(
                alert.update().where(alert.c.uuid == sa.bindparam("u")).values(status="pending"),
                {"u": uuid.UUID(alert_uuid)},
            )
            assert held.rowcount == 1
    finally:
        engine.dispose()


def test_a_held_back_alert_refuses_a_change_of_status_or_verdict(
    bench: Bench, tmp_path: Path
) -> None:
    bench.run(10, HASHES[0])
    [raised] = bench.run(5000, HASHES[1])["alerts"]
    _hold_back(tmp_path / "benchrunner.db", raised["uuid"])
    path = f"/v0/projects/bench/alerts/{raised['uuid']}"
    for change in ({"status": "dismissed"}, {"status": "active"}, {"verdict": "false_positive"}):
        answer = bench.http.patch(path, json=change)
        assert answer.status_code == 409, (change, answer.text)
        assert "confirmation runs" in answer.json()["message"]
    shown = bench.http.get(path).json()
    assert (shown["status"], shown["verdict"]) == ("pending", None)
