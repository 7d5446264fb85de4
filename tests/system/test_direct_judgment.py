"""A direct ``POST /v0/run`` whose thresholds judge its metrics (docs/decisions/processing.md):
its report and first part of metrics commit in the request's write transaction, the rest of
them (on SQLite) and its judgment's boundaries and alerts in write transactions of their own
after that commit, before the answer, which carries every metric and the alert. A stop before
the judgment's last write leaves the report awaiting its judgment, its results kept, and the
next server's processor stores what is missing and judges it, raising no alert twice; a
judgment that fails after that commit is answered with the report as stored and finished by
the same server's processor. Both
engines, a real server in this process (its write engine's transactions observed)."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from benchrunner.server.processing import judgment, metric_parts, processor
from benchrunner.server.processing.evaluation import judge_report
from benchrunner.server.processing.metric_parts import METRIC_PART
from benchrunner.server.processing.pending_judgment import judge_awaiting
from benchrunner.server.store.tables import alert, metric, report
from benchrunner.server.submission import direct_judgment
from benchrunner.server.views.report_json import new_report_view
from tests.database_errors import postgresql_refused, sqlite_busy, wrapped
from tests.databases import fresh_database
from tests.harness import cli, wait_until
from tests.inprocess import InProcessServer, serve_in_process

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
        _signed_in(server, timeout=30) as http,
    ):

        def run(minute: int, value: float, **body: Any) -> dict[str, Any]:
            results = [json.dumps({"b": {"latency": {"value": value}}})]
            answer = _post_results(http, minute, results, **body)
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


BENCHMARKS = 3 * METRIC_PART
"""More metrics than one part: stored in three writes on SQLite."""


def _signed_in(server: InProcessServer, timeout: float = 60) -> httpx.Client:
    """A client of ``server`` signed in as its admin."""
    return httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {server.token}"}, timeout=timeout
    )


def _results(value_of_first: float) -> list[str]:
    """One iteration of ``BENCHMARKS`` benchmarks at 100, the first at ``value_of_first``."""
    values = {f"b{k:03}": {"latency": {"value": 100.0}} for k in range(BENCHMARKS)}
    values["b000"]["latency"]["value"] = value_of_first
    return [json.dumps(values)]


def _post(http: httpx.Client, minute: int, value_of_first: float, **body: Any) -> httpx.Response:
    return _post_results(http, minute, _results(value_of_first), **body)


def _post_results(
    http: httpx.Client, minute: int, results: list[str], **body: Any
) -> httpx.Response:
    at = (T0 + dt.timedelta(minutes=minute)).isoformat()
    return http.post(
        "/v0/run",
        json={
            "project": "bench",
            "branch": "main",
            "testbed": "ci",
            "start_time": at,
            "end_time": at,
            "settings": {"adapter": "json"},
            "results": results,
            **body,
        },
    )


def _history(http: httpx.Client) -> None:
    """Four judged runs of every benchmark at 100, under a tight threshold."""
    first = _post(http, 0, 100.0, thresholds={"models": {"latency": TIGHT}})
    assert first.status_code == 201, first.text
    for minute in range(1, 4):
        answer = _post(http, minute, 100.0)
        assert answer.status_code == 201, answer.text
        assert answer.json()["alerts"] == []


def _answered_metrics(answer: dict[str, Any]) -> int:
    return sum(len(result["measures"]) for iteration in answer["results"] for result in iteration)


@dataclass(frozen=True)
class Stored:
    """What the database holds of one report."""

    metrics: int
    distinct: int
    alerts: int
    awaiting: bool


def _stored(url: str, report_uuid: str) -> Stored:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            found = conn.execute(
                sa.select(report.c.id, report.c.direct_results).where(
                    report.c.uuid == uuid.UUID(report_uuid)
                )
            ).one()
            keys = conn.execute(
                sa.select(metric.c.benchmark_id, metric.c.measure_id, metric.c.iteration).where(
                    metric.c.report_id == found.id
                )
            ).all()
            raised = conn.execute(
                sa.select(sa.func.count()).where(alert.c.report_id == found.id)
            ).scalar_one()
    finally:
        engine.dispose()
    return Stored(len(keys), len(set(keys)), int(raised), found.direct_results is not None)


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_a_large_direct_run_is_stored_in_parts_and_answers_with_every_metric_and_its_alert(
    engine: str, tmp_path: Path
) -> None:
    """docs/reference/thresholds.md, "Scale": on SQLite no write of a direct run stores more
    than ``METRIC_PART`` metrics; on PostgreSQL its metrics commit in one write. Its answer
    is the judged report, every metric and the alert."""
    with (
        fresh_database(engine, tmp_path) as url,
        serve_in_process(tmp_path, url) as server,
        _signed_in(server) as http,
    ):
        _history(http)
        before = 4 * BENCHMARKS
        commits = Commits(server.state("ctx").db.write_engine)
        answer = _post(http, 4, 130.0)
        assert answer.status_code == 201, answer.text
        found = answer.json()
        assert _answered_metrics(found) == BENCHMARKS
        [raised] = found["alerts"]
        assert raised["limit"] == "upper"
        counts = [before] + [metrics for metrics, _ in commits.seen]
        added = [b - a for a, b in itertools.pairwise(counts) if b != a]
        expected = [METRIC_PART] * 3 if engine == "sqlite" else [BENCHMARKS]
        assert added == expected, commits.seen
        stored = _stored(url, found["uuid"])
        assert stored == Stored(BENCHMARKS, BENCHMARKS, 1, awaiting=False)


class _Stopped(Exception):
    """The server stopped here: nothing after it in the judgment runs."""


@pytest.mark.parametrize(
    ("engine", "cut"),
    [
        ("sqlite", "between parts"),
        ("sqlite", "before the last write"),
        ("postgresql", "before the last write"),
    ],
)
def test_a_direct_run_whose_judgment_a_stop_cut_short_is_finished_by_the_next_server_once(
    engine: str, cut: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/decisions/processing.md: a direct run's report awaits its judgment, its results
    kept, until the judgment's last write. Cut short between its parts (the rest not stored)
    or before that last write (its alert raised), until the server stops, the answer is the
    report as stored, and the next server's processor stores the metrics missing, each once,
    and judges them, the alert raised once."""
    with fresh_database(engine, tmp_path) as url:
        with monkeypatch.context() as patched:
            if cut == "between parts":
                store_part = metric_parts._store_part

                def stopped_from_the_second(*args: Any) -> Any:
                    parts.append(len(args[2]))
                    if len(parts) >= 2:  # cut short by the database, as a stop leaves it
                        raise wrapped(sqlite_busy())
                    return store_part(*args)

                parts: list[int] = []
            else:

                def stopped(*_args: Any) -> Any:
                    raise _Stopped

            with (
                serve_in_process(tmp_path, url) as server,
                _signed_in(server) as http,
            ):
                _history(http)
                # patched until the server stopped: its processor's retry stops there too
                if cut == "between parts":
                    patched.setattr(metric_parts, "_store_part", stopped_from_the_second)
                else:
                    patched.setattr(judgment, "_judged", stopped)
                answer = _post(http, 4, 130.0)
        assert answer.status_code == 201, answer.text
        found = answer.json()
        report_uuid = found["uuid"]
        if cut == "between parts":
            assert parts[:2] == [METRIC_PART, METRIC_PART]
            # the first part with the report, the second's write stopped: nothing judged yet
            assert _answered_metrics(found) == 2 * METRIC_PART and found["alerts"] == []
            assert _stored(url, report_uuid) == Stored(2 * METRIC_PART, 2 * METRIC_PART, 0, True)
        else:
            assert _answered_metrics(found) == BENCHMARKS and len(found["alerts"]) == 1
            assert _stored(url, report_uuid) == Stored(BENCHMARKS, BENCHMARKS, 1, True)
        # recovery's judgment on this server was stopped as well: not judged yet, and said so
        assert found["judgment"] == "pending"
        with serve_in_process(tmp_path, url, setup=False):
            wait_until(
                lambda: not _stored(url, report_uuid).awaiting,
                timeout=30,
                message="the report judged by the next server",
            )
        assert _stored(url, report_uuid) == Stored(BENCHMARKS, BENCHMARKS, 1, False)


