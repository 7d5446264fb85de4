"""Wake-ups across replicas (LISTEN/NOTIFY on a real PostgreSQL) survive any error, and their
connections are opened with a timeout (docs/decisions/replicas.md)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest
import sqlalchemy as sa
from psycopg import sql

from benchrunner.server.recovery.leadership import AdvisoryLockLeadership
from benchrunner.server.scheduling.wakeups import CHANNEL, PostgresWakeups
from benchrunner.server.store.listen import (
    CONNECT_TIMEOUT,
    connect_session,
    describe_error,
    listen,
    session_conninfo,
)
from tests.databases import POSTGRES_ADMIN_URL, postgres_database, require_postgres
from tests.loop_timers import reads_from, timers, until


class Recorder:
    """Stands in for the dispatcher: notes each wake-up; a job for spec 13 makes it raise."""

    def __init__(self) -> None:
        self.jobs: list[int] = []
        self.rounds = 0
        self.woken = asyncio.Event()

    def job_created(self, spec_id: int) -> None:
        if spec_id == 13:
            raise RuntimeError("the dispatcher failed on spec 13")
        self.jobs.append(spec_id)
        self.woken.set()

    def capacity_freed(self) -> None:
        self.rounds += 1


@contextlib.contextmanager
def ascii_database() -> Iterator[str]:
    """A fresh database in the SQL_ASCII encoding, where a NOTIFY payload may carry bytes that
    do not decode: the listener's driver raises UnicodeDecodeError, not a psycopg error."""
    require_postgres()
    name = f"benchrunner_test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(
            sql.SQL(
                "CREATE DATABASE {} ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' "
                "TEMPLATE template0"
            ).format(sql.Identifier(name))
        )
    try:
        yield sa.make_url(POSTGRES_ADMIN_URL).set(database=name).render_as_string(False)
    finally:
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.mark.postgresql
def test_the_listener_survives_malformed_payloads_and_failing_callbacks() -> None:
    with postgres_database() as url:
        asyncio.run(_survives_payloads(url))


async def _survives_payloads(url: str) -> None:
    recorder = Recorder()
    listener = PostgresWakeups(recorder, url)
    sender = PostgresWakeups(Recorder(), url)
    await listener.start()
    await sender.start()
    try:
        assert listener.listening.is_set()
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            for payload in (
                "garbage",
                "",
                "other job ²",  # a digit to str.isdigit, not to int()
                "other job -1",
                "other job 13",  # the callback raises
                "x" * 7000,
            ):
                await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))
        # Delivered after all of those, on the same listening connection.
        sender.job_created(7)
        await asyncio.wait_for(recorder.woken.wait(), 30)
        assert recorder.jobs == [7]
        assert recorder.rounds == 5  # each malformed payload: a full round, always safe
        assert all(not task.done() for task in listener._tasks)
    finally:
        await sender.stop()
        await listener.stop()


@pytest.mark.postgresql
def test_the_listener_reconnects_after_a_payload_that_does_not_decode() -> None:
    with ascii_database() as url:
        asyncio.run(_survives_decoding(url))


async def _survives_decoding(url: str) -> None:
    recorder = Recorder()
    listener = PostgresWakeups(recorder, url)
    sender = PostgresWakeups(Recorder(), url)
    await listener.start()
    await sender.start()
    try:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute("SELECT pg_notify(%s, 'other job 1' || chr(255))", (CHANNEL,))
        # Wake-ups sent while the listener reconnects are lost (it then gives a full round
        # instead), so the other replica keeps sending until one arrives.
        deadline = time.monotonic() + 30
        while not recorder.woken.is_set() and time.monotonic() < deadline:
            sender.job_created(7)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(recorder.woken.wait(), 0.5)
        assert recorder.jobs and set(recorder.jobs) == {7}
        assert recorder.rounds >= 1  # the full round after reconnecting
    finally:
        await sender.stop()
        await listener.stop()


@pytest.mark.postgresql
def test_a_listen_delivers_each_channel_in_order_and_raises_once_its_connection_is_lost() -> None:
    with postgres_database() as url:
        asyncio.run(_listen_then_lose(url))


