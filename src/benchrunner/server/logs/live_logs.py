"""The live log's chunks on their way to the database: held in memory, written in batches.

A runner sends a running job's output every 250 ms or so; storing each chunk on its own cost a
transaction and a durable commit per chunk. Here a chunk is only noted in memory when it
arrives (no query, no reply), and one task per server writes every job's pending chunks
together, in one transaction (two statements) at most once a second, a chunk about a second
after it arrived, committed without waiting for the disk (``Database.write_lazy``). A job's last
chunks are stored by the move its terminal result makes, ahead of it in its transaction or, on
PostgreSQL, in its own statement (``take_job``, ``store.job_logs.LogTail``: a finished job's log
never grows, and a follower that sees the job finished has seen its whole log): a job shorter
than a second has its whole log stored so, at no transaction of its own (on PostgreSQL at no
statement of its own). A job's chunks are
written at once when its runner's session ends.
Nothing of it is on the path of an ``ack``: a heartbeat's or a ``running``'s reply never waits
for a log write, and a result waits for none but a write under way of its own job's earlier
chunks, which its last ones must follow.

What holds (docs/explanation/live-logs.md):

- **Within about a second.** Readers of this process (the log endpoint, the console, ``follow``)
  are woken after each write (``LogWatch``); another replica's readers see the chunks once they
  are written, as before.
- **Resends and gaps.** The chunks are stored by offset as before (``job_log_store``): what is
  stored is skipped, a chunk past the end records a gap first.
- **A killed server.** It loses the chunks of at most its last second, which the runner resends
  on its next connection from its resend window (the last 256 KiB it sent): a job printing less
  than that in a second loses nothing; one printing more shows the loss as a gap marker.
- **The size limit.** A chunk's bytes past the limit are never held; once a stream's limit is
  stored its later chunks cost nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Iterable, Iterator
from dataclasses import dataclass, field

from benchrunner.protocol import Log
from benchrunner.server.context import ServerContext
from benchrunner.server.store.job_logs import Flushed, LogTail, PendingChunk, job_log_store
from benchrunner.server.tasks import cancel_and_wait

log = logging.getLogger(__name__)

INTERVAL = 1.0
"""Seconds between two writes of the pending chunks."""
BATCH_BYTES = 256 * 1024
"""Bytes of chunks per transaction, about: a job printing megabytes a second has its second's
chunks written in several transactions in turn, so that none holds SQLite's writer long."""

Refuse = Callable[[Log], Coroutine[object, object, None]]


@dataclass(frozen=True)
class Taken:
    """A job's last chunks, taken for its terminal result (``LiveLogs.take_job``)."""

    tail: LogTail
    last: Log | None
    """The last chunk received: what a refusal answers."""
    refuse: Refuse | None


@dataclass
class _Pending:
    chunks: list[PendingChunk] = field(default_factory=list)
    size: int = 0
    last: Log | None = None
    """The last chunk received: what a refusal answers."""
    refuse: Refuse | None = None
    """Tells the sender that the job is no longer in flight."""


