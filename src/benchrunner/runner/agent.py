"""The runner agent: one channel to the server, one job at a time, results never lost.

The channel is a ``Transport`` (``transport.py``): the channel, or the per-job
transport (``runner up --transport per-job``); the job execution path is the same for both.

Threads: the main thread runs the protocol (``_loop``) and is the only one that changes agent
state; it reacts to events from one queue and to its own deadlines. The channel's receiver thread
posts server messages and the channel's loss, the job thread (``job.py``) posts ``JobStarted``
and ``JobFinished``, signal handlers post ``DrainRequested``. The heartbeat thread only sends.

On every (re)connect: spooled results first, oldest first, each awaiting its ``ack`` (an
``error`` that names it means the server refuses it for good: it is dropped; one that answers a
``log`` sent before it changes nothing, see ``outbox.py``); then, if a job is still executing
here, ``running`` again and heartbeats; otherwise ``ready``.

A killed runner leaves nothing running: before anything else, a start stops what the in-flight
records of an earlier run still name (``inflight.py``), then starts the guard (``guard.py``) that
does the same the moment this run ends, however it ends.

Drain (SIGTERM or SIGINT, see ``drain.py``): no more ``ready``. Idle, the agent closes the
channel and exits 0 at once, even with a ``ready`` outstanding: a job the server claimed for us
in that instant is left to the server's disconnect recovery, which fails it. A running job may
finish within ``drain_grace``, else it is canceled and reported ``failed``; a second signal
cancels it now, reported the same way. A third one (``signals.py``) exits at once with
``EXIT_FORCED``: the running job is not waited for, unacknowledged results stay spooled.
"""

from __future__ import annotations

import logging
import platform
import queue
import random
import uuid
from importlib import metadata

from pydantic import BaseModel

from benchrunner.core.clock import SystemThreadClock, ThreadClock
from benchrunner.core.templates import TemplateRegistry
from benchrunner.protocol import (
    LOG_EXTENSION,
    OUR_EXTENSIONS,
    UPDATE_EXTENSION,
    Ack,
    Cancel,
    Error,
    Failed,
    JobAssigned,
    JsonClaimedJob,
    NoJob,
    Ready,
    Running,
    TerminalMessage,
    Update,
)
from benchrunner.runner import pickup_trace
from benchrunner.runner.channel import ChannelClosedError, ChannelRefusedError
from benchrunner.runner.clock_timer import ClockAlarm
from benchrunner.runner.connector import Connector
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.drain import Drain
from benchrunner.runner.events import (
    AgentEvent,
    ChannelLost,
    DrainRequested,
    JobFinished,
    JobStarted,
    ServerEvent,
    ServerMessage,
    TransportRefused,
)
from benchrunner.runner.executors import Executor, ExecutorError, create_executor
from benchrunner.runner.guard import Guard
from benchrunner.runner.heartbeat import HeartbeatSender
from benchrunner.runner.idle_calibration import IdleCalibration
from benchrunner.runner.inflight import InFlight
from benchrunner.runner.job import CancelReason, JobRun
from benchrunner.runner.log_stream import LogStreamer
from benchrunner.runner.noise_guard import NoiseProbe
from benchrunner.runner.options import RunnerOptions
from benchrunner.runner.outbox import Outbox
from benchrunner.runner.self_update import SelfUpdater, UpdateFailed, installed_checksum
from benchrunner.runner.signals import ForcedExit, StopRequests, stop_signals_call
from benchrunner.runner.signing import ResultSigner
from benchrunner.runner.slot import JobSlot
from benchrunner.runner.spool import Spool

__all__ = ["Agent", "RunnerOptions", "run_agent"]

log = logging.getLogger("benchrunner.runner")

EXIT_OK = 0
EXIT_REFUSED = 2  # bad/archived key, unknown runner, or an unusable configuration
EXIT_RESTART = 75  # a new version is installed: start the runner again (``reexec``)

