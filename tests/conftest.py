"""Fixtures for every test tier: ``database_url`` runs a test once per engine.

Under ``CI=true`` a skipped test is an error: CI must run every test (the runc and skopeo
tests, the PostgreSQL half), so a missing tool or engine there fails loudly instead of
leaving a green run that proved less.
"""

from __future__ import annotations

import collections
import os
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from benchrunner.server.store.engine import Database
from tests.databases import ENGINES, fresh_database, with_schema
from tests.temp_leftovers import LeftoverWatch, leftover_report

if TYPE_CHECKING:
    from tests.object_store import S3Server

_passed_by_engine: collections.Counter[str] = collections.Counter()
_leftover_watch = pytest.StashKey[LeftoverWatch]()


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


@pytest.fixture(params=ENGINES)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database of each engine in turn (the same test runs on both)."""
    with fresh_database(str(request.param), tmp_path) as url:
        yield url


@pytest.fixture
def migrated_db(database_url: str) -> Iterator[Database]:
    """The store on ``database_url`` with every migration applied, closed after the test."""
    with_schema(database_url)
    database = Database(database_url, read_threads=1)
    yield database
    database.close()


@pytest.fixture(scope="session", autouse=True)
def _session_temp_dir(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """``TMPDIR`` of this session (of each xdist worker) and of every process it starts: a
    directory of its own, removed at the end. A ``benchrunner-*`` entry left in it fails the
    session, naming the test after which it appeared."""
    tmp_path_factory.getbasetemp()  # pytest's own directories stay where pytest keeps them
    watch = LeftoverWatch.create()
    request.config.stash[_leftover_watch] = watch
    patch = pytest.MonkeyPatch()
    patch.setenv("TMPDIR", str(watch.directory))
    patch.setattr(tempfile, "tempdir", str(watch.directory))
    try:
        yield watch.directory
    finally:
        patch.undo()
        leftovers = watch.leftovers()
        watch.remove()
        del request.config.stash[_leftover_watch]
    if leftovers:
        pytest.fail(leftover_report(leftovers), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None]:
    try:
        return (yield)
    finally:
        watch = item.config.stash.get(_leftover_watch, None)
        if watch is not None:
            watch.look(item.nodeid)


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A real S3 server (moto's, on loopback) shared by the session; each test makes its own
    bucket (``S3Server.new_bucket``)."""
    from tests.object_store import s3_server

    with s3_server(tmp_path_factory.mktemp("moto")) as server:
        yield server


@pytest.fixture(autouse=True)
def _no_inherited_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI sizes piped output by ``COLUMNS`` when set, and a parallel test worker may
    inherit one; tests of printed tables must not depend on where they run."""
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if in_ci() and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        reason = str(reason).removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, where every test must run: {reason}"
    return report


LONGEST_FIRST = (
    "tests/system/test_guides_deploy.py",
    "tests/harnesses/test_criterion.py",
    "tests/system/test_images.py",
    "tests/system/test_guides.py",
    "tests/system/test_chaos.py",
)
"""Modules of minutes each on a fresh machine (images built, a systemd machine booted, Criterion
compiled, chaos rounds): they run first, so that the parallel workers (``--dist loadfile`` hands
out modules in this order) do not wait at the end for one of them to finish."""


def _longest_first(item: pytest.Item) -> int:
    module = item.nodeid.partition("::")[0]
    return LONGEST_FIRST.index(module) if module in LONGEST_FIRST else len(LONGEST_FIRST)


def _dropped_by_engine(item: pytest.Item) -> bool:
    """Whether ``item`` is the run on an engine its markers leave out: ``engine_independent``
    (its PostgreSQL run) or ``only_engine(name)`` (every other engine's run)."""
    params = getattr(item, "callspec", None)
    engines = [value for value in params.params.values() if value in ENGINES] if params else []
    if not engines:
        return False
    if engines[0] == "postgresql" and item.get_closest_marker("engine_independent"):
        return True
    only = item.get_closest_marker("only_engine")
    return only is not None and engines[0] != only.args[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test marked ``engine_independent`` runs on SQLite alone: the store code under it is
    proved on both engines by the tests that are about the store; one marked
    ``only_engine(name)`` runs on that engine alone (what it proves exists only there). The
    ``LONGEST_FIRST`` modules come first."""
    items.sort(key=_longest_first)
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        (dropped if _dropped_by_engine(item) else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and report.passed:
        for engine in ENGINES:
            if f"[{engine}" in report.nodeid or engine in report.keywords:
                _passed_by_engine[engine] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line CI checks: how many engine-parametrised tests passed on each engine."""
    counts = ", ".join(f"{engine} {_passed_by_engine[engine]} passed" for engine in ENGINES)
    terminalreporter.write_line(f"engines: {counts}")