class LiveLogs:
    """The chunks this process received and has not written yet, by job."""

    def __init__(self, ctx: ServerContext, interval: float = INTERVAL) -> None:
        self.ctx = ctx
        self.interval = interval
        self._pending: dict[int, _Pending] = {}
        self._full: set[tuple[int, str]] = set()
        """(job id, stream) whose log reached its size limit: later chunks are dropped."""
        self._writing = asyncio.Lock()
        """One write at a time: a job's chunks are stored in the order they came."""
        self._writing_jobs: frozenset[int] = frozenset()
        """The jobs whose chunks the write under way took: a job's last chunks wait for that
        write only if it is one of them (``take_job``)."""
        self._wanted = asyncio.Event()
        self._wanted_since = 0.0
        """When ``_wanted`` was last set: the oldest chunk not taken by a write came then."""
        self._task: asyncio.Task[None] | None = None
        self._refusals: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="live-logs")

    async def stop(self) -> None:
        """Stop the task and write what is pending."""
        await cancel_and_wait(self._task)
        self._task = None
        await self.flush()

    def add(self, job_id: int, message: Log, refuse: Refuse | None = None) -> None:
        """Hold a chunk of a job in flight; it is written within ``interval``."""
        stream = message.stream
        if (job_id, stream) in self._full:
            return
        raw = message.data.encode()
        end = message.offset + len(raw)
        limit = self.ctx.settings.job_log_max_bytes
        pending = self._pending.get(job_id)
        if pending is None:
            pending = self._pending[job_id] = _Pending()
        elif message.offset >= limit and any(
            chunk.stream == stream and chunk.end > limit for chunk in pending.chunks
        ):
            return  # past the limit, and the marker is already on its way
        raw = raw[: max(0, limit - message.offset)]
        pending.chunks.append(PendingChunk(stream, message.offset, raw, end))
        pending.size += len(raw)
        pending.last, pending.refuse = message, refuse
        if not self._wanted.is_set():
            self._wanted_since = self.ctx.monotonic.monotonic()
            self._wanted.set()

    def forget(self, job_id: int) -> None:
        """The job's session is done with it: drop what was learnt of its streams."""
        self._full.discard((job_id, "stdout"))
        self._full.discard((job_id, "stderr"))

    async def take_job(self, job_id: int) -> Taken | None:
        """The job's pending chunks, taken out for the transaction of its terminal result
        (``LogTail``, stored with its move), or None when none are pending. Only if a
        write under way took earlier chunks of this job does this wait for it (the tail must
        follow them); other jobs' writes never delay a result. All but the last
        ``BATCH_BYTES`` or so of what is pending are stored before this returns (``_parts``)."""
        while job_id in self._writing_jobs:
            async with self._writing:
                pass
        pending = self._pending.pop(job_id, None)
        if pending is None:
            return None
        parts = _parts(pending)
        if len(parts) > 1:
            async with self._writing:
                with self._writing_of((job_id,)):
                    for part in parts[:-1]:
                        await self._store({job_id: part})
        last = parts[-1]
        tail = LogTail(job_id, last.chunks, self.ctx.settings.job_log_max_bytes)
        return Taken(tail, last.last, last.refuse)

    async def settle(self, taken: Taken) -> None:
        """After the terminal result: store the tail apart if no move's transaction tried it
        (the result moved nothing: it was refused, or repeated a finished job), and tell the
        sender if its chunks were refused (the job was no longer in flight)."""
        tail = taken.tail
        if tail.stored is None:
            async with self._writing:
                pending = _Pending(tail.chunks)
                with self._writing_of((tail.job_id,)):
                    flushed = (await self._store({tail.job_id: pending})).get(tail.job_id)
            tail.stored = flushed is not None and flushed.in_flight
        else:
            self.ctx.log_watch.notify(tail.job_id)
        if not tail.stored and taken.refuse is not None and taken.last is not None:
            await taken.refuse(taken.last)

    async def flush_job(self, job_id: int) -> None:
        """Write the job's pending chunks now; its earlier chunks, taken by a write under way,
        are stored when this returns. If the job is no longer in flight, its sender is told
        before this returns."""
        async with self._writing:
            pending = self._pending.pop(job_id, None)
            if pending is None:
                return
            with self._writing_of((job_id,)):
                for part in _parts(pending):
                    flushed = (await self._store({job_id: part})).get(job_id)
        if flushed is not None and not flushed.in_flight and pending.refuse and pending.last:
            await pending.refuse(pending.last)

    async def flush(self) -> None:
        """Write every job's pending chunks."""
        async with self._writing:
            taken, self._pending = self._pending, {}
            with self._writing_of(taken):
                await self._store_taken(taken)

    @contextlib.contextmanager
    def _writing_of(self, job_ids: Iterable[int]) -> Iterator[None]:
        """The jobs whose chunks the write made in the block (under ``_writing``) took."""
        self._writing_jobs = frozenset(job_ids)
        try:
            yield
        finally:
            self._writing_jobs = frozenset()

    async def _store_taken(self, taken: dict[int, _Pending]) -> None:
        batch: dict[int, _Pending] = {}
        size = 0
        for job_id, pending in taken.items():
            for part in _parts(pending):
                if batch and (size + part.size > BATCH_BYTES or job_id in batch):
                    await self._store_or_log(batch)
                    batch, size = {}, 0
                batch[job_id] = part
                size += part.size
        if batch:
            await self._store_or_log(batch)

    async def _run(self) -> None:
        clock = self.ctx.monotonic
        written = clock.monotonic() - self.interval
        while True:
            await self._wanted.wait()
            # A chunk waits an interval even when nothing was written in the last one: a job
            # shorter than that has its chunks stored by its result's move (``take_job``),
            # where a write at once would cost a transaction of its own.
            await clock.sleep_until(max(written, self._wanted_since) + self.interval)
            self._wanted.clear()
            written = clock.monotonic()
            await self.flush()

    async def _store_or_log(self, batch: dict[int, _Pending]) -> None:
        try:
            await self._store(batch, refuse=True)
        except Exception:
            log.exception("writing the live log of job %s failed", next(iter(batch)))

    async def _store(
        self, batch: dict[int, _Pending], *, refuse: bool = False
    ) -> dict[int, Flushed]:
        """Store ``batch`` in one transaction, or, if that fails, each job's in its own (one
        job's failure loses only its chunks). Readers are woken; if ``refuse``, the sender of
        a job that is no longer in flight is told."""
        try:
            outcome = await self._write(batch)
        except Exception:
            if len(batch) == 1:
                raise
            outcome = {}
            for job_id, pending in batch.items():
                try:
                    outcome.update(await self._write({job_id: pending}))
                except Exception:
                    log.exception("writing the live log of job %s failed", job_id)
        for job_id, flushed in outcome.items():
            self.ctx.log_watch.notify(job_id)
            self._full.update((job_id, stream) for stream in flushed.full)
            pending = batch[job_id]
            if refuse and not flushed.in_flight and pending.refuse and pending.last:
                task = asyncio.create_task(pending.refuse(pending.last))
                self._refusals.add(task)
                task.add_done_callback(self._refusals.discard)
        return outcome

    async def _write(self, batch: dict[int, _Pending]) -> dict[int, Flushed]:
        chunks = {job_id: pending.chunks for job_id, pending in batch.items()}
        limit = self.ctx.settings.job_log_max_bytes
        return await self.ctx.db.write_lazy(job_log_store, chunks, limit)

    def __len__(self) -> int:
        return len(self._pending)


def _parts(pending: _Pending) -> list[_Pending]:
    """``pending`` cut into parts of about ``BATCH_BYTES``, in order: each is stored in a
    transaction of its own, which reads what the one before stored."""
    if pending.size <= BATCH_BYTES:
        return [pending]
    parts: list[_Pending] = []
    part = _Pending()
    for chunk in pending.chunks:
        if part.chunks and part.size + len(chunk.raw) > BATCH_BYTES:
            parts.append(part)
            part = _Pending()
        part.chunks.append(chunk)
        part.size += len(chunk.raw)
    part.last, part.refuse = pending.last, pending.refuse  # one refusal, after the last part
    parts.append(part)
    return parts
