"""A stored timestamp as whole microseconds since the Unix epoch, computed by the database.

Reading thousands of timestamps as ``datetime`` objects (the driver's, then ``UtcDateTime``'s
``replace``) costs a perf plot more than the rest of its read; an integer is read for nothing on
either engine, and is exact: ``epoch_microseconds(t) / 1_000_000`` is the float
``t.timestamp()`` gives. Each dialect spells it with its own functions, from Core expressions:

* SQLite stores ``YYYY-MM-DD HH:MM:SS.ffffff`` (SQLAlchemy's format, naive UTC): the whole
  seconds from its first 19 characters by ``unixepoch`` (SQLite 3.38 and later; before,
  ``strftime('%s')``, which costs a read of ten thousand points a few milliseconds more), the
  microseconds from the digits after the point (none: 0). Not from the whole text: SQLite's
  time functions round it to milliseconds, so ``.9996`` would count as the next second.
* PostgreSQL: ``extract(epoch FROM t)`` of a ``timestamp without time zone`` takes the stored
  time as UTC and is exact (``numeric``; ``date_part``'s double is cheaper to compute but,
  times a million, misses by a microsecond past the year 2106).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

MICROSECONDS = 1_000_000
SQLITE_SECONDS = 19
"""The length of ``YYYY-MM-DD HH:MM:SS``, the whole seconds of SQLite's stored text."""
SQLITE_FRACTION_AT = 21
"""Where the microseconds start in SQLite's stored text (1-based: after the seconds' point)."""
SQLITE_UNIXEPOCH = (3, 38, 0)
"""The first SQLite with ``unixepoch()``."""


class epoch_microseconds(FunctionElement[int]):
    """``epoch_microseconds(column)``: the column's time as an integer (NULL stays NULL)."""

    type = sa.BigInteger()
    name = "epoch_microseconds"
    inherit_cache = True


def _moment(element: epoch_microseconds) -> Any:
    (moment,) = element.clauses
    return moment


def sqlite_seconds(moment: Any, version: tuple[int, ...]) -> sa.ColumnElement[int]:
    """Whole seconds since the epoch of a stored SQLite time (its fraction left out, not
    rounded), as SQLite ``version`` spells it."""
    moment = sa.func.substr(moment, 1, SQLITE_SECONDS)
    if version >= SQLITE_UNIXEPOCH:
        return sa.type_coerce(sa.func.unixepoch(moment), sa.BigInteger)
    return sa.type_coerce(sa.func.strftime("%s", moment), sa.BigInteger)


@compiles(epoch_microseconds, "sqlite")
def _sqlite(element: epoch_microseconds, compiler: SQLCompiler, **kw: Any) -> str:
    moment = _moment(element)
    # A dialect made without its driver (a statement printed) gets the spelling every SQLite has.
    version = getattr(compiler.dialect.dbapi, "sqlite_version_info", (0,))
    seconds = sqlite_seconds(moment, version)
    fraction = sa.type_coerce(sa.func.substr(moment, SQLITE_FRACTION_AT), sa.BigInteger)
    return compiler.process(seconds * MICROSECONDS + fraction, **kw)


@compiles(epoch_microseconds, "postgresql")
def _postgresql(element: epoch_microseconds, compiler: SQLCompiler, **kw: Any) -> str:
    seconds = sa.extract("epoch", _moment(element))
    return compiler.process(sa.cast(seconds * MICROSECONDS, sa.BigInteger), **kw)