@pytest.mark.parametrize(
    ("engine", "cut"),
    [
        ("sqlite", "storing the rest"),
        ("sqlite", "judging"),
        ("postgresql", "judging"),
        ("sqlite", "the last write"),
        ("postgresql", "the last write"),
        ("sqlite", "reading it back"),
        ("postgresql", "reading it back"),
    ],
)
def test_a_direct_run_whose_judgment_fails_after_its_commit_is_answered_and_judged_later(
    engine: str, cut: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/decisions/processing.md: once its request's transaction committed, the run is
    stored and its request never fails (a client would retry it and store the run twice). The
    database failing for a moment while the rest of its metrics are stored, while it is judged
    or in the judgment's last write, the same server's processor, handed it at once, stores
    what is missing and judges it, without the sweeper (slowed here to an hour) or a restart,
    and the request, which waited for that, answers the judged report with its alert. Should
    even the read back fail, the answer is the report as its request's write left it, without
    its metrics, its judgment marked pending."""
    with (
        fresh_database(engine, tmp_path) as url,
        serve_in_process(tmp_path, url) as server,
        _signed_in(server) as http,
    ):
        _history(http)
        failed: list[str] = []

        def once(real: Any) -> Any:
            def failing_once(*args: Any, **kwargs: Any) -> Any:
                if not failed:
                    failed.append(cut)
                    raise wrapped(sqlite_busy() if engine == "sqlite" else postgresql_refused())
                return real(*args, **kwargs)

            return failing_once

        if cut == "storing the rest":
            monkeypatch.setattr(metric_parts, "_store_part", once(metric_parts._store_part))
        elif cut == "judging":
            monkeypatch.setattr(judgment, "judge_report", once(judge_report))
        elif cut == "the last write":
            monkeypatch.setattr(judgment, "_judged", once(judgment._judged))
        else:
            monkeypatch.setattr(direct_judgment, "new_report_view", once(new_report_view))
        answer = _post(http, 4, 130.0)
        assert failed == [cut]
        assert answer.status_code == 201, answer.text
        found = answer.json()
        if cut == "reading it back":  # judged, but answered as its request's write left it
            assert (_answered_metrics(found), len(found["alerts"])) == (0, 0)
            assert found["judgment"] == "pending"
        else:  # the request waited for recovery's judgment: the report judged, its alert
            assert (_answered_metrics(found), len(found["alerts"])) == (BENCHMARKS, 1)
            assert "judgment" not in found
        report_uuid = found["uuid"]
        wait_until(
            lambda: not _stored(url, report_uuid).awaiting,
            timeout=30,
            message="the report judged in the background",
        )
        assert _stored(url, report_uuid) == Stored(BENCHMARKS, BENCHMARKS, 1, False)
        again = http.get(f"/v0/projects/bench/reports/{report_uuid}")
        assert again.status_code == 200, again.text
        assert _answered_metrics(again.json()) == BENCHMARKS and len(again.json()["alerts"]) == 1


def _report_of_minute(url: str, minute: int) -> str:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            found = conn.execute(
                sa.select(report.c.uuid).where(
                    report.c.start_time == T0 + dt.timedelta(minutes=minute)
                )
            ).scalar_one()
    finally:
        engine.dispose()
    return str(found)


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_a_direct_run_whose_recovery_does_not_end_in_time_is_answered_pending_and_fails_err(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/decisions/processing.md: a judgment cut short by the database, and recovery's not
    ended after ``RECOVERY_WAIT_SECONDS`` (on the server's clock), the answer is the report as
    stored, marked ``"judgment": "pending"``; ``benchrunner run --err`` polls it for a while,
    then fails saying the judgment has not finished. Recovery then judges it, the mark gone."""
    with (
        fresh_database(engine, tmp_path) as url,
        serve_in_process(tmp_path, url) as server,
        _signed_in(server) as http,
    ):
        _history(http)
        failed: list[bool] = []

        def failing_once(*args: Any, **kwargs: Any) -> Any:
            if not failed:
                failed.append(True)
                raise wrapped(sqlite_busy() if engine == "sqlite" else postgresql_refused())
            return judge_report(*args, **kwargs)

        started, release = threading.Event(), threading.Event()
        real_recovery = judge_awaiting

        async def held_recovery(*args: Any) -> Any:
            started.set()
            await asyncio.to_thread(release.wait)
            return await real_recovery(*args)

        monkeypatch.setattr(judgment, "judge_report", failing_once)
        monkeypatch.setattr(processor, "judge_awaiting", held_recovery)
        results = tmp_path / "results.json"
        results.write_text(_results(130.0)[0])
        env = {
            "BENCHRUNNER_HOST": server.url,
            "BENCHRUNNER_TOKEN": server.token,
            "BENCHRUNNER_PROJECT": "bench",
            "BENCHRUNNER_CONFIG": str(tmp_path / "no-config.toml"),
        }
        argv = ("run", "--branch", "main", "--testbed", "ci", "--adapter", "json", "--no-context")
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(
                cli,
                *argv,
                "--results",
                str(results),
                "--err",
                "--json",
                "--wait-timeout",
                "2",
                env=env,
                check=False,
            )
            wait_until(started.is_set, timeout=30, message="recovery's judgment started")
            server.clock.advance(direct_judgment.RECOVERY_WAIT_SECONDS)
            result = running.result(timeout=60)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "has not finished" in result.stderr, result.stderr
        shown = json.loads(result.stdout)
        assert shown["judgment"] == "pending" and shown["alerts"] == []
        release.set()
        report_uuid = shown["uuid"]
        wait_until(
            lambda: not _stored(url, report_uuid).awaiting,
            timeout=30,
            message="the report judged by recovery",
        )
        again = http.get(f"/v0/projects/bench/reports/{report_uuid}").json()
        assert "judgment" not in again and len(again["alerts"]) == 1
