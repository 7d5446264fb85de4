"""``epoch_microseconds``: a stored time as the database computes its microseconds since the
epoch, exactly what Python computes from the ``datetime`` read back, on both engines (and in
both of SQLite's spellings), before 1970, at whole seconds and far in the future."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.dialects.postgresql import psycopg
from sqlalchemy.engine import Dialect

from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.epoch import SQLITE_UNIXEPOCH, epoch_microseconds, sqlite_seconds
from benchrunner.server.store.tables import UtcDateTime

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
MOMENTS = [
    EPOCH,
    EPOCH - dt.timedelta(microseconds=1),
    dt.datetime(1901, 12, 13, 20, 45, 52, 1, tzinfo=dt.UTC),
    dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    dt.datetime(2026, 3, 1, 12, 0, 0, 123457, tzinfo=dt.UTC),
    dt.datetime(2107, 1, 26, 14, 41, 11, 827287, tzinfo=dt.UTC),
    dt.datetime(2999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC),
]
rng = random.Random(6)
MOMENTS += [EPOCH + dt.timedelta(microseconds=rng.randrange(-(10**15), 10**16)) for _ in range(500)]

moments = sa.Table("moments", sa.MetaData(), sa.Column("at", UtcDateTime(), nullable=True))


def _micros(moment: dt.datetime) -> int:
    return (moment - EPOCH) // dt.timedelta(microseconds=1)


def test_the_database_counts_the_microseconds_python_does(database_url: str) -> None:
    engine = make_engine(database_url, writer=True)
    try:
        with engine.begin() as conn:
            moments.create(conn)
            conn.execute(moments.insert(), [{"at": m} for m in MOMENTS] + [{"at": None}])
            found = conn.execute(sa.select(moments.c.at, epoch_microseconds(moments.c.at))).all()
    finally:
        engine.dispose()
    assert len(found) == len(MOMENTS) + 1
    for at, micros in found:
        assert micros == (None if at is None else _micros(at)), at
        if at is not None:
            assert micros / 1_000_000 == at.timestamp()  # the plot's x, bit for bit


def test_both_sqlite_spellings_agree(tmp_path: object) -> None:
    engine = sa.create_engine("sqlite://")
    with engine.begin() as conn:
        moments.create(conn)
        conn.execute(moments.insert(), [{"at": m} for m in MOMENTS])
        for version in ((3, 37, 2), SQLITE_UNIXEPOCH):
            seconds = sqlite_seconds(moments.c.at, version)
            found = conn.execute(sa.select(moments.c.at, seconds)).all()
            assert [int(s) for _, s in found] == [_micros(at) // 1_000_000 for at, _ in found]
    # A dialect without its driver (a statement printed) gets the spelling every SQLite has.
    printed = str(sa.select(epoch_microseconds(moments.c.at)).compile(dialect=sqlite.dialect()))
    assert "strftime" in printed and "unixepoch" not in printed


FOLDED = [
    *MOMENTS[:7],
    dt.datetime(999, 1, 2, 3, 4, 5, tzinfo=dt.UTC),  # a year of three digits
    dt.datetime(2026, 11, 29, 21, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))),  # not UTC
]


DIALECTS: list[Dialect] = [sqlite.dialect(), psycopg.dialect()]  # type: ignore[no-untyped-call]


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_the_folded_processors_convert_as_the_layered_ones(dialect: Dialect) -> None:
    """``UtcDateTime``'s own processors give what ``TypeDecorator``'s layered ones give: its
    ``process_bind_param`` and ``process_result_value`` around the engine's conversions."""
    column = UtcDateTime().dialect_impl(dialect)
    assert isinstance(column, UtcDateTime)
    binds = column.bind_processor(dialect)
    layered_binds = sa.TypeDecorator.bind_processor(column, dialect)
    reads = column.result_processor(dialect, None)
    layered_reads = sa.TypeDecorator.result_processor(column, dialect, None)
    assert layered_binds is not None and layered_reads is not None
    for moment in [*FOLDED, None]:
        stored = binds(moment)
        assert stored == layered_binds(moment), moment
        assert type(stored) is type(layered_binds(moment))
        assert reads(stored) == layered_reads(stored) == moment
        if moment is not None:
            assert reads(stored).tzinfo is dt.UTC
    refusals: list[Any] = [dt.datetime(2026, 1, 1), dt.date(2026, 1, 1), "2026-01-01"]
    for refused in refusals:
        with pytest.raises((TypeError, ValueError)) as folded:
            binds(refused)
        with pytest.raises(type(folded.value)):
            layered_binds(refused)
