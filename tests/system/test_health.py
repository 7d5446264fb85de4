"""``GET /v0/server/health`` tells the replica's real state, and answers 503 once the database
is gone: a PostgreSQL database dropped with its connections, a SQLite file moved away."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql

from benchrunner import __version__
from tests.databases import POSTGRES_ADMIN_URL, postgres_database
from tests.harness import RawChannel, ServerProcess, deploy, wait_until
from tests.metrics_scrape import scrape


def _health(server: ServerProcess) -> tuple[int, dict[str, Any]]:
    response = httpx.get(f"{server.url}/v0/server/health", timeout=30)
    return response.status_code, response.json()


def test_health_reports_the_replicas_state(tmp_path: Path, database_url: str) -> None:
    with deploy(tmp_path, database_url) as deployment:
        deployment.submit("bench.noop")
        deployment.submit("bench.noop")
        channel = deployment.channel("raw")
        channel.claim()
        code, body = _health(deployment.server)
    assert code == 200, body
    assert body["status"] == "ok" and body["version"] == __version__
    assert body["database_reachable"] is True
    if database_url.startswith("postgresql"):
        assert body["engine"] == "postgresql" and body["listen_connected"] is True
    else:
        assert body["engine"] == "sqlite" and body["listen_connected"] is None
    assert body["queue"] == {"pending": 1, "claimed": 1, "running": 0, "completed": 0}
    assert body["connected_runners"] == 1
    assert body["sweeper_leader"] is True


def _unavailable(server: ServerProcess) -> dict[str, Any] | None:
    code, body = _health(server)
    return body if code == 503 else None


@pytest.mark.postgresql
def test_health_is_503_once_the_postgresql_database_is_dropped(tmp_path: Path) -> None:
    with postgres_database() as url, deploy(tmp_path, url) as deployment:
        assert _health(deployment.server)[0] == 200
        name = url.rsplit("/", 1)[-1]
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
        body = wait_until(lambda: _unavailable(deployment.server), message="health to say 503")
        assert body["status"] == "unavailable" and body["database_reachable"] is False
        assert body["queue"] is None
        wait_until(lambda: _health(deployment.server)[1]["listen_connected"] is False)
        assert scrape(deployment.server.url).value("benchrunner_database_up") == 0
        assert deployment.server.proc is not None and deployment.server.proc.poll() is None


def test_health_is_503_while_the_sqlite_file_is_gone(tmp_path: Path) -> None:
    database = tmp_path / "bench.db"
    with deploy(tmp_path, f"sqlite:///{database}") as deployment:
        channel = RawChannel(deployment.server, *deployment.new_runner("raw"))
        assert _health(deployment.server)[0] == 200
        moved = database.rename(tmp_path / "moved.db")
        body = wait_until(lambda: _unavailable(deployment.server), message="health to say 503")
        assert body["database_reachable"] is False and body["connected_runners"] == 1
        moved.rename(database)
        assert _health(deployment.server)[0] == 200
        channel.close()
