"""Claimed jobs run as the runner's agent runs them, without a server: the real ``JobRun`` on
the runner's job slot thread, with a real executor and spool, and the noise guard as the agent
wires it (the "before" calibration taken while idle, ``runner/idle_calibration.py``).

What is left out is the channel: no ``running``/result messages, heartbeats or live log
streaming, which run on the housekeeping core and not on the job's.
"""

from __future__ import annotations

import queue
import time
from pathlib import Path

from benchrunner.protocol import Completed, JsonClaimedJob
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.events import AgentEvent, JobFinished
from benchrunner.runner.executors.base import Executor
from benchrunner.runner.idle_calibration import IdleCalibration
from benchrunner.runner.job import JobRun
from benchrunner.runner.noise_guard import NoiseProbe
from benchrunner.runner.slot import JobSlot
from benchrunner.runner.spool import Spool

FINISH_TIMEOUT = 600.0


class LocalRunner:
    def __init__(self, executor: Executor, cores: CorePlan, spool_dir: Path) -> None:
        self.executor = executor
        self.cores = cores
        self._spool = Spool(spool_dir)
        self._slot = JobSlot(cores)
        self._events: queue.SimpleQueue[AgentEvent] = queue.SimpleQueue()
        self.idle = IdleCalibration(NoiseProbe(), cores)

    def close(self) -> None:
        self._slot.close()

    def run(
        self, job: JsonClaimedJob, *, noise_guard: bool = True, idle_before: bool = True
    ) -> tuple[Completed, float]:
        """Run ``job`` to its terminal message, which must be ``completed`` (RuntimeError
        otherwise); also the job thread's own duration (seconds, from the slot picking it up
        to the message spooled: what the runner adds per job).

        ``noise_guard``: as the agent with the guard on, the idle calibration is refreshed
        first (not timed: the agent does it while waiting for work) and handed to the job;
        without ``idle_before`` none is handed over and the job takes its own first."""
        before = None
        if noise_guard and idle_before:
            self.idle.refresh(lambda: False)
            before = self.idle.take()
        run = JobRun(
            job,
            executor=self.executor,
            spool=self._spool,
            post=self._events.put,
            cores=self.cores,
            slot=self._slot,
            noise=self.idle.probe if noise_guard else None,
            before=before,
        )
        run.start()
        deadline = time.monotonic() + FINISH_TIMEOUT
        while True:
            event = self._events.get(timeout=max(0.0, deadline - time.monotonic()))
            if isinstance(event, JobFinished) and event.job == job.uuid:
                self._spool.delete(job.uuid)
                if not isinstance(event.message, Completed):
                    raise RuntimeError(f"the job did not complete: {event.message}")
                return event.message, event.duration
