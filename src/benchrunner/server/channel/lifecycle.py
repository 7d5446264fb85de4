"""The job lifecycle as the runner protocols drive it: claim, running, heartbeat, terminal
results, cancellation. Transport-agnostic: the channel calls it today; the per-job endpoints of
docs/decisions/per-job-transport.md call the same methods.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

from benchrunner.core.events import JobEvent
from benchrunner.core.signatures import SignatureRefused
from benchrunner.core.states import FINISHED, IN_FLIGHT, JobStatus
from benchrunner.core.timeouts import TimeoutVerdict, hard_timeout_exceeded
from benchrunner.protocol import (
    Ack,
    Canceled,
    Completed,
    Error,
    Failed,
    JobAssigned,
    JsonJobOutput,
)
from benchrunner.server.channel.heartbeats import HeartbeatLedger
from benchrunner.server.context import ServerContext
from benchrunner.server.logs.live_logs import LiveLogs
from benchrunner.server.moves import move as moves
from benchrunner.server.moves.move import Move, Moves
from benchrunner.server.processing.completion import (
    ToProcess,
    complete,
    fail_with_output,
    keep_late_output,
    process_completed,
)
from benchrunner.server.processing.judgment import JudgmentLater, judge_later
from benchrunner.server.processing.outputs import (
    OutputMissing,
    UnusableOutput,
    belongs_in_row,
    encode_output,
    has_job_output,
    load_job_output,
    store_blob,
)
from benchrunner.server.processing.replays import compares_hashes, judge, on_record
from benchrunner.server.processing.result_signatures import check_signed_result
from benchrunner.server.recovery.watchdog import Watchdog
from benchrunner.server.runners.pull_tokens import PullTokens
from benchrunner.server.scheduling.dispatcher import Dispatcher
from benchrunner.server.store import claims, jobs, runners, transitions
from benchrunner.server.store.job_logs import LogTail
from benchrunner.server.store.runners import RunnerRow
from benchrunner.server.store.signed_outputs import SignedOutput

log = logging.getLogger("benchrunner.transitions")


class ResendLater(Exception):
    """A result that could not be applied now: the runner must keep it and resend it (an
    ``error`` would make it drop the result)."""


SPEC_CACHE_SECONDS = 5.0
UNDELIVERED_STOP_TIMEOUT = 5.0
"""Seconds a stop waits for the undelivered claims it caused to return to the queue."""
LOST_JOB_ROUNDS = 3
"""Claims a ``ready`` makes at most, failing the runner's lost jobs before each but the first
(``wait_for_job``); past that it gets ``no_job`` and its next ``ready`` tries again."""


@dataclasses.dataclass(frozen=True)
class Parts:
    """What the protocol handlers use, built by the app factory (``app/wiring.py``)."""

    moves: Moves
    watchdog: Watchdog
    heartbeats: HeartbeatLedger
    live_logs: LiveLogs
    dispatcher: Dispatcher
    pull_tokens: PullTokens
    confirming: Callable[[], None]
    """A completion opened a confirmation run (its driver's ``changed``)."""


class Lifecycle:
    """The protocol handlers; the services they use are wired, started and stopped by the app
    factory (``app/wiring.py``)."""

    def __init__(self, ctx: ServerContext, parts: Parts) -> None:
        self.ctx = ctx
        self.moves = parts.moves
        self.watchdog = parts.watchdog
        self.heartbeats = parts.heartbeats
        self.live_logs = parts.live_logs
        self.dispatcher = parts.dispatcher
        self._pull_tokens = parts.pull_tokens
        self._confirming = parts.confirming
        self._spec_cache: dict[int, tuple[float, frozenset[int]]] = {}
        """Per connected runner; dropped when its channel ends (``runner_disconnected``)."""
        self._runner_orgs: dict[int, int | None] = {}
        """The organization of each runner waiting here, as its channel read it: its claims
        are one statement, which checks it (``store.claims.job_claim_alone``)."""
        self._undelivered: set[asyncio.Task[None]] = set()
        self._after_ack: dict[uuid.UUID, ToProcess] = {}
        """Completed jobs whose output is processed once their ``ack`` was sent
        (``acknowledged``)."""

    async def settle(self) -> None:
        """Wait, at most ``UNDELIVERED_STOP_TIMEOUT``, for the work run beside the channels
        (undelivered claims going back to the queue, among others) to finish."""
        if self._undelivered:
            await asyncio.wait(set(self._undelivered), timeout=UNDELIVERED_STOP_TIMEOUT)

    # ------------------------------------------------------------ hooks

    def runner_disconnected(self, runner_id: int) -> None:
        """The runner has no channel left on this server: drop what was kept for it."""
        self._spec_cache.pop(runner_id, None)
        self._runner_orgs.pop(runner_id, None)

    def undelivered(self, job: jobs.JobRow) -> None:
        """A job was claimed for a channel that ended (or was superseded) before the job was
        sent: no runner has it, so it goes back to the queue now, for any runner on any replica,
        instead of failing after the heartbeat timeout (a replica shutting down ends every
        channel at once, while claims for them may still be committing)."""
        self._track(self._return_undelivered(job), f"undelivered-{job.id}")

    def _track(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """Run ``work`` beside the channel, not before its answer; a stop waits for it
        (``UNDELIVERED_STOP_TIMEOUT``)."""
        task = asyncio.create_task(work, name=name)
        self._undelivered.add(task)
        task.add_done_callback(self._undelivered.discard)

    async def _fail_unassignable(self, job: jobs.JobRow, error: Exception) -> None:
        reason = f"the server could not prepare the job for its runner: {error}"[:2000]
        try:
            now = self.ctx.clock.now()
            await self.moves.move(Move(job, JobStatus.FAILED, now, reason, reason=reason))
        except Exception:
            log.exception("failing job %s failed; its timeout takes over", job.uuid)
            self.watchdog.watch(job.id)

    async def _judge(self, later: JudgmentLater) -> None:
        """A report whose metrics were stored with its result is judged, its job moved to
        ``processed``, and it looks back over its series, once acknowledged
        (``judgment.judge_later``)."""
        try:
            judged = await judge_later(self.ctx.db, later, self.ctx.clock.now())
        except Exception:
            judged = None
            log.exception("judging report %s failed", later.report_id)
        if judged is None or not judged.moved:
            # Left ``completed`` (its last write failed, or the rest of its metrics were not
            # stored): the background processor judges it again, as recovery would.
            if later.job is not None and later.processed is not None:
                self.moves.hooks.awaits_processing(later.job.id)
            return
        if later.processed is not None:
            self.moves.done(later.processed)
        if judged.confirming:
            self._confirming()

    def acknowledged(self, job_uuid: uuid.UUID) -> None:
        """The reply to the runner's terminal message for ``job_uuid`` was sent (or could not
        be): a job completed by it is processed now, beside the channel, never before an
        ``ack`` of its result was sent (``completion``). That ack may be a resend's: a runner
        that resends its result on a second connection is acked there once the result is on
        disk, and that connection's call processes the job, whether the first connection's
        ack was sent yet or never is (the job is processed once whichever comes first)."""
        acked = self._after_ack.pop(job_uuid, None)
        if acked is not None:
            self._track(self._process(acked), f"processing-{acked.job.id}")

    async def _process(self, acked: ToProcess) -> None:
        """``completion.process_completed``; a failure leaves the job ``completed``, for the
        background processor."""
        try:
            recorded = await process_completed(self.ctx.db, acked, self.ctx.clock.now())
        except Exception:
            log.exception(
                "processing job %s after its ack failed; it is processed later", acked.job.uuid
            )
            self.moves.hooks.awaits_processing(acked.job.id)
            return
        if recorded is None:
            return
        if recorded.move is not None:
            self.moves.done(recorded.move)
        if recorded.judge is not None:
            await self._judge(recorded.judge)

    async def _return_undelivered(self, job: jobs.JobRow) -> None:
        reason = "undelivered: the runner's channel closed before the claimed job was sent"
        try:
            now = self.ctx.clock.now()
            event = JobEvent.RETURNED
            await self.moves.move(
                Move(job, JobStatus.PENDING, now, reason, event=event, reason=reason)
            )
        except Exception:
            log.exception("returning undelivered job %s failed; its timeout takes over", job.uuid)
            self.watchdog.watch(job.id)

    def detach(self, job_id: int) -> None:
        """The connection holding this job is gone: the disconnect timeout takes over.

        An armed timer is kept: it re-reads ``last_heartbeat`` when it fires, so a runner that
        reconnects and heartbeats keeps its job, and one that only reconnects does not.
        """
        self.watchdog.watch(job_id)

    # ------------------------------------------------------------ claim

    async def claim(
        self, runner_id: int, runner_slug: str, nonce: str, templates: bool
    ) -> claims.Claim | None:
        now = self.ctx.clock.now()
        claim = await moves.claim_for_runner(
            self.ctx.db,
            runner_id,
            self._runner_orgs.get(runner_id),
            nonce,
            now,
            runner_slug,
            templates,
            org_known=runner_id in self._runner_orgs,
        )
        if claim is not None:
            self.moves.done(Move.claimed(claim, runner_slug))
        return claim

    async def wait_for_job(
        self, runner: RunnerRow, poll_timeout: float, *, templates: bool = True
    ) -> tuple[jobs.JobRow, JobAssigned] | None:
        """The job claimed for ``runner`` within ``poll_timeout`` seconds, and its message; a
        template job only if ``templates`` (the runner announced that it runs them)."""
        spec_ids = await self._spec_ids(runner.id)
        self._runner_orgs[runner.id] = runner.organization_id
        loop = asyncio.get_running_loop()
        deadline = loop.time() + poll_timeout
        claim = None
        for _attempt in range(LOST_JOB_ROUNDS):
            try:
                claim = await self.dispatcher.wait_for_job(
                    runner.id,
                    runner.slug,
                    spec_ids,
                    runner.organization_id,
                    max(0.0, deadline - loop.time()),
                    templates=templates,
                )
                break
            except claims.RunnerHoldsJobs:
                # A runner asks for work only when it holds none: whatever is still in flight
                # for it is lost, whether its channel knew it or it was claimed into an older,
                # half-open one. Its claim refused to claim while they were (one statement on
                # PostgreSQL, no read of its own): they are failed first, then it claims again.
                for lost in await self.ctx.db.read(jobs.job_list_in_flight_for_runner, runner.id):
                    await self.runner_abandoned(runner, lost)
        if claim is None:
            return None
        try:
            return claim.job, self.assignment(runner, claim)
        except Exception as exc:
            # Not back to the queue: it would come straight back here, ahead of every other job.
            self._track(self._fail_unassignable(claim.job, exc), f"unassignable-{claim.job.id}")
            raise

    async def _spec_ids(self, runner_id: int) -> frozenset[int]:
        """A runner's specs, re-read at most every few seconds: they only steer wake-ups (the
        claim query itself always reads the live association)."""
        now = self.ctx.monotonic.monotonic()
        cached = self._spec_cache.get(runner_id)
        if cached is not None and cached[0] > now:
            return cached[1]
        spec_ids = await self.ctx.db.read(runners.runner_spec_ids, runner_id)
        self._spec_cache[runner_id] = (now + SPEC_CACHE_SECONDS, spec_ids)
        return spec_ids

    def assignment(self, runner: RunnerRow, claim: claims.Claim) -> JobAssigned:
        job = claim.job
        now = self.ctx.clock.now()
        token = self._pull_tokens.for_job(runner.uuid, job.project_uuid, now)
        return JobAssigned(
            uuid=job.uuid,
            spec=runners.spec_json(claim.spec),
            config=job.config,
            oci_token=token,
            timeout=job.timeout,
            created=job.created,
            nonce=job.nonce or "",
        )

    # ------------------------------------------------------------ running and heartbeats

    async def running(
        self, runner: RunnerRow, job: jobs.JobRow
    ) -> tuple[JobStatus | None, jobs.JobRow]:
        """The job's status after the runner's ``running`` (None: not this runner's job), and
        ``job`` with that status and ``started`` exactly as stored, which its report's times
        are later taken from (``completion``)."""
        now = self.ctx.clock.now()
        # The move stores the job's liveness as a heartbeat's write would: what it returns is
        # remembered, so the job's heartbeats are answered from memory from the first on.
        self.heartbeats.expect(job.id)
        move = Move.running(job, runner.id, runner.slug, now)
        try:
            done = await self.ctx.db.write_each(moves.apply_running, move)
            if done is not None and done.moved:
                self.moves.done(move)
        except BaseException:
            self.heartbeats.forget(job.id)
            raise
        if done is None:
            self.heartbeats.forget(job.id)
            return None, job
        job = dataclasses.replace(job, status=done.status, started=done.started)
        liveness = transitions.Liveness(done.status, done.started, job.timeout)
        self.heartbeats.written(job.id, now, liveness, runner.id)
        resent = not done.moved and done.status == JobStatus.RUNNING
        if resent and hard_timeout_exceeded(
            job.started, job.timeout, self.ctx.job_timeout_grace, now
        ):  # a resent `running` refreshes liveness, never the hard timeout
            await self.watchdog.enforce(job, TimeoutVerdict.RAN_TOO_LONG)
            return JobStatus.CANCELED, dataclasses.replace(job, status=JobStatus.CANCELED)
        return done.status, job

    async def heartbeat(self, runner: RunnerRow, job: jobs.JobRow) -> bool:
        """Refresh liveness. True means: answer ``cancel`` (the job was canceled, or ran past its
        hard timeout and is canceled now).

        A running job's heartbeats are answered from what its ``running`` (or, for a job not
        remembered here, its first heartbeat's write) returned, and stored for all jobs
        together, once per write interval (``heartbeats`` says why that keeps every timeout
        and cancel exact)."""
        now = self.ctx.clock.now()
        overdue = self.heartbeats.beat(job.id, now)
        if overdue is None:
            try:
                liveness = await self.ctx.db.write_each(
                    transitions.job_touch, job.id, now, runner.id
                )
            except BaseException:
                self.heartbeats.forget(job.id)
                raise
            if liveness is None or liveness.status not in IN_FLIGHT:
                self.heartbeats.forget(job.id)
                return True
            self.heartbeats.written(job.id, now, liveness, runner.id)
            overdue = hard_timeout_exceeded(
                liveness.started, liveness.timeout, self.ctx.job_timeout_grace, now
            )
        if overdue:
            await self.watchdog.enforce(job, TimeoutVerdict.RAN_TOO_LONG)
            return True
        return False

    # ------------------------------------------------------------ terminal results

    async def deliver(
        self,
        runner: RunnerRow,
        message: Completed | Failed | Canceled,
        known: jobs.JobRow | None = None,
        log: LogTail | None = None,
    ) -> Ack | Error:
        """Apply a terminal message; resends are answered with ``ack`` and change nothing.
        ``log``, the job's last live-log chunks, is stored with the move that ends the job
        (``log.stored`` None: no move was tried, the caller stores it apart).
        An ``ack`` is returned only once what it acknowledges is on disk: for a ``completed``,
        the job ``completed`` with its output; its processing follows once the caller sent the
        ``ack`` (``acknowledged``, which the caller calls whatever the reply). From a runner with a
        public key, a message whose signature, nonce or output hash does not hold is answered
        with ``error`` and changes nothing.

        ``known`` is the caller's latest view of the job, saving a read; a stale status is
        harmless because every transition is a compare-and-set that re-reads on a miss.
        """
        job = known if known is not None and known.uuid == message.job else None
        if job is None:
            job = await self.ctx.db.read(jobs.job_get_by_uuid, message.job)
        if job is None or job.runner_id != runner.id:
            return Error(message=f"job {message.job} is not claimed by this runner")
        try:
            signed = check_signed_result(runner, job, message)
        except SignatureRefused as exc:
            return Error(message=f"result of job {job.uuid} refused: {exc}")
        reply: Ack | Error
        if isinstance(message, Completed):
            reply = await self._completed(runner, job, message, signed, log)
        elif isinstance(message, Failed):
            reply = await self._failed(runner, job, message, signed, log)
        else:
            reply = await self._canceled(runner, job, message, signed, log)
        if isinstance(reply, Ack):
            # The runner deletes its spooled result on `ack`: the status change behind it
            # must survive a power cut first (the output blob is synced when stored).
            try:
                await self.ctx.db.durable()
            except BaseException:
                acked = self._after_ack.pop(job.uuid, None)  # no ack: the processor's
                if acked is not None:
                    self.moves.hooks.awaits_processing(job.id)
                raise
        return reply

    async def _blob_unless_small(self, job: jobs.JobRow, data: bytes) -> bytes | None:
        """``data`` when it belongs in a row (written with the status change); otherwise it is
        written to the blob store here, synced, before the status change, and None."""
        if belongs_in_row(data):
            return data
        await asyncio.to_thread(store_blob, self.ctx.blobs, job, data)
        return None

    async def _judge_finished(
        self, job: jobs.JobRow, message: Completed | Failed | Canceled, signed: SignedOutput | None
    ) -> Ack | Error | None:
        """The reply to a terminal message for a job that has left flight (``replays``), or
        None when it is a late result to apply."""
        output: JsonJobOutput | None = None
        unreadable = False
        if job.status != JobStatus.CANCELED and not compares_hashes(job, message, signed):
            try:
                output = await load_job_output(self.ctx, job)
            except OutputMissing:
                pass
            except UnusableOutput:
                unreadable = True  # processing gave that job its error already
        by_runner = job.status == JobStatus.CANCELED and await self.ctx.db.read(
            transitions.job_canceled_by_runner, job.id
        )
        record = on_record(job, output, unreadable=unreadable, canceled_by_runner=by_runner)
        reply = judge(job, record, message, signed)
        if isinstance(reply, Ack):
            # What it acknowledges was stored by another delivery, maybe without waiting
            # for the disk (a grouped commit, perhaps another replica's): on disk first.
            await self.ctx.db.flush_wal()
        return reply

    async def _completed(
        self,
        runner: RunnerRow,
        job: jobs.JobRow,
        message: Completed,
        signed: SignedOutput | None,
        log: LogTail | None,
    ) -> Ack | Error:
        ack = Ack(job=job.uuid)
        stored = False
        row_output: bytes | None = None
        if job.status == JobStatus.CLAIMED:
            # The runner's `running` was lost with a connection; its result is still real.
            _, job = await self.running(runner, job)
        data = encode_output(JsonJobOutput(results=message.results, noise=message.noise))
        for _attempt in range(3):
            if job.status != JobStatus.RUNNING:
                if job.status not in FINISHED:
                    return Error(
                        message=f"job {job.uuid} is {job.status.wire}: "
                        "send running before completed"
                    )
                reply = await self._judge_finished(job, message, signed)
                if reply is not None:
                    return reply
            # Running, or failed by the server: a late result replaces the failure.
            if not stored:  # durable before the transition, so an ack means it is safe
                row_output = await self._blob_unless_small(job, data)
                stored = True
            now = self.ctx.clock.now()
            late = job.status == JobStatus.FAILED
            args = (job, now, runner.slug, late, row_output, signed, log)
            done = await self.ctx.db.write_acked_each(complete, *args)
            if done.completed:
                if done.parse is None:
                    self.moves.done(*done.moves)
                else:  # processed here once the ack is sent (``acknowledged``)
                    self._after_ack[job.uuid] = done.parse
                    self.moves.done(*done.moves, judging=(job.id,))
                return ack
            reread = await self.ctx.db.read(jobs.job_get, job.id)
            if reread is None:
                break
            job = reread
        raise ResendLater(f"job {job.uuid} changed concurrently three times")

    async def _failed(
        self,
        runner: RunnerRow,
        job: jobs.JobRow,
        message: Failed,
        signed: SignedOutput | None,
        tail: LogTail | None,
    ) -> Ack | Error:
        data = encode_output(
            JsonJobOutput(results=message.results, error=message.error, noise=message.noise)
        )
        if job.status in IN_FLIGHT:
            row_output = await self._blob_unless_small(job, data)
            now = self.ctx.clock.now()
            reason = f"runner reported failure: {message.error}"[:2000]
            failed = Move(
                job,
                JobStatus.FAILED,
                now,
                reason,
                runner.slug,
                runner=runner.slug,
                reason=reason,
                log=tail,
            )
            if await self.ctx.db.write_acked(fail_with_output, failed, row_output, signed):
                self.moves.done(failed)
            return Ack(job=job.uuid)
        reply = await self._judge_finished(job, message, signed)
        if reply is not None:
            return reply
        # Failed by the server: the runner's failure adds its output, unless one is stored.
        if not await has_job_output(self.ctx, job):
            row_output = await self._blob_unless_small(job, data)
            if row_output is not None or signed is not None:
                await self.ctx.db.write(keep_late_output, job.id, row_output, signed)
        return Ack(job=job.uuid)

    async def _canceled(
        self,
        runner: RunnerRow,
        job: jobs.JobRow,
        message: Canceled,
        signed: SignedOutput | None,
        tail: LogTail | None,
    ) -> Ack | Error:
        if job.status not in IN_FLIGHT:
            return await self._judge_finished(job, message, signed) or Ack(job=job.uuid)
        now = self.ctx.clock.now()
        why = "runner canceled the job"
        await self.moves.move(
            Move(job, JobStatus.CANCELED, now, why, runner.slug, runner=runner.slug, log=tail)
        )
        return Ack(job=job.uuid)

    # ------------------------------------------------------------ users

    async def cancel(self, job: jobs.JobRow, actor: str) -> bool:
        """A user cancels a pending, claimed or running job. Its runner is told in the reply to
        its next heartbeat (or ``running``), as the published protocol has it: replies stay in
        the order of the runner's messages, so the runner can match each to what it sent."""
        now = self.ctx.clock.now()
        why = f"canceled by {actor}"
        return await self.moves.move(
            Move(job, JobStatus.CANCELED, now, why, reason=why, requested_by=actor)
        )

    async def runner_abandoned(self, runner: RunnerRow, job: jobs.JobRow) -> None:
        """The runner asked for new work while this job was in flight: it has lost the job. One
        still only claimed never started there (the runner had not said it runs it: its channel
        died before the job reached it, or the claim's answer was lost after its commit), so it
        goes back to the queue; one the runner had started fails."""
        now = self.ctx.clock.now()
        if job.status == JobStatus.CLAIMED:
            reason = (
                "undelivered: the runner asked for work while this job, claimed for it, "
                "had not started"
            )
            returned = Move(
                job, JobStatus.PENDING, now, reason, event=JobEvent.RETURNED, reason=reason
            )
            if await self.moves.move(returned):
                return
        reason = "runner_lost_job: the runner asked for a new job while this one was in flight"
        await self.moves.move(
            Move(job, JobStatus.FAILED, now, reason, runner.slug, runner=runner.slug, reason=reason)
        )
