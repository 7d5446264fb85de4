"""Several replicas on one database: migrations run once while the others wait, and a replica
older than the database's schema refuses to start, saying why."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory

from benchrunner import __version__
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.migrate import MIGRATIONS, SchemaTooNew, upgrade
from tests.databases import fresh_database

FUTURE = "9999_from_a_newer_benchrunner"


def _migrated_by_a_newer_version(url: str) -> None:
    engine = make_engine(url)
    upgrade(engine)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = :v"), {"v": FUTURE})
    engine.dispose()


def test_an_older_replica_refuses_a_newer_schema(database_url: str) -> None:
    _migrated_by_a_newer_version(database_url)
    engine = make_engine(database_url)
    with pytest.raises(SchemaTooNew, match=f"revision {FUTURE}, newer than benchrunner"):
        upgrade(engine)
    with engine.connect() as conn:  # nothing was touched
        version = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
    engine.dispose()
    assert version == FUTURE


def test_the_server_stops_at_its_start_with_the_reason(database_url: str, tmp_path: Path) -> None:
    _migrated_by_a_newer_version(database_url)
    started = subprocess.run(
        [
            *(sys.executable, "-m", "benchrunner", "server", "--port", "0"),
            *("--db", database_url, "--data-dir", str(tmp_path / "data")),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    # Refused before it listens, on one line, without a traceback.
    assert started.returncode == 1, started.stderr
    assert "Traceback" not in started.stderr, started.stderr
    head = ScriptDirectory(str(MIGRATIONS)).get_current_head()
    assert started.stderr.strip().splitlines()[-1] == (
        f"error: the database's schema is at revision {FUTURE}, newer than benchrunner "
        f"{__version__} knows (its newest is {head}): a newer benchrunner migrated it; run that "
        "version (or newer) on this replica too"
    )


@pytest.mark.postgresql
def test_replicas_starting_together_migrate_once(tmp_path: Path) -> None:
    with fresh_database("postgresql", tmp_path) as url:
        engines = [make_engine(url) for _ in range(3)]
        failures: list[BaseException] = []
        barrier = threading.Barrier(len(engines))

        def start(engine: sa.Engine) -> None:
            barrier.wait()
            try:
                upgrade(engine)
            except BaseException as exc:  # collected for the assertion below
                failures.append(exc)

        threads = [threading.Thread(target=start, args=(e,)) for e in engines]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        for engine in engines:
            engine.dispose()
        assert failures == []
