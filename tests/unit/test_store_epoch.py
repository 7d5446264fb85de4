"""``epoch_microseconds``: a stored time as the database computes its microseconds since the
epoch, exactly what Python computes from the ``datetime`` read back, on both engines (and in
both of SQLite's spellings), before 1970, at whole seconds and far in the future."""

from __future__ import annotations

import datetime as dt
import random

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

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
