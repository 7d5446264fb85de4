"""Live logs (docs/decisions/live-logs.md): a real runner streams a running job's output; the server
stores it by offset, serves it in pages of the redacted text and follows it to the job's end."""

from __future__ import annotations

import json
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest

from benchrunner.api.jobs import JobLogEnd, JobLogPage, JobLogPiece
from benchrunner.client import ApiError
from benchrunner.core.log_paging import DEFAULT_LIMIT, MAX_LIMIT
from tests.harness import (
    PROCESS_START_TIMEOUT,
    Deployment,
    RawChannel,
    cli,
    deploy,
    output_json,
    wait_until,
)

SECRET_TEXT = "Bearer abcdefghijkl0123 sk-abcdefghijklmnopqrstu"


def page(deployment: Deployment, job: str, **params: Any) -> JobLogPage:
    with deployment.admin() as client:
        return client.job_logs(deployment.project, job, **params)


def whole_log(deployment: Deployment, job: str, limit: int) -> tuple[str, JobLogPage]:
    offset, text = 0, b""
    while True:
        found = page(deployment, job, offset=offset, limit=limit)
        content = found.content.encode()
        assert len(content) <= limit
        text += content
        if found.is_complete or found.next_offset == offset:
            return text.decode(), found
        offset = found.next_offset


def cli_env(deployment: Deployment) -> dict[str, str]:
    return {
        "BENCHRUNNER_HOST": deployment.server.url,
        "BENCHRUNNER_TOKEN": deployment.server.token,
        "BENCHRUNNER_PROJECT": deployment.project,
    }