READY_REPLY_MARGIN = 30.0  # beyond poll_timeout, for the reply to ready
READY_RETRY = 1.0  # pause after the server refused ready or offered an update
IN_FLIGHT_DIR = "in-flight"  # in the spool directory
CLOSE_CODE_SERVER_RESTART = 1012
CLOSE_CODE_MESSAGE_TOO_BIG = 1009
_COUNTED_OR_UNNAMED = (None, "running", "heartbeat")
"""What an ``error`` that answers a message awaiting a counted reply names."""


def run_agent(options: RunnerOptions, stops: StopRequests | None = None) -> int:
    """Run the runner until drained (SIGTERM/SIGINT), refused, or after one job with ``once``.

    Returns the process exit code: 0 after a drain or a ``once`` job; 2 if the server refuses
    the runner key or runner (HTTP 401/403/404 at the handshake) or the options, templates file
    or executor are unusable; ``EXIT_RESTART`` after a self-update, between jobs: the caller
    starts the new version (``runner up`` re-executes itself). Signals are handled only when
    called on the main thread; ``stops`` holds those that came before (the caller handled them
    already). The third stop signal raises ``ForcedExit`` (a SystemExit with ``EXIT_FORCED``)
    out of this call.
    """
    if not logging.getLogger().handlers:
        logging.basicConfig(
            level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
        )
    stops = stops or StopRequests()
    with stop_signals_call(stops):
        try:
            agent = Agent(options)
        except (ValueError, ExecutorError, OSError) as exc:
            log.error("runner not started: %s", exc)
            return EXIT_REFUSED
        stops.forward_to(agent.request_drain)
        return agent.run()


def runner_version() -> str:
    try:
        return metadata.version("benchrunner")[:64]
    except metadata.PackageNotFoundError:
        return "0+unknown"


