"""Where a benchrunner process spends its time: py-spy's raw stacks summed into named parts.

``queue_compare --py-spy PREFIX`` (and ``py-spy record --format raw``) write one line per
distinct stack, ``frame;frame;...;frame COUNT``, outermost frame first, each frame
``Class.function (module/path.py:line)``.

Each stack goes to the first part, in the order below, one of whose markers appears in its
frames. So a part holds only what no earlier part took: its name says where a sample was seen,
not a total of that work. A stack that no marker names is counted as "other";
``--unnamed N`` lists the commonest innermost frames of those, so that the markers can be
improved.

    .venv/bin/python -m benchmarks.profile_shares /tmp/spy-sqlite-1w-r1.txt [--parts runner]

Markers:
- ``.function (module/path`` matches a method in a file;
- a bare ``path`` matches any function of it;
- a leading ``^`` matches only the innermost frame.

What the samples are:
- Py-spy leaves out the threads it finds idle. It does not recognise an executor thread
  waiting for work (``_worker`` as the innermost frame): that is the ``idle`` part, left out of
  the shares.
- Other waits can still be counted: a thread waiting on PostgreSQL's answer, and uvloop's
  polling, which is C code under ``Runner.run``. So the shares are of time, and they match CPU
  only where the samples add up to the process's CPU time.
"""

from __future__ import annotations

import argparse
import collections
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Part:
    name: str
    markers: tuple[str, ...]


IDLE = "idle"
EXECUTOR_WAITING = "^_worker (concurrent/futures/thread.py"
"""An executor thread waiting for work; py-spy's own idle test misses it on this machine."""
UNIT_THREAD_WAITING = "^UnitThreads._work (benchrunner/server/store/unit_threads.py"
"""A database thread waiting for a unit (its wait is in C, under ``UnitThreads._work``)."""
EVENT_LOOP = (
    "the event loop itself (uvloop, in C: polling and callbacks; its idle time is not told apart)"
)
SERVER_PARTS: tuple[Part, ...] = (
    Part(IDLE, (EXECUTOR_WAITING, UNIT_THREAD_WAITING)),
    Part(
        "the WAL and output files written and synced (threads)",
        ("fdatasync_path (benchrunner/server/store/engine", "benchrunner/server/blobs/blob_store"),
    ),
    Part(
        "`POST /v0/run` (the submission, its hand-off)",
        (
            "RunFastPath._submit (",
            "_valid_body (benchrunner/server/routes/run_fast_path",
            "benchrunner/server/routes/run.py",
            "benchrunner/server/submission/service",
            "benchrunner/server/submission/body",
        ),
    ),
    Part("the submission's token lookup, on a database thread", ("user_by_api_token (",)),
    Part(
        "`GET /v0/server/health` (the benchmark's polls)",
        (
            "benchrunner/server/routes/server",
            "check_reachable (benchrunner/server/store/engine",
            "queue_stats (benchrunner/server/store/queue_stats",
        ),
    ),
    Part(
        "`completed`: the transition, the output, processing inline, the `ack`",
        (
            "._terminal (benchrunner/server/channel/runner_session",
            "benchrunner/server/processing/completion",
            "thresholds_of_report (",
        ),
    ),
    Part("processing left to the processor", ("benchrunner/server/processing/processor",)),
    Part("`running`", ("._running (benchrunner/server/channel/runner_session", "job_mark_running")),
    Part(
        "the live log's chunks",
        (
            "._log (benchrunner/server/channel/runner_session",
            "benchrunner/server/logs/live_logs",
            "job_log_store",
        ),
    ),
    Part(
        "heartbeats",
        (
            "._heartbeat (benchrunner/server/channel/runner_session",
            "job_touch",
            "benchrunner/server/channel/heartbeats",
        ),
    ),
    Part(
        "the dispatcher's claims",
        ("benchrunner/server/scheduling/dispatcher", "job_claim (benchrunner/server/store/claims"),
    ),
    Part(
        "`ready`: what is in flight for the runner, the wait, the `job` message",
        (
            "._ready (benchrunner/server/channel/runner_channel",
            "._wait_for_job (benchrunner/server/channel/runner_channel",
            "job_list_in_flight_for_runner (",
        ),
    ),
    Part(
        "structured log lines outside the parts above",
        ("benchrunner/server/logs/server_log", "benchrunner/core/redaction"),
    ),
    Part(
        "the channel's other work (messages parsed and sent, the session loop)",
        (
            "benchrunner/server/channel/runner_session",
            "benchrunner/server/channel/runner_channel",
            "benchrunner/protocol",
        ),
    ),
    Part(
        "a database thread handing a unit's result back (waking the event loop)",
        ("UnitThreads._answer (",),
    ),
    # A database thread's stack seen from a psycopg generator lacks its callers.
    Part(
        "database work py-spy could not place: a unit's commit, a statement seen without its "
        "caller",
        ("Database._write_held (", "Database._read_held (", "psycopg/", "sqlalchemy/"),
    ),
    Part(EVENT_LOOP, ("^Runner.run (asyncio/runners.py",)),
    Part(
        "HTTP and WebSocket framing, other requests (uvicorn, websockets, Starlette, FastAPI)",
        ("uvicorn/", "websockets/", "h11/", "httptools", "starlette/", "fastapi/"),
    ),
)

