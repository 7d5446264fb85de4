"""Processing's parser worker processes end with the server, however it ends: a server killed
with SIGKILL leaves none behind, and one stopped with SIGTERM shuts them down cleanly."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from tests.harness import Deployment, wait_until


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # The command may hold spaces and parentheses: the parent pid follows the last ')'.
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it ended meanwhile
        if int(fields[1]) == pid:
            found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    return state != "Z"


def _parse_in_workers(deployment: Deployment) -> set[int]:
    """Complete a job whose output goes to the parser workers; the workers started for it."""
    server = deployment.server
    assert server.proc is not None
    before = _children(server.proc.pid)
    job = deployment.submit("bench.sleep", {"ms": 1})
    channel = deployment.channel("worker-runner")
    assert channel.claim()["uuid"] == job
    channel.ask({"event": "running"})
    # Large enough to go to the parser workers (small batches are parsed on the loop).
    padding = " " * (32 * 1024)
    result = {"exit_code": 0, "stdout": '{"b": {"latency": {"value": 1}}}' + padding}
    assert channel.ask({"event": "completed", "job": job, "results": [result]})["event"] == "ack"
    deployment.wait_status(job, "processed")
    workers = _children(server.proc.pid) - before
    assert workers, "processing started no worker process"
    return workers


def test_parser_workers_end_with_a_killed_server(deployment: Deployment) -> None:
    workers = _parse_in_workers(deployment)

    deployment.server.kill(signal.SIGKILL)

    wait_until(
        lambda: not any(_alive(pid) for pid in workers),
        timeout=30,
        message=f"parser workers {sorted(workers)} to end after the server was killed",
    )


def test_a_terminated_server_shuts_its_parser_workers_down_cleanly(
    deployment: Deployment,
) -> None:
    """A pool shut down without waiting left its workers' semaphores to the resource tracker,
    which warned of them in plain text after the server's last JSON line."""
    workers = _parse_in_workers(deployment)

    deployment.server.kill(signal.SIGTERM)

    # uvicorn ends by re-raising the signal it stopped on
    assert deployment.server.proc is not None
    assert deployment.server.proc.returncode == -signal.SIGTERM
    # the pool was shut down waiting; on a loaded machine its workers' exits may still be
    # under way when the server's own has been seen
    wait_until(
        lambda: not any(_alive(pid) for pid in workers),
        timeout=30,
        message="the parser workers to exit",
    )
    log = deployment.server.log.read_text()
    assert "resource_tracker" not in log and "leaked" not in log, log
    for line in log.splitlines():
        assert isinstance(json.loads(line), dict), line
