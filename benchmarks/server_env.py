"""Server settings that the load benchmarks share."""

from __future__ import annotations

UNCAPPED = {"BENCHRUNNER_MAX_QUEUED_JOBS": "0", "BENCHRUNNER_MAX_PENDING_PER_ORGANIZATION": "0"}
"""The backpressure caps off: a load benchmark queues thousands of jobs at once on purpose.
Set through the environment, which a server from before the caps (``--before``) ignores."""