async def _listen_then_lose(url: str) -> None:
    listening = await connect_session(url)
    try:
        received = await listen(listening, ["first", "second"])
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            for channel, payload in (("first", "a"), ("second", "b"), ("first", "c")):
                await conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))
            got = [
                (notify.channel, notify.payload)
                for notify in [await asyncio.wait_for(anext(received), 30) for _ in range(3)]
            ]
            assert got == [("first", "a"), ("second", "b"), ("first", "c")]
            await conn.execute("SELECT pg_terminate_backend(%s)", (listening.info.backend_pid,))
        with pytest.raises(psycopg.OperationalError):
            await asyncio.wait_for(anext(received), 30)
    finally:
        await listening.close()


@pytest.mark.postgresql
def test_a_notification_read_before_the_listen_is_iterated_comes_first() -> None:
    """One that psycopg reads with another statement's answer (its notify handler) is kept and
    yielded before any the socket brings later."""
    with postgres_database() as url:
        asyncio.run(_listen_read_early(url))


async def _listen_read_early(url: str) -> None:
    listening = await connect_session(url)
    try:
        received = await listen(listening, ["early"])
        await listening.execute("SELECT pg_notify('early', 'before')")  # read with its answer
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute("SELECT pg_notify('early', 'after')")
        got = [(await asyncio.wait_for(anext(received), 30)).payload for _ in range(2)]
        assert got == ["before", "after"]
    finally:
        await listening.close()


@pytest.mark.postgresql
def test_a_listen_sleeps_on_its_socket_between_notifications() -> None:
    """No timer of its own: an idle LISTEN leaves the event loop nothing to run."""
    with postgres_database() as url:
        asyncio.run(_listen_idle(url))


async def _listen_idle(url: str) -> None:
    listening = await connect_session(url)
    try:
        received = await listen(listening, ["idle"])
        waiting = asyncio.ensure_future(anext(received))
        await until(lambda: reads_from(asyncio.get_running_loop(), listening.pgconn.socket))
        assert not waiting.done()
        # psycopg's notifies() arms a 0.1 s timer as it starts to wait
        assert not timers(asyncio.get_running_loop())
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
    finally:
        await listening.close()


@contextlib.contextmanager
def silent_server() -> Iterator[int]:
    """A loopback TCP port that accepts connections into its backlog and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield int(sock.getsockname()[1])


def test_connecting_to_a_database_that_never_answers_times_out() -> None:
    with silent_server() as port:
        url = f"postgresql://benchrunner:secret-password@127.0.0.1:{port}/benchrunner"

        async def attempt() -> BaseException:
            try:
                await asyncio.wait_for(connect_session(url), CONNECT_TIMEOUT * 6)
            except psycopg.OperationalError as exc:
                return exc
            raise AssertionError("connected to a server that never answers")

        started = time.monotonic()
        error = asyncio.run(attempt())
        assert time.monotonic() - started < CONNECT_TIMEOUT * 6
        assert "secret-password" not in describe_error(error, url)


def test_the_sweeper_leadership_gives_up_on_a_database_that_never_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with silent_server() as port:
        url = f"postgresql://benchrunner:secret-password@127.0.0.1:{port}/benchrunner"
        leadership = AdvisoryLockLeadership(url)
        with caplog.at_level(logging.DEBUG, logger="benchrunner.server.recovery.leadership"):
            assert asyncio.run(asyncio.wait_for(leadership.hold(), 60)) is False
        assert not leadership.leader
        assert "secret-password" not in caplog.text


def test_session_connections_get_a_timeout_and_keepalives_unless_the_url_sets_them() -> None:
    params = psycopg.conninfo.conninfo_to_dict(session_conninfo("postgresql://u@db:5432/x"))
    assert params["connect_timeout"] == str(CONNECT_TIMEOUT)
    assert params["keepalives"] == "1"
    assert params["host"] == "db" and params["dbname"] == "x"
    own = session_conninfo("postgresql://u@db/x?connect_timeout=20")
    assert psycopg.conninfo.conninfo_to_dict(own)["connect_timeout"] == "20"


def test_errors_are_described_without_the_password() -> None:
    url = "postgresql://u:hunter2@db/x"
    described = describe_error(OSError("could not log in as u with hunter2"), url)
    assert described == "OSError: could not log in as u with ***"
