"""Fixtures for every test tier: ``database_url`` runs a test once per engine."""

from __future__ import annotations

import collections
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.databases import ENGINES, fresh_database

_passed_by_engine: collections.Counter[str] = collections.Counter()


@pytest.fixture(params=ENGINES)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database of each engine in turn (the same test runs on both)."""
    with fresh_database(str(request.param), tmp_path) as url:
        yield url


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and report.passed:
        for engine in ENGINES:
            if f"[{engine}" in report.nodeid or engine in report.keywords:
                _passed_by_engine[engine] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line CI checks: how many engine-parametrised tests passed on each engine."""
    counts = ", ".join(f"{engine} {_passed_by_engine[engine]} passed" for engine in ENGINES)
    terminalreporter.write_line(f"engines: {counts}")
