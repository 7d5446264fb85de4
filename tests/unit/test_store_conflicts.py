"""Get-or-create and slugged creates racing from two replicas on PostgreSQL
(docs/decisions/replicas.md).

Each test holds one transaction open after its create ("replica A"), starts the same create
on another engine ("replica B") in a thread, waits until PostgreSQL shows B blocked on A's row,
then commits A. Check-then-insert fails here every time (B saw no row, then its insert violates
the unique constraint); ``INSERT … ON CONFLICT DO NOTHING`` waits for A and yields A's row, or
for a slug, a suffixed one. SQLite serializes writers, so the race needs PostgreSQL.
"""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from benchrunner.core.tiers import Plan
from benchrunner.detection.models import Model, TestKind
from benchrunner.server.store import accounts, reports, runners, thresholds
from benchrunner.server.store.conflicts import insert_with_slug
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.tables import (
    benchmark,
    branch,
    measure,
    model,
    organization,
    project,
    runner,
    runner_spec,
    spec,
    testbed,
    threshold,
    user,
)
from tests.databases import postgres_database, with_schema
from tests.harness import wait_until
from tests.new_reports import new_report_on

pytestmark = pytest.mark.postgresql

T = TypeVar("T")
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


class Replicas:
    def __init__(self, url: str) -> None:
        self.a = make_engine(url)
        self.b = make_engine(url)
        self.watch = make_engine(url)

    def close(self) -> None:
        for engine in (self.a, self.b, self.watch):
            engine.dispose()

    def setup(self, unit: Callable[[Connection], T]) -> T:
        with self.a.begin() as conn:
            return unit(conn)

    def race(self, unit: Callable[[Connection], T]) -> tuple[T, T]:
        """``unit`` on A (left uncommitted), then on B (which must wait for A), then A commits;
        both results, or the error B met."""
        outcome: dict[str, Any] = {}

        def on_b() -> None:
            try:
                with self.b.begin() as conn:
                    outcome["b"] = unit(conn)
            except BaseException as exc:  # reported by the assertion below
                outcome["error"] = exc

        with self.a.connect() as conn_a:
            transaction = conn_a.begin()
            first = unit(conn_a)
            thread = threading.Thread(target=on_b)
            thread.start()
            wait_until(self._someone_waits, timeout=30, message="replica B waiting on A's row")
            transaction.commit()
        thread.join(timeout=30)
        assert not thread.is_alive()
        assert "error" not in outcome, outcome["error"]
        return first, outcome["b"]

    def _someone_waits(self) -> bool:
        with self.watch.connect() as conn:
            waiting = conn.execute(
                sa.text(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND wait_event_type = 'Lock'"
                )
            ).scalar_one()
        return bool(waiting)

    def count(self, table: sa.Table, *where: sa.ColumnElement[bool]) -> int:
        with self.watch.connect() as conn:
            return int(
                conn.execute(
                    sa.select(sa.func.count()).select_from(table).where(*where)
                ).scalar_one()
            )


@pytest.fixture
def replicas() -> Iterator[Replicas]:
    with postgres_database() as url:
        with_schema(url)
        engine: Engine = make_engine(url)
        engine.dispose()
        both = Replicas(url)
        yield both
        both.close()


@pytest.fixture
def project_id(replicas: Replicas) -> int:
    def unit(conn: Connection) -> int:
        org = accounts.organization_create(conn, "acme", Plan.TEAM, NOW, leader_id=None)
        return accounts.project_create(conn, org.id, "bench", "public", NOW).id

    return replicas.setup(unit)


@pytest.mark.parametrize("table", [branch, testbed, benchmark, measure], ids=lambda t: t.name)
def test_a_name_created_by_two_replicas_at_once_is_one_row(
    replicas: Replicas, project_id: int, table: sa.Table
) -> None:
    first, second = replicas.race(
        lambda conn: reports.named_get_or_create(conn, table, project_id, "main", NOW)
    )
    assert first == second
    assert replicas.count(table, table.c.name == "main") == 1


def test_metrics_naming_the_same_new_benchmarks_from_two_replicas(
    replicas: Replicas, project_id: int
) -> None:
    def unit(conn: Connection) -> int:
        report_id, _ = reports.report_create(
            conn, new_report_on(conn, project_id, "main", "ci", "json", NOW)
        )
        values = [
            reports.MetricValue(0, name, measure_name, 1.0, None, None)
            for name in ("b3", "b1", "b2")
            for measure_name in ("latency", "throughput")
        ]
        reports.metrics_add(conn, report_id, project_id, values, NOW)
        return report_id

    first, second = replicas.race(unit)
    assert first != second
    assert replicas.count(benchmark) == 3 and replicas.count(measure) == 2
    assert replicas.count(branch) == 1 and replicas.count(testbed) == 1


