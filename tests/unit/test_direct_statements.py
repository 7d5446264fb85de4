"""``Direct`` statements give what ``Connection.execute`` gives for the same statement, on
both engines: the same rows (UUIDs, aware datetimes, JSON text), rows changed, RETURNING."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store.direct import PADDED_UP_TO, Direct, _numbered, padded_length
from benchrunner.server.store.engine import Database
from benchrunner.server.store.migrate import upgrade
from benchrunner.server.store.tables import organization
from tests.databases import with_schema

NOW = dt.datetime(2026, 11, 25, 4, 30, 15, 123456, tzinfo=dt.UTC)

INSERT = organization.insert().values(
    uuid=sa.bindparam("uuid", type_=organization.c.uuid.type),
    name=sa.bindparam("name"),
    slug=sa.bindparam("slug"),
    plan=sa.bindparam("plan"),
    created=sa.bindparam("now", type_=organization.c.created.type),
    modified=sa.bindparam("now", type_=organization.c.modified.type),
)
BY_SLUGS = sa.select(
    organization,
    # A column whose conversion depends on the type the driver reports (NUMERIC on PostgreSQL).
    sa.literal_column("1.5", sa.Float).label("score"),
).where(
    organization.c.slug.in_(["acme", "globex"]),  # a constant IN list: rendered once
    organization.c.created <= sa.bindparam("until", type_=organization.c.created.type),
)
RENAME = (
    organization.update()
    .where(organization.c.slug == sa.bindparam("old"))
    .values(name=sa.bindparam("new"))
    .returning(organization.c.id, organization.c.uuid, organization.c.modified)
)
RENAME_QUIETLY = (
    organization.update()
    .where(organization.c.slug == sa.bindparam("old"))
    .values(name=sa.bindparam("new"))
)


def _insert(conn: Connection, slug: str, *, direct: bool) -> None:
    params = {"uuid": uuid.uuid4(), "name": slug.title(), "slug": slug, "plan": "free", "now": NOW}
    if direct:
        assert Direct(INSERT).run(conn, params) == 1
    else:
        conn.execute(INSERT, params)


def _compare(conn: Connection) -> None:
    _insert(conn, "acme", direct=True)
    _insert(conn, "globex", direct=False)
    _insert(conn, "initech", direct=True)
    expected = conn.execute(BY_SLUGS.order_by(organization.c.slug), {"until": NOW}).all()
    got = Direct(BY_SLUGS.order_by(organization.c.slug)).all(conn, {"until": NOW})
    assert [tuple(row) for row in got] == [tuple(row) for row in expected]
    assert [row.slug for row in got] == ["acme", "globex"]
    assert got[0].score == 1.5 and isinstance(got[0].score, float)
    assert isinstance(got[0].uuid, uuid.UUID)
    assert got[0].created == NOW and got[0].created.tzinfo is not None
    assert Direct(BY_SLUGS).first(conn, {"until": NOW - dt.timedelta(seconds=1)}) is None

    returned = Direct(RENAME).first(conn, {"old": "acme", "new": "Acme Corp"})
    assert returned is not None and returned.modified == NOW
    assert (
        returned.uuid
        == conn.execute(
            sa.select(organization.c.uuid).where(organization.c.slug == "acme")
        ).scalar_one()
    )
    assert Direct(RENAME_QUIETLY).run(conn, {"old": "nobody", "new": "x"}) == 0
    # A literal ``%`` (escaped in psycopg's named form, not in its numbered one) and a
    # parameter used twice.
    percent = sa.select(organization.c.slug).where(
        organization.c.slug.like(sa.literal_column("'%ni%'"))
        | organization.c.slug.like(sa.literal_column("'%ex'")),
        organization.c.slug != sa.bindparam("other"),
        organization.c.name != sa.bindparam("other"),
    )
    params = {"other": "globex"}
    assert Direct(percent).all(conn, params) == [("initech",)]
    assert conn.execute(percent, params).all() == [("initech",)]
    names = conn.execute(sa.select(organization.c.name).order_by(organization.c.slug)).scalars()
    assert list(names) == ["Acme Corp", "Globex", "Initech"]


def test_direct_statements_match_connection_execute(database_url: str) -> None:
    with_schema(database_url)
    db = Database(database_url)
    try:
        db.write_sync(_compare)
    finally:
        db.close()


def test_a_missing_parameter_is_an_error_not_a_null(database_url: str) -> None:
    db = Database(database_url)

    def unit(conn: Connection) -> Any:
        return Direct(BY_SLUGS).all(conn, {})

    try:
        upgrade(db.write_engine)
        with pytest.raises((KeyError, psycopg.ProgrammingError), match="until"):
            db.read_sync(unit)
    finally:
        db.close()


BY_IDS = sa.select(organization.c.slug).where(
    organization.c.id.in_(sa.bindparam("ids", expanding=True)),
    organization.c.created <= sa.bindparam("until", type_=organization.c.created.type),
)


def _runtime_lists(conn: Connection) -> None:
    rows = [
        {"uuid": uuid.uuid4(), "name": slug.title(), "slug": slug, "plan": "free", "now": NOW}
        for slug in ("acme", "globex", "initech")
    ]
    Direct(INSERT).run_many(conn, rows[:2])
    Direct(INSERT).run_many(conn, rows[2:])  # one row
    Direct(INSERT).run_many(conn, [])
    ids = {row.slug: row.id for row in conn.execute(sa.select(organization)).all()}
    assert sorted(ids) == ["acme", "globex", "initech"]
    statement = Direct(BY_IDS.order_by(organization.c.slug))
    # Each length has its plan, three sharing four's (padded); one used again after another
    # is still right.
    for wanted in (["globex"], ["acme", "initech"], ["initech"], ["acme", "globex", "initech"]):
        params = {"ids": [ids[slug] for slug in wanted], "until": NOW}
        got = [row.slug for row in statement.all(conn, params)]
        expected = conn.execute(BY_IDS.order_by(organization.c.slug), params).scalars().all()
        assert got == expected == sorted(wanted)
    assert statement.all(conn, {"ids": [ids["acme"]], "until": NOW - dt.timedelta(1)}) == []
    assert statement.all(conn, {"ids": [], "until": NOW}) == []
    lengths = sorted(length for _, (length,) in statement._plans)
    assert lengths == sorted({padded_length(n) for n in (0, 1, 2, 3)}) == [0, 1, 2, 4]
    with pytest.raises(ValueError, match="runtime list"):
        statement.run_many(conn, [{"ids": [1], "until": NOW}])


def test_runtime_in_lists_and_many_rows_match_connection_execute(database_url: str) -> None:
    with_schema(database_url)
    db = Database(database_url)
    try:
        db.write_sync(_runtime_lists)
    finally:
        db.close()


def test_runtime_lists_are_padded_to_a_power_of_two_up_to_a_bound() -> None:
    assert [padded_length(n) for n in (0, 1, 2, 3, 5, 9, 1000)] == [0, 1, 2, 4, 8, 16, 1024]
    assert padded_length(PADDED_UP_TO) == PADDED_UP_TO
    assert padded_length(PADDED_UP_TO + 1) == PADDED_UP_TO + 1


def test_psycopg_statements_are_numbered_once_each_name() -> None:
    assert _numbered("a %% %(x)s, %(y)s, %(x)s %%(z)s") == (b"a % $1, $2, $1 %(z)s", ("x", "y"))


def _prepared_after_one_run(conn: Connection) -> list[str]:
    """The statements this session holds prepared once ``BY_SLUGS`` ran once through
    ``Direct``."""
    Direct(BY_SLUGS).all(conn, {"until": NOW})
    rows = conn.execute(sa.text("SELECT statement FROM pg_prepared_statements")).scalars()
    return [" ".join(text.split()) for text in rows]


@pytest.mark.only_engine("postgresql")
def test_a_direct_statement_is_prepared_on_its_first_run(migrated_db: Database) -> None:
    """The statements of the hot paths are parsed and planned once per connection, not at each
    of their first runs (psycopg prepares a statement at its fifth): a server with a job now
    and then would otherwise plan a submission's statement for every job."""
    prepared = migrated_db.read_sync(_prepared_after_one_run)
    assert any(text.startswith("SELECT organization.id") for text in prepared), prepared
