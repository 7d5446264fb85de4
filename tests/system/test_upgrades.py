"""Upgrades with several replicas on one PostgreSQL database (docs/how-to/deploy.md):
replicas started together migrate once while the others wait; a rolling upgrade of two
replicas, one after the other, keeps serving the runners and loses no job.

The "new version" of the rolling upgrade is this source tree copied aside with one more Alembic
revision (an additive one: a nullable column on ``job``) and a version string of its own, run
from the copy with ``PYTHONPATH``: the same code otherwise, so what the test proves is the
upgrade's mechanics (the migration under the lock while an older replica serves, the older
replica refused at its next start, the runners moving between replicas), not the compatibility
of any particular future schema change.
"""

from __future__ import annotations

import collections
import concurrent.futures
import json
import os
import re
import shutil
import signal
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory

from benchrunner import __version__
from benchrunner.api.server import Health
from benchrunner.client import ApiError
from benchrunner.core.states import JobStatus
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.migrate import MIGRATION_LOCK, MIGRATIONS
from benchrunner.server.store.tables import job
from benchrunner.server.store.tables import runner as runner_table
from tests.databases import postgres_database
from tests.harness import (
    PROCESS_START_TIMEOUT,
    REPO,
    TEST_TEMPLATES,
    Deployment,
    RunnerProcess,
    ServerProcess,
    cli,
    deploy,
    wait_progressing,
    wait_until,
)

pytestmark = [pytest.mark.system, pytest.mark.postgresql]

NEW_VERSION = f"{__version__}+rolling.upgrade"
NEW_REVISION = "rolling_upgrade_test"
RUNNERS = 4
JOB_MS = 300
"""How long each job runs: long enough to be caught running when a replica is stopped."""


def current_head() -> str:
    head = ScriptDirectory(str(MIGRATIONS)).get_current_head()
    assert head is not None
    return head


def revision_count() -> int:
    return sum(1 for _ in ScriptDirectory(str(MIGRATIONS)).walk_revisions())


def _rows(db_url: str, query: sa.Executable) -> list[tuple[Any, ...]]:
    engine = make_engine(db_url, writer=False)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(query)]
    finally:
        engine.dispose()


def schema_revisions(db_url: str) -> list[str]:
    return [
        str(row[0]) for row in _rows(db_url, sa.text("SELECT version_num FROM alembic_version"))
    ]