def _organization(conn: Connection) -> str:
    return accounts.organization_create(conn, "Race", Plan.FREE, NOW, leader_id=None).slug


def _project(conn: Connection) -> str:
    org = accounts.organization_get(conn, "acme")
    assert org is not None
    return accounts.project_create(conn, org.id, "Race", "private", NOW).slug


def _runner(conn: Connection) -> str:
    return runners.runner_create(conn, "Race", "token", NOW).slug


def _spec(conn: Connection) -> str:
    row = runners.spec_create(conn, runners.NewSpec("Race", "x86_64", 1, 1, 1, False), NOW)
    return str(row.slug)


SLUGGED = [(organization, _organization), (project, _project), (runner, _runner), (spec, _spec)]


@pytest.mark.parametrize(("table", "create"), SLUGGED, ids=lambda v: getattr(v, "name", ""))
def test_a_slug_taken_by_a_concurrent_create_gets_a_suffix(
    replicas: Replicas, project_id: int, table: sa.Table, create: Callable[[Connection], str]
) -> None:
    first, second = replicas.race(create)
    assert first == "race"
    assert second.startswith("race-") and len(second) == len("race-") + 8
    assert replicas.count(table, table.c.name == "Race") == 2


def test_a_user_created_by_two_replicas_at_once_is_one_user(replicas: Replicas) -> None:
    first, second = replicas.race(
        lambda conn: accounts.user_get_or_create(conn, "a@test.dev", "a", admin=True, now=NOW)
    )
    assert first == second
    assert replicas.count(user) == 1


def test_a_spec_attached_by_two_replicas_at_once_is_attached_once(replicas: Replicas) -> None:
    def unit(conn: Connection) -> tuple[int, int]:
        created = runners.runner_create(conn, "r", "token", NOW)
        return created.id, runners.spec_create(
            conn, runners.NewSpec("s", "x86_64", 1, 1, 1, False), NOW
        ).id

    runner_id, spec_id = replicas.setup(unit)
    first, second = replicas.race(lambda conn: runners.runner_spec_add(conn, runner_id, spec_id))
    assert (first, second) == (True, False)
    assert replicas.count(runner_spec) == 1


def test_an_exact_slug_that_is_taken_gives_none(replicas: Replicas) -> None:
    def unit(conn: Connection) -> tuple[int | None, int | None]:
        def values() -> dict[str, Any]:
            return {
                "uuid": uuid.uuid4(),
                "name": "x",
                "plan": "free",
                "created": NOW,
                "modified": NOW,
            }

        first = insert_with_slug(conn, organization, values(), "x")
        again = insert_with_slug(conn, organization, values(), "x", exact=True)
        return first, again

    first, again = replicas.setup(unit)
    assert first is not None and again is None


def test_two_replicas_renaming_to_one_slug_leave_one_holder(replicas: Replicas) -> None:
    def unit(conn: Connection) -> tuple[int, int]:
        first = runners.runner_create(conn, "one", "token", NOW)
        return first.id, runners.runner_create(conn, "two", "token", NOW).id

    ids = iter(replicas.setup(unit))

    def rename(conn: Connection) -> str | None:
        renamed = runners.runner_update(conn, next(ids), {"slug": "wanted", "modified": NOW})
        return None if renamed is None else renamed.slug

    first, second = replicas.race(rename)
    assert (first, second) == ("wanted", None)
    assert replicas.count(runner, runner.c.slug == "wanted") == 1


def test_one_threshold_from_two_replicas_with_their_models_in_turn(
    replicas: Replicas, project_id: int
) -> None:
    def series(conn: Connection) -> thresholds.SeriesKey:
        return thresholds.SeriesKey(
            reports.named_get_or_create(conn, branch, project_id, "main", NOW),
            reports.named_get_or_create(conn, testbed, project_id, "ci", NOW),
            reports.measure_ids(conn, project_id, ["latency"], NOW)["latency"],
        )

    key = replicas.setup(series)
    models = iter(
        [Model(TestKind.STATIC, upper_boundary=1.0), Model(TestKind.STATIC, upper_boundary=2.0)]
    )

    def put(conn: Connection) -> tuple[int, bool]:
        return thresholds.threshold_put(conn, project_id, key, next(models), NOW)

    (first, created), (second, again) = replicas.race(put)
    assert first == second and (created, again) == (True, False)
    assert replicas.count(threshold) == 1
    assert replicas.count(model) == 2 and replicas.count(model, model.c.replaced.is_(None)) == 1
    assert replicas.count(model, model.c.upper_boundary == 2.0, model.c.replaced.is_(None)) == 1
