"""One job, executed on a thread of its own or the runner's job slot (``slot.py``) from claim
to a spooled terminal message.

The thread prepares the job with the executor (a duet job: both sides, ``duet.py``, whose
``iter`` rounds make ``2 * iter`` iterations), runs ``config.iter`` iterations under the job's
local timeout (counted from the end of setup), posting ``JobStarted`` (the agent sends
``running``) once the first iteration's process has started, cleans up, writes
the terminal message to the spool and posts ``JobFinished``. It always ends with exactly one
terminal message, whatever happens:

    all iterations exit 0                     completed
    an iteration exits non-zero               failed  "iteration i exited with code c"
                                              (``allow_failure``: the next iterations run, and
                                              the job is completed, as ``bencher run
                                              --allow-failure`` goes on past a failed one)
    an iteration cannot start                 failed  "iteration i could not start ..." (with
                                              no ``running`` before it if it is the first)
    setup refused (ExecutorError)             failed  with the executor's reason, no results
                                              (``running`` first if the executor starts
                                              before setup, as the sandbox does for its pull)
    config.timeout elapsed                    failed  "job exceeded its timeout of N s"
    server sent cancel                        canceled
    drain grace elapsed / second signal       failed  (a runner-side cancel is not ``canceled``,
                                                       which acknowledges a server cancel)
    a bug in the runner                       failed  "runner error: ..."
"""

from __future__ import annotations

import enum
import functools
import logging
import os
import threading
import time
from collections.abc import Callable

from benchrunner.core.clock import SystemThreadClock, ThreadClock
from benchrunner.protocol import (
    Canceled,
    Completed,
    Failed,
    IterationResult,
    JsonClaimedJob,
    NoiseCalibration,
    TerminalMessage,
)
from benchrunner.runner import duet, pickup_trace
from benchrunner.runner.clock_timer import ClockAlarm
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.events import AgentEvent, JobFinished, JobStarted
from benchrunner.runner.executors.base import Executor, ExecutorError, PreparedJob
from benchrunner.runner.idle_calibration import TakenCalibration
from benchrunner.runner.log_stream import LogStreamer
from benchrunner.runner.noise_guard import CalibrationError, NoiseProbe, guard
from benchrunner.runner.signing import ResultSigner
from benchrunner.runner.slot import JobSlot
from benchrunner.runner.spool import Spool

log = logging.getLogger(__name__)

CRASH_AFTER_SPOOL_ENV = "BENCHRUNNER_TEST_CRASH_AFTER_SPOOL"
CRASH_AFTER_SPOOL_EXIT = 17


class CancelReason(enum.Enum):
    SERVER = "server"
    TIMEOUT = "timeout"
    DRAIN = "drain"
    SHUTDOWN = "shutdown"


