"""PostgreSQL connections outside the SQLAlchemy pools: one per LISTEN, one for NOTIFY, one per
session-level advisory lock. Each must be a single long-lived session, which a pool cannot give.

They are opened with a connect timeout, so an unreachable or blackholed database fails the
attempt instead of hanging the task that waits on it, and with TCP keepalives, so a peer that
vanishes while a LISTEN waits is noticed within about a minute.

A LISTEN waits on its connection's socket (``listen``): the event loop wakes it only
when the database sends something. psycopg's own ``notifies()`` wakes ten times a second to
look, which was most of what an idle server on PostgreSQL spent.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator, Sequence
from typing import Any

import psycopg
import sqlalchemy as sa
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

CONNECT_TIMEOUT = 5
"""Seconds; libpq counts whole seconds, at least 2."""

SESSION_DEFAULTS: dict[str, str | int] = {
    "connect_timeout": CONNECT_TIMEOUT,
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}
"""Applied where the database URL does not set them itself."""


def libpq_url(sqlalchemy_url: str) -> str:
    """``postgresql+psycopg://...`` -> the ``postgresql://...`` form psycopg connects with."""
    return (
        sa.make_url(sqlalchemy_url)
        .set(drivername="postgresql")
        .render_as_string(hide_password=False)
    )


def session_conninfo(conninfo: str) -> str:
    """``conninfo`` with the connect timeout and keepalives of ``SESSION_DEFAULTS`` added."""
    params: dict[str, Any] = {**SESSION_DEFAULTS, **conninfo_to_dict(conninfo)}
    return make_conninfo("", **params)


async def connect_session(conninfo: str) -> psycopg.AsyncConnection[Any]:
    """An autocommit connection of its own; raises ``psycopg.OperationalError`` when the
    database cannot be reached within the connect timeout."""
    return await psycopg.AsyncConnection.connect(session_conninfo(conninfo), autocommit=True)


async def listen(
    conn: psycopg.AsyncConnection[Any], channels: Sequence[str]
) -> AsyncIterator[psycopg.Notify]:
    """LISTEN on ``channels`` over ``conn`` (an autocommit connection that runs nothing else);
    the notifications that arrive from then on, each as soon as its packet is read, the event
    loop sleeping on the socket in between. Iterating raises ``psycopg.OperationalError`` once
    the connection is lost (closed by the database, reset, or dead to the keepalives)."""
    arrived: collections.deque[psycopg.Notify] = collections.deque()
    conn.add_notify_handler(arrived.append)  # what comes while a LISTEN below runs
    for channel in channels:
        await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
    return _notifications(conn, arrived)


async def _notifications(
    conn: psycopg.AsyncConnection[Any], arrived: collections.deque[psycopg.Notify]
) -> AsyncIterator[psycopg.Notify]:
    loop = asyncio.get_running_loop()
    readable = asyncio.Event()
    pgconn = conn.pgconn
    fileno = pgconn.socket
    loop.add_reader(fileno, readable.set)
    try:
        while True:
            while arrived:
                yield arrived.popleft()
            await readable.wait()
            readable.clear()
            pgconn.consume_input()  # raises once the connection is gone
            handle = pgconn.notify_handler  # psycopg's: decodes, then the handlers (``arrived``)
            while (notify := pgconn.notifies()) is not None:
                if handle is not None:
                    handle(notify)
            if pgconn.status != psycopg.pq.ConnStatus.OK:
                raise psycopg.OperationalError("the LISTEN connection was lost")
    finally:
        loop.remove_reader(fileno)


def describe_error(exc: BaseException, conninfo: str) -> str:
    """``exc`` for a log line: its type and message, with the connection's password (should a
    driver ever echo it) masked."""
    text = f"{type(exc).__name__}: {exc}".strip()
    password = conninfo_to_dict(conninfo).get("password")
    if password:
        text = text.replace(str(password), "***")
    return text[:500]