def upgrades_logged(server: ServerProcess) -> list[str]:
    """The Alembic revisions this server's last start applied, from its JSON log."""
    applied = []
    for line in server.log.read_text(errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        if event.get("logger") == "alembic.runtime.migration" and str(
            event.get("event", "")
        ).startswith("Running upgrade"):
            applied.append(str(event["event"]))
    return applied


# ------------------------------------------------------------------ migrations run once


def schema_revisions_or_none(db_url: str) -> list[str] | None:
    """The schema's revisions, or None when there is no ``alembic_version`` table yet."""
    exists = _rows(db_url, sa.text("SELECT to_regclass('alembic_version') IS NOT NULL"))[0][0]
    return schema_revisions(db_url) if exists else None


def _waiting_for_the_migration_lock(db_url: str) -> int:
    """Sessions of this database waiting for the migration lock (two-key advisory locks show
    their keys as classid and objid, with objsubid 2)."""
    query = sa.text(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        " AND classid = :a AND objid = :b AND objsubid = 2"
        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    ).bindparams(**MIGRATION_LOCK)
    return int(_rows(db_url, query)[0][0])


def test_replicas_started_together_on_an_empty_database_migrate_it_once(tmp_path: Path) -> None:
    templates = tmp_path / "templates.toml"
    templates.write_text(TEST_TEMPLATES)
    with postgres_database() as url:
        replicas = [
            # A token of its own would migrate the database first (bootstrap): none is needed
            # to ask for health.
            ServerProcess(tmp_path / f"data-{name}", templates, url, name=name, token="unused")
            for name in ("replica-a", "replica-b")
        ]
        for replica in replicas:
            replica.data_dir.mkdir()
        holder = make_engine(url)
        try:
            # The test holds the lock, so both replicas are surely starting at once: each must
            # be seen waiting for it before either may migrate.
            with holder.connect() as lock:
                lock.execute(sa.text("SELECT pg_advisory_lock(:a, :b)"), MIGRATION_LOCK)
                lock.commit()
                with concurrent.futures.ThreadPoolExecutor(len(replicas)) as pool:
                    started = [pool.submit(replica.start) for replica in replicas]
                    wait_until(
                        lambda: _waiting_for_the_migration_lock(url) == len(replicas),
                        timeout=PROCESS_START_TIMEOUT,
                        interval=0.2,
                        message="both replicas waiting for the migration lock",
                    )
                    assert schema_revisions_or_none(url) is None  # nobody migrated meanwhile
                    lock.execute(sa.text("SELECT pg_advisory_unlock(:a, :b)"), MIGRATION_LOCK)
                    lock.commit()
                    for future in started:
                        future.result(timeout=PROCESS_START_TIMEOUT + 60)
            assert schema_revisions(url) == [current_head()]
            applied = sorted((upgrades_logged(r) for r in replicas), key=len)
            assert applied[0] == [], "the replica that waited migrated too"
            assert len(applied[1]) == revision_count(), applied[1]
        finally:
            holder.dispose()
            for replica in replicas:
                replica.kill(signal.SIGTERM)


# ------------------------------------------------------------------ the rolling upgrade


def new_version(directory: Path) -> Path:
    """This tree's package copied into ``directory`` as the next version: one more migration
    on top of the current head, and ``NEW_VERSION`` as its version. Returns the directory to
    put on ``PYTHONPATH``."""
    package = directory / "benchrunner"
    shutil.copytree(
        REPO / "src" / "benchrunner", package, ignore=shutil.ignore_patterns("__pycache__")
    )
    init = package / "__init__.py"
    text, replaced = re.subn(
        r'^__version__ = "[^"]*"$',
        f'__version__ = "{NEW_VERSION}"',
        init.read_text(),
        flags=re.MULTILINE,
    )
    assert replaced == 1, "no __version__ line in the package's __init__.py"
    init.write_text(text)
    migration = package / "server" / "store" / "migrations" / "versions" / f"{NEW_REVISION}.py"
    migration.write_text(
        f'''"""The rolling-upgrade test's next version: an additive change, a nullable column.

Revision ID: {NEW_REVISION}
Revises: {current_head()}
"""

import sqlalchemy as sa
from alembic import op

revision = "{NEW_REVISION}"
down_revision = "{current_head()}"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("job", sa.Column("rolling_upgrade_note", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("job", "rolling_upgrade_note")
'''
    )
    return directory


@dataclass
class Submitter:
    """Submits a tally job every ``interval`` seconds until stopped, as a load balancer's
    clients would: to one replica, and to the other when that one cannot be reached. Every
    submission carries an ``Idempotency-Key``, so one retried on the other replica after its
    answer was lost is the same job."""

    deployment: Deployment
    replicas: tuple[ServerProcess, ...]
    tally: Path
    interval: float = 0.4
    tags: dict[str, str] = field(default_factory=dict)
    """Job UUID -> the tag its execution appends to the tally."""
    failovers: int = 0
    error: BaseException | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="submitter", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(timeout=180)
        assert not self._thread.is_alive(), "the submitter did not stop"
        self.check()

    def check(self) -> None:
        if self.error is not None:
            raise AssertionError(f"a submission failed: {self.error!r}") from self.error

    def _run(self) -> None:
        number = 0
        try:
            while not self._stop.is_set():
                tag = f"job-{number}"
                self.tags[self._submit(tag, number % len(self.replicas))] = tag
                number += 1
                self._stop.wait(self.interval)  # pacing of the load, not a wait for a state
        except BaseException as exc:  # reported by check() in the test's thread
            self.error = exc

    def _submit(self, tag: str, first: int) -> str:
        body = {
            "project": self.deployment.project,
            "spec": self.deployment.spec,
            "template": "bench.tally",
            "args": {"file": str(self.tally), "tag": tag, "ms": JOB_MS},
            "settings": {"adapter": "json"},
        }
        key = str(uuid.uuid4())
        deadline = time.monotonic() + 120
        attempt = first
        while True:
            replica = self.replicas[attempt % len(self.replicas)]
            try:
                with replica.client() as client:
                    return str(client.run(body, idempotency_key=key).job)
            except ApiError as exc:
                if exc.status not in (0, 502, 503) or time.monotonic() > deadline:
                    raise
                self.failovers += 1
                attempt += 1
                if attempt % len(self.replicas) == first:
                    self._stop.wait(0.2)  # both down for a moment: back off before the next round


def _statuses(db_url: str) -> dict[str, JobStatus]:
    rows = _rows(db_url, sa.select(job.c.uuid, job.c.status))
    return {str(row[0]): JobStatus(row[1]) for row in rows}


def processed(db_url: str) -> int:
    return sum(1 for s in _statuses(db_url).values() if s == JobStatus.PROCESSED)


def health(server: ServerProcess) -> Health:
    with server.client(None) as client:
        return client.health()


def connected(server: ServerProcess) -> int:
    return int(health(server).connected_runners)


def running_on(db_url: str, runners: list[RunnerProcess]) -> list[str]:
    """Jobs running now on one of ``runners``."""
    query = (
        sa.select(job.c.uuid)
        .join(runner_table, runner_table.c.id == job.c.runner_id)
        .where(
            job.c.status == int(JobStatus.RUNNING),
            runner_table.c.slug.in_(sorted(r.slug for r in runners)),
        )
    )
    return [str(row[0]) for row in _rows(db_url, query)]


def _stop_gracefully(server: ServerProcess) -> None:
    server.kill(signal.SIGTERM)
    # uvicorn re-raises the signal once it has shut down: -SIGTERM is its graceful end.
    assert server.proc is not None and server.proc.returncode in (0, -signal.SIGTERM)
    assert "Application shutdown complete." in server.log.read_text()


def _restart_as_new_version(server: ServerProcess, new_root: Path) -> None:
    path = os.pathsep.join(p for p in (str(new_root), os.environ.get("PYTHONPATH")) if p)
    server.env = {**server.env, "PYTHONPATH": path}  # a new dict: the replicas shared the old
    server.start()
    assert health(server).version == NEW_VERSION


@pytest.mark.timeout(1200)
def test_a_rolling_upgrade_of_two_replicas_keeps_serving_runners_and_loses_no_job(
    tmp_path: Path,
) -> None:
    new_root = new_version(tmp_path / "new-version")
    tally = tmp_path / "tally.txt"
    tally.touch()
    with postgres_database() as url, deploy(tmp_path, url) as deployment:
        replica_a = deployment.server
        replica_b = deployment.add_replica("replica-b")
        for number in range(RUNNERS):
            order = [replica_a, replica_b] if number % 2 == 0 else [replica_b, replica_a]
            deployment.runner_process(f"runner-{number}", servers=order).start()
        wait_until(
            lambda: connected(replica_a) == connected(replica_b) == RUNNERS // 2,
            timeout=PROCESS_START_TIMEOUT,
            message="the runners connected, half to each replica",
        )
        submitter = Submitter(deployment, (replica_a, replica_b), tally)
        submitter.start()

        def served(at_least: int) -> None:
            """Wait until ``at_least`` more jobs are processed than now."""
            target = processed(url) + at_least

            def reached() -> bool:
                submitter.check()
                return processed(url) >= target

            wait_until(reached, timeout=180, interval=0.5, message=f"{target} jobs processed")

        served(10)
        interrupted: list[str] = []

        def stop_during_a_job(replica: ServerProcess, its_runners: list[RunnerProcess]) -> None:
            """Stop ``replica`` gracefully while a job runs on one of its runners, whose
            result then has to reach the other replica."""
            interrupted.extend(
                wait_until(
                    lambda: running_on(url, its_runners),
                    timeout=120,
                    interval=0.02,
                    message=f"a job running on a runner of {replica.name}",
                )
            )
            _stop_gracefully(replica)

        # Replica A: stopped gracefully, its runners move to B, and it comes back as the new
        # version, which migrates the schema past what B knows.
        stop_during_a_job(replica_a, deployment.runners[::2])
        wait_until(
            lambda: connected(replica_b) == RUNNERS,
            timeout=60,
            message="every runner on replica B while A is down",
        )
        served(5)
        _restart_as_new_version(replica_a, new_root)
        assert schema_revisions(url) == [NEW_REVISION]
        assert [r for r in upgrades_logged(replica_a) if NEW_REVISION in r], "A did not migrate"

        # B, the old version, keeps serving every runner on the new schema...
        served(10)
        assert connected(replica_a) == 0 and connected(replica_b) == RUNNERS
        # ...but an old version refuses to start on it, on one line.
        refused = cli(
            *("server", "--port", "0", "--db", url, "--data-dir", str(tmp_path / "late")),
            check=False,
        )
        assert refused.returncode == 1, refused.stderr
        assert "Traceback" not in refused.stderr, refused.stderr
        assert refused.stderr.strip().splitlines()[-1] == (
            f"error: the database's schema is at revision {NEW_REVISION}, newer than "
            f"benchrunner {__version__} knows (its newest is {current_head()}): a newer "
            "benchrunner migrated it; run that version (or newer) on this replica too"
        )

        # Replica B likewise: its runners move to A, it comes back as the new version and finds
        # nothing left to migrate.
        stop_during_a_job(replica_b, deployment.runners)
        wait_until(
            lambda: connected(replica_a) == RUNNERS,
            timeout=60,
            message="every runner on replica A while B is down",
        )
        served(5)
        _restart_as_new_version(replica_b, new_root)
        assert upgrades_logged(replica_b) == []
        served(5)
        submitter.stop()

        def unfinished() -> list[str]:
            statuses = _statuses(url)
            return [u for u in submitter.tags if statuses.get(u) != JobStatus.PROCESSED]

        wait_progressing(
            lambda: not unfinished(),
            lambda: len(unfinished()),
            stall=120,
            message="every submitted job processed",
        )
        # No submission made two jobs: the database holds exactly the jobs the clients got.
        assert set(_statuses(url)) == set(submitter.tags)
        for runner in deployment.runners:  # each reconnected; none had to be restarted
            assert runner.proc is not None and runner.proc.poll() is None, runner.output()
            assert runner.starts == 1

    executions = collections.Counter(tally.read_text().split())
    assert set(executions) == set(submitter.tags.values()), "a processed job never ran"
    assert max(executions.values()) == 1, "a job ran twice"
