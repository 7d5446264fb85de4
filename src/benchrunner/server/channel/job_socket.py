"""A job's own WebSocket (docs/decisions/per-job-transport.md): ``/v0/runners/{runner}/jobs/{job}``.

The runner claimed the job with ``POST /v0/runners/{runner}/jobs`` and reports it here: the
session is the channel's (``runner_session.py``: deadline, transitions, replies, disconnect
timeout), bound to the one job of the URL. The older messages name no job, and their
``completed`` and ``failed`` carry one iteration's ``exit_code``, ``stdout``, ``stderr`` and
``output`` at the top level: both are read as the channel's messages for the URL's job. A
message naming another job is refused, and so is ``ready`` (jobs are claimed over HTTP here).

The socket serves its one job and ends with it, as Bencher's per-job handler does: after the
``ack`` of a terminal message or after a ``cancel``, the server closes it with 1000 and the
reason as Bencher encodes it (a JSON string): ``"job_completed"``, ``"job_failed"``,
``"job_canceled_by_runner"`` (the runner's ``canceled``) or ``"job_canceled"``.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from pydantic import BaseModel

from benchrunner.protocol import (
    JOB_SOCKET_ENDINGS,
    Ack,
    Cancel,
    Canceled,
    Completed,
    Failed,
    Ready,
    RunnerMessage,
    close_reason,
    parse_runner_message,
)
from benchrunner.server.channel.lifecycle import Lifecycle
from benchrunner.server.channel.runner_session import CLOSE_NORMAL, RunnerSession, RunnerSocket
from benchrunner.server.store import jobs
from benchrunner.server.store.runners import RunnerRow

_JOB_EVENTS = frozenset({"running", "log", "completed", "failed", "canceled"})
_RESULT_EVENTS = frozenset({"completed", "failed"})
_ITERATION_FIELDS = ("exit_code", "stdout", "stderr", "output")


def parse_job_message(text: str, job: uuid.UUID) -> RunnerMessage:
    """A message on ``job``'s socket, the older forms included; raises ValidationError."""
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
        websocket: RunnerSocket,
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
            "ready: not on a job's socket; claim jobs with POST /v0/runners/{runner}/jobs",
            message,
        )

    async def _dispatch(self, message: RunnerMessage) -> None:
        named = getattr(message, "job", None)
        if named is not None and named != self.job_uuid:
            await self.refuse(
                f"{message.event}: this socket is job {self.job_uuid}'s, not {named}", message
            )
            return
        await super()._dispatch(message)

    async def _current(self, job_uuid: object | None) -> jobs.JobRow | None:
        if self.job is None:  # its result was delivered: a late running changes nothing
            return None
        return self.job

    async def _reply(self, to: RunnerMessage, reply: BaseModel) -> None:
        await super()._reply(to, reply)
        reason = _ending(to, reply)
        if reason is not None:
            self.job = None  # delivered or canceled: no disconnect timeout is due
            await self.close(CLOSE_NORMAL, close_reason(reason))


def _ending(to: RunnerMessage, reply: BaseModel) -> str | None:
    """The close reason when ``reply`` to ``to`` ends the job's socket, else None."""
    if isinstance(reply, Cancel):
        return JOB_SOCKET_ENDINGS[reply.event]
    if isinstance(reply, Ack) and isinstance(to, Completed | Failed | Canceled):
        return JOB_SOCKET_ENDINGS[to.event]
    return None