class JobRun:
    def __init__(
        self,
        job: JsonClaimedJob,
        *,
        executor: Executor,
        spool: Spool,
        post: Callable[[AgentEvent], None],
        cores: CorePlan,
        slot: JobSlot | None = None,
        logs: LogStreamer | None = None,
        noise: NoiseProbe | None = None,
        before: TakenCalibration | None = None,
        signer: ResultSigner | None = None,
        clock: ThreadClock | None = None,
        alarm: ClockAlarm | None = None,
    ) -> None:
        """``slot``: the thread to run on (default: a thread of the job's own); ``logs``: where
        the output goes live as it is written; ``noise``: the noise guard's calibration, run
        after the last iteration (None, or a spec with ``noise_guard`` off: no noise guard);
        ``before``: the calibration the agent took while idle (None: one is taken right before
        the first iteration, on the job's way); ``signer``: signs the terminal message;
        ``clock``: the agent's monotonic time, which ``before`` was taken on and the job's
        timeout is kept on; ``alarm``: where the timeout is armed (default: an alarm of the
        job's own, on ``clock``)."""
        self.job = job
        self.uuid = job.uuid
        self._executor = executor
        self._spool = spool
        self._post = post
        self._cores = cores
        self._lock = threading.Lock()
        self._prepared: PreparedJob | None = None
        self._reason: CancelReason | None = None
        self._slot = slot
        self._logs = logs
        self._noise = noise if job.spec.noise_guard else None
        self._before = before
        self._signer = signer
        self._clock = clock or SystemThreadClock()
        self._own_alarm = alarm is None
        self._alarm = alarm or ClockAlarm(self._clock, name=f"job-timeout-{self.uuid}")
        self._done = threading.Event()

    def start(self) -> None:
        if self._slot is not None:
            self._slot.run(self._run)
        else:
            threading.Thread(target=self._run, name=f"job-{self.uuid}", daemon=True).start()

    def join(self, timeout: float | None = None) -> bool:
        """True once the job's terminal message was spooled and ``JobFinished`` posted."""
        return self._done.wait(timeout)

    @property
    def cancel_reason(self) -> CancelReason | None:
        with self._lock:
            return self._reason

    def cancel(self, reason: CancelReason) -> None:
        """Stop the job for ``reason`` (the first reason given wins). Does not block."""
        with self._lock:
            if self._reason is not None:
                return
            self._reason = reason
            prepared = self._prepared
        if prepared is not None:
            prepared.cancel()
        else:
            self._executor.interrupt_setup(self.uuid)

    def _run(self) -> None:
        pickup_trace.step("slot")
        try:
            self._run_job()
        finally:
            if self._own_alarm:
                self._alarm.close()
            self._done.set()

    def _run_job(self) -> None:
        # Timers started from this thread inherit the housekeeping core (the slot's thread
        # is pinned once for all its jobs).
        if self._slot is None:
            self._cores.pin_to_housekeeping()
        started = time.monotonic()
        try:
            message = self._execute()
        except Exception as exc:
            log.exception("job %s: unexpected runner error", self.uuid)
            message = Failed(job=self.uuid, error=f"runner error: {type(exc).__name__}: {exc}")
        if self._signer is not None:  # before the spool: a resend is the identical message
            message = self._signer.sign(message, self.job.nonce)
        try:
            self._spool.write(message)
        except OSError as exc:
            # Better delivered without durability than not at all.
            log.error("job %s: cannot write the result to the spool: %s", self.uuid, exc)
        else:
            _crash_after_spool_hook(message)
        self._post(JobFinished(self.uuid, message, time.monotonic() - started))
        self._executor.between_jobs()

    def _execute(self) -> TerminalMessage:
        reason = self.cancel_reason
        if reason is not None:  # canceled before its thread even started: set nothing up
            return self._stopped(reason, [])
        if self._executor.starts_before_setup:
            self._post(JobStarted(self.uuid))
        try:
            prepared = duet.prepare(self._executor, self.job)
            pickup_trace.step("prepared")
        except ExecutorError as exc:
            reason = self.cancel_reason
            if reason is not None:  # the setup gave up because the job was canceled
                return self._stopped(reason, [])
            return Failed(job=self.uuid, error=str(exc))
        with self._lock:
            self._prepared = prepared
            reason = self._reason
        try:
            if reason is not None:
                return self._stopped(reason, [])
            return self._iterate(prepared)
        finally:
            prepared.cleanup()

    def _iterate(self, prepared: PreparedJob) -> TerminalMessage:
        if self._noise is None:
            return self._run_iterations(prepared)
        before = self._before
        if before is None:
            try:
                before = TakenCalibration(
                    self._noise.calibrate(self._cores), self._clock.monotonic()
                )
            except CalibrationError as exc:
                log.warning("job %s runs without a noise guard: %s", self.uuid, exc)
                return self._run_iterations(prepared)
            reason = self.cancel_reason
            if reason is not None:
                return self._stopped(reason, [])
        age_ms = max(0.0, (self._clock.monotonic() - before.taken_at) * 1000)
        message = self._run_iterations(prepared)
        if isinstance(message, Canceled):
            return message
        # A job stopped early leaves now: its calibration after would only delay that.
        after = self._calibrate_after() if self.cancel_reason is None else None
        noise = guard(before.calibration, after, before_age_ms=round(age_ms, 3))
        return message.model_copy(update={"noise": noise})

    def _calibrate_after(self) -> NoiseCalibration | None:
        assert self._noise is not None
        try:
            return self._noise.calibrate(self._cores)
        except CalibrationError as exc:
            log.warning("job %s has no calibration after it: %s", self.uuid, exc)
            return None

    def _run_iterations(self, prepared: PreparedJob) -> TerminalMessage:
        config = self.job.config
        begun = self._clock.monotonic()
        armed = False

        def started() -> None:
            # Once the first iteration's process runs, so that neither ``running`` nor the
            # alarm is in the way of its start; the timeout still counts from ``begun``.
            nonlocal armed
            if armed:
                return
            if not self._executor.starts_before_setup:
                self._post(JobStarted(self.uuid))
            self._alarm.arm(
                begun + config.timeout, functools.partial(self.cancel, CancelReason.TIMEOUT)
            )
            armed = True

        prepared.on_start = started
        if self._logs is not None:
            prepared.on_output = functools.partial(self._logs.write, self.uuid)
        results: list[IterationResult] = []
        last = duet.iterations(self.job) - 1
        try:
            for index in range(last + 1):
                try:
                    result = prepared.run_iteration(index)
                except ExecutorError as exc:
                    reason = self.cancel_reason
                    if reason is not None:
                        return self._stopped(reason, results)
                    return Failed(job=self.uuid, results=results, error=str(exc))
                reason = self.cancel_reason
                finished_first = index == last and result.exit_code == 0
                if reason is not None and not (finished_first and not prepared.interrupted):
                    if result.exit_code is not None:
                        results.append(result)
                    return self._stopped(reason, results)
                # A stop asked for once the last iteration's process had exited 0 on its own came
                # after the work was done (a runner resumed after a pause hears the server's
                # cancel as its job's process ends): the result is whole and goes to the server,
                # which decides. One that interrupted the process is a stop, whatever its code.
                results.append(result)
                log.debug("job %s: iteration %d exited %s", self.uuid, index, result.exit_code)
                if result.exit_code != 0 and not config.allow_failure:
                    return Failed(
                        job=self.uuid,
                        results=results,
                        error=f"iteration {index} exited with code {result.exit_code}",
                    )
        finally:
            if armed:
                self._alarm.disarm()
        return Completed(job=self.uuid, results=results)

    def _stopped(self, reason: CancelReason, results: list[IterationResult]) -> TerminalMessage:
        if reason is CancelReason.SERVER:
            return Canceled(job=self.uuid)
        if reason is CancelReason.TIMEOUT:
            error = f"job exceeded its timeout of {self.job.config.timeout} s"
        elif reason is CancelReason.DRAIN:
            error = "runner drained: job canceled after drain grace period"
        else:
            error = "runner shut down: job canceled"
        return Failed(job=self.uuid, results=results, error=error)


def _crash_after_spool_hook(message: TerminalMessage) -> None:
    """Test signal, a no-op in production: die between spooling a result and sending it, so a
    system test can prove that a restarted runner redelivers it."""
    if isinstance(message, Completed) and os.environ.get(CRASH_AFTER_SPOOL_ENV) == "1":
        os._exit(CRASH_AFTER_SPOOL_EXIT)
