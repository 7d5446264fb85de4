"""The whole job of ``queue_compare``'s job mode, the same on both systems.

Run as ``sh -c CLOCK_SCRIPT sh FILE``: ``date`` writes its start clock to ``FILE`` (benchrunner's
side watches that file, so that no request or query runs during a pickup) and the shell echoes
it as the job's output. benchrunner's runner runs it as template ``bench.clock_file``
(``tests/harness.py``), Procrastinate's worker as task ``date``
(``benchmarks/queue_compare_tasks.py``): both start a shell and a ``date`` a job.
"""

from __future__ import annotations

CLOCK_SCRIPT = (
    'date \'+{"clock": {"started_ns": {"value": %s%N}}}\' > "$1"'
    ' && read -r line < "$1" && echo "$line"'
)