class Agent:
    def __init__(
        self,
        options: RunnerOptions,
        *,
        executor: Executor | None = None,
        rng: random.Random | None = None,
        noise_probe: NoiseProbe | None = None,
        clock: ThreadClock | None = None,
    ) -> None:
        """Raises ValueError (options, templates file), ExecutorError, or OSError (spool).
        ``noise_probe``: the noise guard's calibration (tests record its rounds); ``clock``:
        the time of the protocol's deadlines (replies, reconnects, heartbeats, drain)."""
        options.validate()
        self._options = options
        self._clock = clock or SystemThreadClock()
        self._cores = options.cores or CorePlan.detect()
        self._signer = ResultSigner.from_file(options.signing_key) if options.signing_key else None
        self._spool = Spool(options.spool)
        self._in_flight = InFlight(options.spool / IN_FLIGHT_DIR, clock=self._clock)
        # Before the executor (the sandbox's removes containers) and long before any claim.
        stopped = self._in_flight.stop_leftovers()
        if stopped:
            log.warning("stopped %d process(es) or container(s) left by an earlier run", stopped)
        templates = (
            TemplateRegistry.load(options.templates)
            if options.templates is not None
            else TemplateRegistry.empty()
        )
        self._executor = executor or create_executor(
            options.executor,
            templates,
            kill_grace=options.kill_grace,
            max_output_bytes=options.max_output_bytes,
            cores=self._cores,
            registry_url=lambda: self._connector.host,
            sandbox_dir=options.sandbox_dir
            or options.spool.with_name(f"{options.spool.name}-sandbox"),
            oci_runtime=options.oci_runtime,
            in_flight=self._in_flight,
            clock=self._clock,
        )
        self._guard: Guard | None = None
        self._outbox = Outbox(self._spool, self._signer)
        self._events: queue.SimpleQueue[AgentEvent] = queue.SimpleQueue()
        self._version = runner_version()
        # A runner started with --no-update does not announce the extension: never offered one.
        self._extensions = [e for e in OUR_EXTENSIONS if options.update or e != UPDATE_EXTENSION]
        self._updater = SelfUpdater(options.key) if options.update else None
        self._installed_checksum = installed_checksum(self._version) if options.update else None
        self._failed_updates: set[str] = set()
        """Checksums of releases that failed to install here: not tried again by this process."""
        self._restart = False
        self._connector = Connector(
            options.hosts,
            options.runner,
            options.key,
            events=self._events,
            cores=self._cores,
            user_agent=f"benchrunner-runner/{self._version}",
            extensions=self._extensions,
            transport=options.transport,
            rng=rng,
            clock=self._clock,
        )
        self._heartbeat = HeartbeatSender(options.heartbeat_interval, self._cores, self._clock)
        self._logs = LogStreamer(self._cores, clock=self._clock)
        self._ready_deadline: float | None = None  # set iff a ready awaits its reply
        self._ready_not_before = 0.0
        self._job: JobRun | None = None
        self._slot: JobSlot | None = None  # started by run()
        self._alarm: ClockAlarm | None = None  # each job's timeout; made by run()
        self._job_started = False
        self._announced_on = 0  # generation of the channel that was sent running for _job
        # The first job this process took: in `once` mode, the one whose delivery ends the run.
        # One value, not a set of every job run, so a long-lived runner holds nothing per job.
        self._first_job: uuid.UUID | None = None
        # The job whose "received" line is still to be logged (``_on_job`` says why it waits).
        self._received: JsonClaimedJob | None = None
        self._first_delivered = False
        self._drain = Drain(options.drain_grace, options.delivery_grace)
        self._refused: str | None = None
        self._idle_noise = (
            IdleCalibration(
                noise_probe or NoiseProbe(waits=self._clock),
                self._cores,
                max_age=options.noise_max_age,
                clock=self._clock.monotonic,
            )
            if options.noise_guard
            else None
        )

    def request_drain(self) -> None:
        """Drain (first call) or cancel now (later calls). Safe from a signal handler or any
        thread: SimpleQueue.put is reentrant."""
        self._events.put(DrainRequested())

    def run(self) -> int:
        """Blocks until the agent stops; returns the exit code (see ``run_agent``)."""
        # The main loop too stays off the job cores; threads started from here inherit it.
        self._cores.pin_to_housekeeping()
        spooled = self._outbox.load()
        log.info(
            "runner %s starting: executor %s, %s, %d spooled result(s)",
            self._options.runner,
            self._executor.name,
            self._cores.describe(),
            spooled,
        )
        if self._signer is not None:
            log.info("signing results with key %s", self._signer.fingerprint)
        try:
            self._guard = Guard(self._in_flight.directory, self._clock)
            self._in_flight.watched_by(self._guard.running)
        except OSError as exc:
            log.error("cannot start the guard (a job may outlive a killed runner): %s", exc)
        self._heartbeat.start()
        self._logs.start()
        self._slot = JobSlot(self._cores)
        self._alarm = ClockAlarm(self._clock, name="job-timeout")
        forced = False
        try:
            return self._loop()
        except ForcedExit:
            forced = True
            self._log_forced_exit()
            raise
        finally:
            self._shutdown(wait_for_job=not forced)

    # ------------------------------------------------------------------ the loop

    def _loop(self) -> int:
        while True:
            now = self._clock.monotonic()
            if self._refused is not None:
                log.error(
                    "%s; check the runner id and key (bad, rotated or archived)", self._refused
                )
                return EXIT_REFUSED
            code = self._exit_code(now)
            if code is not None:
                return code
            self._check_deadlines(now)
            if self._connector.due(now):
                try:
                    if self._connector.connect() is not None:
                        self._channel_changed()
                except ChannelRefusedError as exc:
                    log.error("%s; check the runner id and key (bad, rotated or archived)", exc)
                    return EXIT_REFUSED
            if self._connector.channel is not None:
                self._act(self._clock.monotonic())
            event = self._next_event(self._clock.monotonic())
            if event is not None:
                self._handle(event)

    def _exit_code(self, now: float) -> int | None:
        if self._restart and self._job is None:
            return EXIT_OK if self._drain.requested else EXIT_RESTART
        stopping = self._drain.requested or (self._options.once and self._first_delivered)
        if not stopping or self._job is not None:
            return None
        if not self._outbox:
            return EXIT_OK
        if self._drain.delivery_over(now):
            log.warning("exiting with %d result(s) left in the spool", len(self._outbox))
            return EXIT_OK
        return None

    def _check_deadlines(self, now: float) -> None:
        if self._drain.job_overdue(now) and self._job is not None:
            log.warning("job %s outlived the drain grace; canceling it", self._job.uuid)
            self._job.cancel(CancelReason.DRAIN)
        if self._connector.channel is None:
            return
        if self._outbox.overdue(now):
            log.warning("no reply to a result within its ack timeout; reconnecting")
            self._drop_channel()
        elif self._ready_deadline is not None and now >= self._ready_deadline:
            log.warning("no reply to ready; reconnecting")
            self._drop_channel()

    def _act(self, now: float) -> None:
        """Send what is due on the current channel: results first, then running, then ready."""
        channel = self._connector.channel
        assert channel is not None
        if self._outbox:
            self._detach_senders()  # nothing may be sent between a result and its reply
            self._outbox.send_next(channel, now, self._send)
            return
        if self._job is not None:
            if self._job_started and self._announced_on != channel.generation:
                if not self._send(Running(job=self._job.uuid), expect_ack=True):
                    return
                self._announced_on = channel.generation
            if self._announced_on == channel.generation:
                self._heartbeat.attach(channel)
                self._logs.attach(channel)
            return
        once_taken = self._options.once and self._first_job is not None
        if self._ready_deadline is not None:
            self._refresh_idle_noise(now)  # waiting for work: keep the job's "before" fresh
        elif not self._drain.requested and not once_taken and now >= self._ready_not_before:
            if not self._refresh_idle_noise(now):
                return  # something happened meanwhile: handle it, then come back
            ready = Ready(
                poll_timeout=self._options.poll_timeout,
                os=platform.system().lower(),
                arch=platform.machine(),
                version=self._version,
                extensions=self._extensions,
                update_channel=self._options.update_channel if self._updater else None,
                checksum=self._installed_checksum,
            )
            if self._send(ready):
                self._ready_deadline = now + self._options.poll_timeout + READY_REPLY_MARGIN

    def _refresh_idle_noise(self, now: float) -> bool:
        """Calibrate the idle job cores when the latest calibration is missing or too old;
        False when an event interrupted it (it gives way within one round)."""
        idle = self._idle_noise
        if idle is None or not idle.due(now):
            return True
        return idle.refresh(stop=lambda: not self._events.empty())

    def _next_event(self, now: float) -> AgentEvent | None:
        deadlines = [
            *self._drain.deadlines(),
            self._ready_deadline,
            self._outbox.deadline(),
            self._connector.deadline(),
            self._ready_not_before if self._ready_not_before > now else None,
            self._idle_noise.deadline()
            if self._idle_noise is not None and self._ready_deadline is not None
            else None,
        ]
        due = [deadline for deadline in deadlines if deadline is not None]
        return self._clock.get(self._events, min(due) if due else None)

    # ------------------------------------------------------------------ events

    def _handle(self, event: AgentEvent) -> None:
        if isinstance(event, ServerEvent):
            if self._connector.is_current(event.generation):
                self._connector.heard_from()
                self._on_message(event.message)
        elif isinstance(event, TransportRefused):
            if self._connector.is_current(event.generation):
                self._refused = event.message
        elif isinstance(event, ChannelLost):
            if self._connector.is_current(event.generation):
                if event.code == CLOSE_CODE_SERVER_RESTART:
                    log.info("server restarting (close code 1012)")
                elif event.code == CLOSE_CODE_MESSAGE_TOO_BIG and self._outbox.shrink_in_flight():
                    log.error("result too large for the server; sending a failure instead")
                else:
                    log.warning("channel closed: code %d %s", event.code, event.reason)
                self._drop_channel()
        elif isinstance(event, JobStarted):
            if self._job is not None and self._job.uuid == event.job:
                self._job_started = True
                self._log_received()
                log.info("job %s started", event.job)
        elif isinstance(event, JobFinished):
            self._on_job_finished(event)
        elif isinstance(event, DrainRequested):
            job = self._job
            reason = self._drain.request(self._clock.monotonic(), job_running=job is not None)
            if job is not None and reason is not None:
                job.cancel(reason)

    def _on_message(self, message: ServerMessage) -> None:
        if isinstance(message, Ack):
            self._on_ack(message)
        elif isinstance(message, JobAssigned):
            self._on_job(message)
        elif isinstance(message, NoJob):
            self._ready_deadline = None
        elif isinstance(message, Cancel):
            self._on_cancel(message)
        elif isinstance(message, Update):
            self._on_update(message)
        else:
            self._on_error(message)

    def _on_ack(self, ack: Ack) -> None:
        if self._outbox.in_flight is None:
            channel = self._connector.channel
            if channel is not None:
                channel.settle_one()
            return
        delivered = self._outbox.accept(ack)
        if delivered is None:
            log.debug("ignoring ack for job %s: another result is awaited", ack.job)
        else:
            self._result_done(delivered, "delivered")

    def _on_error(self, error: Error) -> None:
        channel = self._connector.channel
        refused = self._outbox.refuse(error)
        event = error.refused_event()
        if refused is not None:
            log.error("server refused the result of job %s: %s", refused.job, error.message)
            self._result_done(refused, "dropped from the spool")
        elif event == LOG_EXTENSION:
            # Answers no counted message: a log is answered only when refused.
            log.warning("server refused live output: %s", error.message)
        elif event in _COUNTED_OR_UNNAMED and channel is not None and channel.settle_one():
            log.error("server error: %s", error.message)
        elif event in (None, "ready") and self._ready_deadline is not None:
            log.error("server refused ready: %s", error.message)
            self._ready_answered(pause=True)
        else:
            log.error("server error: %s", error.message)

    def _on_job(self, message: JobAssigned) -> None:
        claimed: JsonClaimedJob = message  # the claimed job's fields, plus the event name
        self._ready_answered(pause=False)
        if self._job is not None or self._drain.requested:
            busy = f"busy with job {self._job.uuid}" if self._job else "shutting down"
            log.error("refusing job %s: runner is %s", claimed.uuid, busy)
            refusal: TerminalMessage = Failed(job=claimed.uuid, error=f"runner was {busy}")
            if self._signer is not None:
                refusal = self._signer.sign(refusal, claimed.nonce)
            self._outbox.add(refusal, spooled=False)
            return
        self._job = JobRun(
            claimed,
            executor=self._executor,
            spool=self._spool,
            post=self._events.put,
            cores=self._cores,
            slot=self._slot,
            logs=self._logs,
            noise=None if self._idle_noise is None else self._idle_noise.probe,
            # A job whose spec turns the guard off leaves the calibration to the next one.
            before=self._idle_noise.take()
            if self._idle_noise is not None and claimed.spec.noise_guard
            else None,
            signer=self._signer,
            clock=self._clock,
            alarm=self._alarm,
        )
        self._job_started = False
        self._announced_on = 0  # a new job must say running again, even on the same channel
        if self._first_job is None:
            self._first_job = claimed.uuid
        self._logs.begin(claimed.uuid)
        self._job.start()
        pickup_trace.step("handed")
        # Logged once the job's first process runs (or the job ended without one): formatted
        # and written now, the line would hold the interpreter while the job's thread starts it.
        self._received = claimed

    def _log_received(self) -> None:
        claimed, self._received = self._received, None
        if claimed is None:
            return
        config = claimed.config
        what = f"template {config.template!r}" if config.template else f"image {config.digest}"
        log.info(
            "job %s received: %s, %d iteration(s), timeout %d s",
            claimed.uuid,
            what,
            config.iter,
            config.timeout,
        )

    def _on_update(self, update: Update) -> None:
        """Install the offered release (it answers a ready: no job is running here, no result
        is waiting), then restart as it; on failure keep this version and take jobs."""
        self._ready_answered(pause=True)
        checksum = update.checksum.lower()
        if self._updater is None:
            log.info("ignoring the offer of version %s: started with --no-update", update.version)
            return
        if checksum in self._failed_updates:
            log.info("not retrying version %s (%s): it failed to install", update.version, checksum)
            return
        if platform.system() != "Linux":
            log.info("ignoring the offer of version %s: self-update is for Linux", update.version)
            return
        log.info("updating from version %s to %s", self._version, update.version)
        try:
            self._updater.install(update, self._connector.host)
        except UpdateFailed as exc:
            self._failed_updates.add(checksum)
            log.error(
                "self-update to %s failed, keeping version %s: %s",
                update.version,
                self._version,
                exc,
            )
            return
        log.info("installed version %s; restarting", update.version)
        self._restart = True

    def _on_cancel(self, message: Cancel) -> None:
        channel = self._connector.channel
        if channel is not None:
            channel.settle_one()  # the server may answer a heartbeat with cancel instead of ack
        job = self._job
        if job is not None and message.job in (None, job.uuid):
            log.info("server canceled job %s", job.uuid)
            job.cancel(CancelReason.SERVER)
        else:
            log.info("ignoring cancel for job %s: not running here", message.job)

    def _on_job_finished(self, event: JobFinished) -> None:
        self._log_received()
        self._job = None
        self._job_started = False
        # On this thread, which sends the result next: every log goes out before it.
        self._logs.finish(event.job)
        self._detach_senders()
        self._outbox.add(event.message, spooled=True)
        error = f": {event.message.error}" if isinstance(event.message, Failed) else ""
        log.info(
            "job %s finished: %s in %.3f s%s",
            event.job,
            event.message.event,
            event.duration,
            error,
        )
        self._drain.job_finished(self._clock.monotonic())

    # ------------------------------------------------------------------ helpers

    def _ready_answered(self, *, pause: bool) -> None:
        if self._ready_deadline is not None and pause:
            self._ready_not_before = self._clock.monotonic() + READY_RETRY
        self._ready_deadline = None

    def _result_done(self, message: TerminalMessage, how: str) -> None:
        if message.job == self._first_job:
            self._first_delivered = True
        log.info("job %s: %s result %s", message.job, message.event, how)

    def _send(self, message: BaseModel, *, expect_ack: bool = False) -> bool:
        channel = self._connector.channel
        assert channel is not None
        try:
            channel.send(message, expect_ack=expect_ack)
        except ChannelClosedError as exc:
            log.warning("channel lost while sending %s: %s", type(message).__name__, exc)
            self._drop_channel()
            return False
        return True

    def _detach_senders(self) -> None:
        self._heartbeat.detach()
        self._logs.detach()

    def _channel_changed(self) -> None:
        self._detach_senders()
        self._ready_deadline = None
        self._outbox.connection_lost()

    def _drop_channel(self) -> None:
        self._channel_changed()
        self._connector.drop()

    def _log_forced_exit(self) -> None:
        if self._job is not None:
            log.warning(
                "job %s left unreported: its processes are stopped, the server fails it",
                self._job.uuid,
            )
        if self._outbox:
            log.warning("%d result(s) stay in the spool for the next start", len(self._outbox))

    def _shutdown(self, *, wait_for_job: bool = True) -> None:
        self._heartbeat.stop()
        self._logs.stop()
        job = self._job
        if job is not None:
            # After a fatal refusal: the job's result stays spooled for the next start. After
            # a forced exit nothing waits for it: the guard stops what it runs.
            job.cancel(CancelReason.SHUTDOWN)
            if wait_for_job:
                job.join(self._options.kill_grace + 5.0)
        if self._slot is not None:
            self._slot.close()
        if self._alarm is not None:
            self._alarm.close()
        self._executor.close()
        self._connector.close()
        if self._guard is not None:
            self._guard.close()  # it stops whatever the job could not
