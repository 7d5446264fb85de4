"""Server settings that the load benchmarks share."""

from __future__ import annotations

UNCAPPED = {"BENCHRUNNER_MAX_QUEUED_JOBS": "0", "BENCHRUNNER_MAX_PENDING_PER_ORGANIZATION": "0"}
"""The backpressure caps off: a load benchmark queues thousands of jobs at once on purpose.
Set through the environment, which a server from before the caps (``--before``) ignores."""

CAPS_MARGIN = 100
"""Jobs over a run's own that the raised caps allow: warm-up jobs and stragglers."""


def caps_for(jobs: int) -> dict[str, str]:
    """The backpressure caps on, raised so that a run of ``jobs`` queued at once fits: what an
    operator expecting such a burst would set, so the caps' own checks are measured too."""
    cap = str(jobs + CAPS_MARGIN)
    return {"BENCHRUNNER_MAX_QUEUED_JOBS": cap, "BENCHRUNNER_MAX_PENDING_PER_ORGANIZATION": cap}
