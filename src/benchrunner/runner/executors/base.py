"""What every executor offers the agent: prepare a claimed job, run its iterations, stop it.

    Executor.prepare(job) -> PreparedJob       refuses with ExecutorError (setup failure)
    PreparedJob.run_iteration(i) -> IterationResult
                                               ExecutorError if the iteration cannot start;
                                               calls PreparedJob.on_start once it started
    PreparedJob.cancel()                       from any thread; ends the current iteration
    PreparedJob.cleanup()                      always called once, last
    Executor.interrupt_setup(job)              from any thread; a running prepare gives up

The agent turns results into ``completed``/``failed``/``canceled``; an executor never decides a
job's outcome and never parses output.
"""

from __future__ import annotations

import abc
import uuid
from collections.abc import Callable

from benchrunner.protocol import IterationResult, JsonClaimedJob


class ExecutorError(Exception):
    """The executor refuses or cannot set up or start a job; ``str()`` is the user-facing reason
    sent as the ``failed`` message's ``error``."""


class PreparedJob(abc.ABC):
    """One job, set up and ready to run; owned by one job thread (``cancel`` excepted)."""

    on_start: Callable[[], None] | None = None
    """Set by the job's owner before the first iteration. Every executor calls it (through
    ``_started``) on the job thread as soon as an iteration's process has started, so that
    what the owner does then (reporting ``running``, arming the job's timeout) never delays
    the start. Not called for an iteration that does not start."""

    on_output: Callable[[str, bytes], None] | None = None
    """Set by the job's owner before the first iteration: receives ``(stream, data)`` for every
    chunk of output read from an iteration, on the executor's reader threads, as it comes."""

    def _started(self) -> None:
        if self.on_start is not None:
            self.on_start()

    @abc.abstractmethod
    def run_iteration(self, index: int) -> IterationResult:
        """Run iteration ``index`` (0-based) to its end and return what it produced.

        After ``cancel()`` the running iteration ends promptly and later calls return at once
        with ``exit_code=None``. Raises ExecutorError if the iteration cannot be started.
        """

    @property
    def interrupted(self) -> bool:
        """After ``cancel()``: whether it stopped an iteration whose process was still running
        (an executor that cannot tell says True)."""
        return True

    @abc.abstractmethod
    def cancel(self) -> None:
        """Stop the job: the current iteration's processes get SIGTERM, then SIGKILL after the
        executor's kill grace. Thread-safe, idempotent, does not block."""

    @abc.abstractmethod
    def cleanup(self) -> None:
        """Release everything the job used (processes, working directory). Idempotent."""


class Executor(abc.ABC):
    """Creates PreparedJobs; one per runner, shared by its successive jobs."""

    name: str
    # True: the job is reported running (and heartbeats flow) while ``prepare`` runs, because
    # setup may take long (an image pull); a setup refusal then follows ``running``.
    starts_before_setup: bool = False

    def interrupt_setup(self, job: uuid.UUID) -> None:
        """Ask ``prepare(job)``, running on another thread, to give up soon: it then raises
        ExecutorError. A no-op where setup is short (the default) or ``job`` is not being
        prepared. Thread-safe, does not block."""
        return None

    def between_jobs(self) -> None:
        """Set up ahead, on the job's thread once its result has been posted, what the next job
        would otherwise wait for. A no-op by default; never raises."""
        return None

    def close(self) -> None:
        """Release what ``between_jobs`` set up and no job took. Idempotent."""
        return None

    @abc.abstractmethod
    def prepare(self, job: JsonClaimedJob) -> PreparedJob:
        """Check and set up ``job``. Raises ExecutorError with a clear reason if this executor
        will not or cannot run it (wrong job kind, template not approved, bad arguments...)."""
