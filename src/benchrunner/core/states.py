"""Job states and the one table of allowed transitions.

The integers are the database encoding (docs/decisions/job-lifecycle.md);
the lowercase names are the wire encoding.
"""

from __future__ import annotations

import enum


class JobStatus(enum.IntEnum):
    PENDING = 0
    """Waiting for a runner to claim it."""
    CLAIMED = 1
    """A runner claimed it and has not yet said ``running``."""
    RUNNING = 2
    """The benchmark is executing; the runner heartbeats."""
    COMPLETED = 3
    """The runner delivered a result; the output is stored but not yet parsed."""
    FAILED = 4
    """Runner error, setup failure or lost contact. A late real result may still complete it."""
    CANCELED = 5
    """Canceled by a user or by the hard job timeout. Terminal."""
    PROCESSED = 6
    """The output was parsed into the report. Terminal."""

    @property
    def wire(self) -> str:
        return self.name.lower()

    @classmethod
    def from_wire(cls, name: str) -> JobStatus:
        try:
            return cls[name.upper()]
        except KeyError:
            raise ValueError(f"unknown job status {name!r}") from None


IN_FLIGHT = frozenset({JobStatus.CLAIMED, JobStatus.RUNNING})
TERMINAL = frozenset({JobStatus.PROCESSED, JobStatus.CANCELED})
FINISHED = frozenset(
    {JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELED, JobStatus.PROCESSED}
)

# (from, to) pairs of docs/decisions/job-lifecycle.md; nothing else may change job.status.
TRANSITIONS: frozenset[tuple[JobStatus, JobStatus]] = frozenset(
    {
        (JobStatus.PENDING, JobStatus.CLAIMED),
        (JobStatus.PENDING, JobStatus.CANCELED),
        (JobStatus.CLAIMED, JobStatus.PENDING),
        (JobStatus.CLAIMED, JobStatus.RUNNING),
        (JobStatus.CLAIMED, JobStatus.FAILED),
        (JobStatus.CLAIMED, JobStatus.CANCELED),
        (JobStatus.RUNNING, JobStatus.COMPLETED),
        (JobStatus.RUNNING, JobStatus.FAILED),
        (JobStatus.RUNNING, JobStatus.CANCELED),
        (JobStatus.COMPLETED, JobStatus.PROCESSED),
        (JobStatus.FAILED, JobStatus.COMPLETED),
    }
)


def sources_of(target: JobStatus) -> frozenset[JobStatus]:
    """The statuses from which ``target`` may be reached: the ``WHERE status IN`` of a CAS."""
    return frozenset(src for src, dst in TRANSITIONS if dst == target)
