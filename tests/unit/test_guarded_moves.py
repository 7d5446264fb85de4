"""A move finds its job by id alone: its guards are written so that no index of ``job`` but the
primary key can serve the statement (``tables.unindexed``): a prepared statement's generic plan
once moved a runner's job through ``index_job_runner_id``, reading every job of the runner."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

from benchrunner.core.states import JobStatus
from benchrunner.server.store import transitions
from benchrunner.server.store.tables import job


def _where(statement: sa.Update, dialect: sa.Dialect) -> str:
    sql = str(statement.compile(dialect=dialect))
    return sql[sql.index(" WHERE ") :]


def _indexed_columns() -> set[str]:
    return {column.name for index in job.indexes for column in index.columns}


DIALECTS = [sa.create_engine(url).dialect for url in ("postgresql+psycopg://", "sqlite://")]


@pytest.mark.parametrize("dialect", DIALECTS, ids=["pg", "sqlite"])
@pytest.mark.parametrize("target", [JobStatus.RUNNING, JobStatus.COMPLETED, JobStatus.FAILED])
def test_a_move_compares_no_indexed_column_but_the_id(
    dialect: sa.Dialect, target: JobStatus
) -> None:
    where = _where(transitions._guarded_update(target, ("completed",), True), dialect)
    compared = set(re.findall(r"\bjob\.(\w+) (?:=|IN|BETWEEN)", where))
    assert compared & _indexed_columns() == {"id"}, where
    assert "job.status + 0" in where and "job.runner_id + 0" in where, where
    # ``modified`` (``_UNCHANGED``) is in partial indexes on the status alone, whose predicates
    # a guard on ``status + 0`` never proves: it needs no wrapping.


@pytest.mark.parametrize("dialect", DIALECTS, ids=["pg", "sqlite"])
def test_a_heartbeat_compares_no_indexed_column_but_the_id(dialect: sa.Dialect) -> None:
    statement = transitions._TOUCH_JOB.statement
    assert isinstance(statement, sa.Update)
    where = _where(statement, dialect)
    compared = set(re.findall(r"\bjob\.(\w+) (?:=|IN|BETWEEN)", where))
    assert compared & _indexed_columns() == {"id"}, where