RUNNER_PARTS: tuple[Part, ...] = (
    # Threads blocked on a queue, a lock, a socket, a pipe or the job's end: py-spy's own idle
    # test misses them on this machine.
    Part(
        IDLE,
        (
            EXECUTOR_WAITING,
            "^Agent._next_event (",
            "^JobSlot._serve (",
            "^Condition.wait (threading.py",
            "^Thread._wait_for_tstate_lock (",
            "^EpollSelector.select (",
            "^Assembler.get_next_frame (",
            "^Popen._try_wait (",
        ),
    ),
    Part("the job's process started (`Popen`)", ("Popen._execute_child (",)),
    Part("threads moved between cores (`sched_setaffinity`)", ("benchrunner/runner/cores",)),
    Part("the in-flight record", ("benchrunner/runner/inflight",)),
    Part(
        "results written and synced (the spool, `fsync`)",
        ("benchrunner/runner/spool", "benchrunner/runner/durable", "benchrunner/runner/outbox"),
    ),
    Part("working directories made and removed", ("tempfile.py", "shutil.py")),
    Part(
        "the rest of a job's set-up and end",
        ("benchrunner/runner/job", "benchrunner/runner/executors"),
    ),
    Part("heartbeats", ("benchrunner/runner/heartbeat",)),
    Part("the live log", ("benchrunner/runner/log_stream",)),
    Part(
        "the channel (messages read and sent)",
        ("benchrunner/runner/channel", "benchrunner/runner/transport", "websockets/"),
    ),
)

PARTS = {"server": SERVER_PARTS, "runner": RUNNER_PARTS}
OTHER = "other"


def read_stacks(path: Path) -> Iterable[tuple[list[str], int]]:
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            yield stack.split(";"), int(count)


def _marks(marker: str, frames: Sequence[str]) -> bool:
    """``^marker``: the innermost frame starts with it; otherwise any frame contains it."""
    if marker.startswith("^"):
        return frames[-1].startswith(marker[1:])
    return any(marker in frame for frame in frames)


def part_of(frames: Sequence[str], parts: Sequence[Part]) -> str:
    for part in parts:
        if any(_marks(marker, frames) for marker in part.markers):
            return part.name
    return OTHER


def shares(
    paths: Sequence[Path], parts: Sequence[Part]
) -> tuple[collections.Counter[str], collections.Counter[str]]:
    """Samples per part, and per innermost frame of the stacks no part names."""
    per_part: collections.Counter[str] = collections.Counter()
    unnamed: collections.Counter[str] = collections.Counter()
    for path in paths:
        for frames, count in read_stacks(path):
            name = part_of(frames, parts)
            per_part[name] += count
            if name == OTHER:
                unnamed[frames[-1]] += count
    return per_part, unnamed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("raw", type=Path, nargs="+", help="py-spy raw output files (summed)")
    parser.add_argument("--parts", choices=sorted(PARTS), default="server")
    parser.add_argument("--unnamed", type=int, default=0, help="list the N commonest others")
    args = parser.parse_args()
    parts = PARTS[args.parts]
    per_part, unnamed = shares(args.raw, parts)
    idle = per_part.pop(IDLE, 0)
    total = sum(per_part.values())
    if total == 0:
        raise SystemExit("no samples in " + ", ".join(str(p) for p in args.raw))
    print("| where | share | samples |\n| --- | --- | --- |")
    for name in [part.name for part in parts] + [OTHER]:
        if per_part[name]:
            print(f"| {name} | {100 * per_part[name] / total:.1f} % | {per_part[name]} |")
    print(f"| samples counted | | {total} |")
    print(f"({idle} samples of threads waiting left out)")
    for frame, count in unnamed.most_common(args.unnamed):
        print(f"{count:8d}  {frame}")


if __name__ == "__main__":
    main()
