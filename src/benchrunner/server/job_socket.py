"""A job's own WebSocket (seed 000): ``/v0/runners/{runner}/jobs/{job}``.

The runner claimed the job with ``POST /v0/runners/{runner}/jobs`` and reports it here: the
session is the channel's (``runner_session.py``: deadline, transitions, replies, disconnect
timeout), bound to the one job of the URL. Seed 000's messages name no job, and its
``completed`` and ``failed`` carry one iteration's ``exit_code``, ``stdout``, ``stderr`` and
``output`` at the top level: both are read as the channel's messages for the URL's job. A
message naming another job is refused, and so is ``ready`` (jobs are claimed over HTTP here).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from starlette.websockets import WebSocket

from benchrunner.protocol import Ready, RunnerMessage, parse_runner_message
from benchrunner.server.lifecycle import Lifecycle
from benchrunner.server.runner_session import RunnerSession
from benchrunner.server.store import jobs
from benchrunner.server.store.runners import RunnerRow

_JOB_EVENTS = frozenset({"running", "log", "completed", "failed", "canceled"})
_RESULT_EVENTS = frozenset({"completed", "failed"})
_ITERATION_FIELDS = ("exit_code", "stdout", "stderr", "output")


def parse_job_message(text: str, job: uuid.UUID) -> RunnerMessage:
    """A message on ``job``'s socket, seed 000's forms included; raises ValidationError."""
    try:
        data: Any = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict) or data.get("event") not in _JOB_EVENTS:
        return parse_runner_message(text)  # as the channel reads it, errors included
    data.setdefault("job", str(job))
    if data["event"] in _RESULT_EVENTS and "results" not in data:
        iteration = {name: data.pop(name) for name in _ITERATION_FIELDS if name in data}
        data["results"] = [iteration] if iteration else []
    return parse_runner_message(json.dumps(data))


class JobSocketSession(RunnerSession):
    def __init__(
        self,
        websocket: WebSocket,
        runner: RunnerRow,
        lifecycle: Lifecycle,
        job: jobs.JobRow,
        extensions: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(websocket, runner, lifecycle, extensions)
        self.job = job
        self.job_uuid = job.uuid

    def _parse(self, text: str) -> RunnerMessage:
        return parse_job_message(text, self.job_uuid)

    async def _ready(self, message: Ready) -> None:
        await self.refuse(
            "ready: not on a job's socket; claim jobs with POST /v0/runners/{runner}/jobs"
        )

    async def _dispatch(self, message: RunnerMessage) -> None:
        named = getattr(message, "job", None)
        if named is not None and named != self.job_uuid:
            await self.refuse(f"{message.event}: this socket is job {self.job_uuid}'s, not {named}")
            return
        await super()._dispatch(message)

    async def _current(self, job_uuid: object | None) -> jobs.JobRow | None:
        if self.job is None:  # its result was delivered: a late running changes nothing
            return None
        return self.job