def test_a_running_jobs_log_is_readable_while_it_runs_and_followed_to_its_end(
    deployment: Deployment, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    runner = deployment.runner_process("streamer").start()
    job = deployment.submit("bench.ticker", {"gate": str(gate), "ms": 50, "text": SECRET_TEXT})

    def ticks_so_far() -> JobLogPage | None:
        found = page(deployment, job)
        return found if found.content.count("tick ") >= 3 else None

    running = wait_until(
        ticks_so_far, timeout=PROCESS_START_TIMEOUT, message="three ticks in the live log"
    )
    assert deployment.status(job) == "running"
    assert running.is_complete is False
    assert running.content.startswith("tick 0 Bearer [redacted] sk-[redacted]\n")
    assert "abcdefghijkl" not in running.content

    with deployment.admin() as client:
        follower = client.follow_job_logs(deployment.project, job)
        first = next(follower)  # the stream is open and has the ticks so far
        assert isinstance(first, JobLogPiece) and first.offset == 0
        gate.touch()
        *pieces, end = [first, *follower]
    assert isinstance(end, JobLogEnd) and end.status in ("completed", "processed")
    assert all(isinstance(piece, JobLogPiece) for piece in pieces)
    followed = "".join(piece.content for piece in pieces if isinstance(piece, JobLogPiece))
    assert [p.offset for p in pieces[1:] if isinstance(p, JobLogPiece)] == [
        p.next_offset for p in pieces[:-1]
    ], "each piece starts where the last ended"

    deployment.wait_status(job, "processed", "failed")
    text, last = whole_log(deployment, job, limit=100)
    assert last.is_complete is True
    assert text == followed
    assert text.endswith('{"ticker": {"latency": {"value": 1}}}\n')
    ticks = [line for line in text.splitlines() if line.startswith("tick ")]
    assert ticks == [f"tick {n} Bearer [redacted] sk-[redacted]" for n in range(len(ticks))]
    # The job's stored output (the source of truth for parsing) has the same lines, raw.
    stdout = output_json(deployment.job(job))["results"][0]["stdout"]
    assert stdout.count("tick ") == len(ticks) and "abcdefghijkl0123" in stdout
    runner.kill()


@pytest.mark.engine_independent
def test_the_cli_follows_a_jobs_log_until_the_job_ends(
    deployment: Deployment, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    deployment.runner_process("cli-streamer").start()
    job = deployment.submit("bench.ticker", {"gate": str(gate), "ms": 20})
    wait_until(
        lambda: "tick 2" in page(deployment, job).content,
        timeout=PROCESS_START_TIMEOUT,
        message="ticks",
    )
    gate.touch()
    followed = cli("job", "logs", job, "--follow", env=cli_env(deployment), timeout=60)
    assert followed.stdout.startswith("tick 0 \ntick 1 \n")
    assert followed.stdout.endswith('{"ticker": {"latency": {"value": 1}}}\n')
    assert f"job {job} is" in followed.stderr
    pages = cli("job", "logs", job, "--json", env=cli_env(deployment))
    last = json.loads(pages.stdout.splitlines()[-1])
    assert last["is_complete"] is True and last["next_offset"] == len(followed.stdout.encode())


@pytest.mark.engine_independent
def test_limits_and_offsets_are_checked(deployment: Deployment) -> None:
    job = deployment.submit("bench.noop")
    assert page(deployment, job).model_dump() == {
        "job_id": job,
        "offset": 0,
        "next_offset": 0,
        "is_complete": False,  # pending: more may come
        "content": "",
        "redaction_version": 1,
    }
    for params, message in [
        ({"limit": 131073}, "less than or equal to 131072"),
        ({"limit": 3}, "greater than or equal to 4"),
        ({"offset": -1}, "greater than or equal to 0"),
        ({"offset": 10}, "past the end of the log"),
    ]:
        with pytest.raises(ApiError) as info:
            page(deployment, job, **params)
        assert info.value.status == 400 and message in str(info.value)
    with pytest.raises(ApiError) as missing, deployment.admin() as client:
        client.job_logs(deployment.project, str(uuid.uuid4()))
    assert missing.value.status == 404


def test_a_runner_reconnecting_mid_job_resends_and_the_log_has_every_line_once(
    tmp_path: Path, database_url: str
) -> None:
    # The job must outlive the restart, however long a loaded machine takes over it: the
    # ticker's hard timeout (600 s) is far off, and so is the heartbeat timeout within which
    # the runner must be back (10 s by default, from the restarted server's recovery).
    with deploy(tmp_path, database_url, heartbeat_timeout=120.0) as deployment:
        _reconnect_mid_job(deployment, tmp_path / "gate")


def _reconnect_mid_job(deployment: Deployment, gate: Path) -> None:
    deployment.runner_process("survivor").start()
    padding = "x" * 200
    job = deployment.submit("bench.ticker", {"gate": str(gate), "ms": 20, "text": padding})

    def ticks() -> int:
        return whole_log(deployment, job, limit=MAX_LIMIT)[0].count("tick ")

    # More than a page of log before the restart, as a slow machine's restart leaves: the
    # ticks after it are on a later page.
    wait_until(
        lambda: page(deployment, job).next_offset >= DEFAULT_LIMIT,
        timeout=PROCESS_START_TIMEOUT,
        message="a page of ticks",
    )
    server = deployment.server
    assert server.proc is not None
    # Frozen, the server leaves what the runner sends in its socket's receive queue; killed
    # then, it loses it: chunks the runner sent, which only its resend window can bring back.
    server.proc.send_signal(signal.SIGSTOP)
    wait_until(lambda: unread_bytes(server.port) > 0, message="chunks sent to a frozen server")
    server.kill()
    server.start()
    before = ticks()
    try:
        wait_until(
            lambda: ticks() > before + 5,
            timeout=60,
            message="ticks after the restart",
        )
    except AssertionError as exc:
        ended = deployment.job(job)
        raise AssertionError(f"{exc}; the job is {ended.status}: {ended.events[-1]}") from None
    gate.touch()
    deployment.wait_status(job, "processed", "failed", timeout=60)
    text, last = whole_log(deployment, job, limit=4096)
    assert last.is_complete is True
    lines = [line for line in text.splitlines() if line.startswith("tick ")]
    assert lines == [f"tick {n} {padding}" for n in range(len(lines))], "every line once, in order"
    assert "lost]" not in text


def unread_bytes(port: int) -> int:
    """Bytes waiting in the receive queues of the established TCP connections to ``port``."""
    total = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, state, queues = fields[1], fields[3], fields[4]
        if int(local.split(":")[1], 16) == port and state == "01":
            total += int(queues.split(":")[1], 16)
    return total


def _log(job: str, offset: int, data: str, stream: str = "stdout") -> dict[str, Any]:
    return {"event": "log", "job": job, "stream": stream, "offset": offset, "data": data}


def test_resends_change_nothing_gaps_are_marked_and_no_log_is_answered(
    deployment: Deployment,
) -> None:
    """A raw runner that never announced ``log`` gets exactly one reply per message of its own,
    as before: ``log`` is never answered, so heartbeats still match their acks."""
    channel = deployment.channel("raw")
    job = deployment.submit("bench.noop")
    assert channel.claim()["uuid"] == job  # a ready without "extensions": nothing new comes
    assert channel.ask({"event": "running", "job": job})["event"] == "ack"
    channel.send(_log(job, 0, "héllo\n"))
    channel.send(_log(job, 0, "héllo\n"))  # a resend after a reconnect
    channel.send(_log(job, 3, "llo\nwor"))  # overlapping: only "wor" is new
    channel.send(_log(job, 0, "warn\n", "stderr"))
    channel.send(_log(job, 20, "ld\n"))  # bytes 10..20 never arrived
    channel.send(_log(job, 5, "X\nwor"))  # late and different: what is stored stays
    assert channel.ask({"event": "heartbeat"}) == {"event": "ack", "job": job}
    expected = "héllo\nwor" + "warn\n" + "\n[benchrunner: 10 bytes of stdout lost]\n" + "ld\n"
    wait_until(  # chunks are written in batches, about once a second
        lambda: page(deployment, job).content == expected, message="the chunks stored"
    )

    other = deployment.submit("bench.noop")
    channel.send(_log(other, 0, "not mine\n"))
    assert channel.recv() == {  # naming what it refuses: a runner never takes it for another's
        "event": "error",
        "message": f"log: job {other} is not in flight here",
        "reply_to": "log",
        "job": other,
    }
    assert channel.ask({"event": "heartbeat"}) == {"event": "ack", "job": job}
    assert channel.ask({"event": "completed", "job": job, "results": [{"exit_code": 0}]}) == {
        "event": "ack",
        "job": job,
    }
    channel.send(_log(job, 23, "after the end\n"))
    refused = channel.recv()
    assert refused["event"] == "error" and (refused["reply_to"], refused["job"]) == ("log", job)
    finished = page(deployment, job)
    assert finished.content == expected and finished.is_complete is True
    with pytest.raises(TimeoutError):
        channel.recv(timeout=0.5)  # nothing else came, ever


def test_a_stream_past_its_limit_ends_with_one_marker(tmp_path: Path, database_url: str) -> None:
    limit = 65536
    env = {"BENCHRUNNER_JOB_LOG_MAX_BYTES": str(limit)}
    with deploy(tmp_path, database_url, env=env) as deployment:
        channel = deployment.channel("raw")
        job = deployment.submit("bench.noop")
        assert channel.claim()["uuid"] == job
        assert channel.ask({"event": "running", "job": job})["event"] == "ack"
        channel.send(_log(job, 0, "a" * (limit - 10)))
        channel.send(_log(job, limit - 10, "b" * 20))  # crosses the limit: 10 bytes kept
        channel.send(_log(job, limit + 10, "c" * 5))  # past it: nothing, no second marker
        channel.send(_log(job, 0, "short\n", "stderr"))  # the other stream has its own limit
        assert channel.ask({"event": "heartbeat"}) == {"event": "ack", "job": job}
        marker = f"\n[benchrunner: stdout truncated at {limit} bytes]\n"
        expected = "a" * (limit - 10) + "b" * 10 + marker + "short\n"
        wait_until(
            lambda: whole_log(deployment, job, 131072)[0] == expected,
            message="the chunks stored",
        )
        channel.send(_log(job, limit + 20, "d" * 5))  # later: dropped, still one marker
        channel.send(_log(job, 6, "more\n", "stderr"))
        wait_until(
            lambda: whole_log(deployment, job, 131072)[0] == expected + "more\n",
            message="the last chunk stored",
        )


@pytest.mark.engine_independent
def test_a_runner_announces_the_log_extension_in_its_ready(deployment: Deployment) -> None:
    """What our runner sends; a server that does not know the field ignores it."""
    seen: list[dict[str, Any]] = []
    channel: RawChannel = deployment.channel("announcer")
    ready = {"event": "ready", "poll_timeout": 1, "extensions": ["log"]}
    seen.append(channel.ask(ready, timeout=10))
    assert seen == [{"event": "no_job"}]


def test_a_long_log_reads_the_same_through_the_index_of_positions(
    deployment: Deployment,
) -> None:
    """Pages far into a log start from the server's index of positions once it knows them;
    they are the same pages as when it had to read from the start."""
    lines = [f"line {i:06d} Bearer abcdefghij{i:06d} é\n" for i in range(80_000)]
    chunks = _chunks(lines, 65536)  # made before the claim: no silence on the channel for it
    channel = deployment.channel("long")
    # Storing 3.6 MB of log took a loaded machine longer than a usual job's hard timeout: the
    # job's is an hour, and a heartbeat follows each chunk, as a real runner's would.
    job = deployment.submit("bench.held")
    assert channel.claim()["uuid"] == job
    channel.ask({"event": "running", "job": job})
    offset = 0
    for data in chunks:
        channel.send(_log(job, offset, data))
        offset += len(data.encode())
        heartbeat = channel.ask({"event": "heartbeat"})
        assert heartbeat == {"event": "ack", "job": job}  # the chunk is handled
    redacted = [f"line {i:06d} Bearer [redacted] é\n" for i in range(len(lines))]
    expected = "".join(redacted)
    far = len("".join(redacted[:-100]).encode())  # 3 MiB in, past three checkpoints
    # Its chunks are written in batches; the job's result waits until all of them are.
    done = {"event": "completed", "job": job, "results": [{"exit_code": 0}]}
    assert channel.ask(done) == {"event": "ack", "job": job}
    cold = page(deployment, job, offset=far, limit=131072)
    warm = page(deployment, job, offset=far, limit=131072)
    assert cold == warm and cold.content == expected.encode()[far:].decode()
    text, _ = whole_log(deployment, job, limit=131072)
    assert text == expected


def _chunks(lines: list[str], size: int) -> list[str]:
    """``lines`` joined into chunks of at most ``size`` bytes, each ending at a line's end."""
    chunks: list[list[str]] = []
    filled = size
    for line in lines:
        length = len(line.encode())
        if filled + length > size:
            chunks.append([])
            filled = 0
        chunks[-1].append(line)
        filled += length
    return ["".join(chunk) for chunk in chunks]
