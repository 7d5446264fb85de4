"""Runner configuration and connection basics: channel URL, reconnect backoff, options."""

from __future__ import annotations

import errno
import os
import queue
import random
from pathlib import Path

import pytest

from benchrunner.runner import RunnerOptions, run_agent
from benchrunner.runner.backoff import Backoff
from benchrunner.runner.channel import channel_url
from benchrunner.runner.connector import Connector
from benchrunner.runner.cores import CorePlan
from tests.harness import free_port

KEY = "bencher_runner_" + "ab" * 32


@pytest.mark.parametrize(
    ("host", "runner", "url"),
    [
        ("http://127.0.0.1:8080", "r1", "ws://127.0.0.1:8080/v0/runners/r1/channel"),
        ("https://bench.example.com/", "r1", "wss://bench.example.com/v0/runners/r1/channel"),
        (
            "HTTPS://bench.example.com/api",
            "r1",
            "wss://bench.example.com/api/v0/runners/r1/channel",
        ),
        ("ws://h:1", "a b/c", "ws://h:1/v0/runners/a%20b%2Fc/channel"),
    ],
)
def test_channel_url(host: str, runner: str, url: str) -> None:
    assert channel_url(host, runner) == url


@pytest.mark.parametrize(
    ("host", "runner"), [("ftp://h", "r"), ("127.0.0.1:8080", "r"), ("http://h", "")]
)
def test_channel_url_refuses(host: str, runner: str) -> None:
    with pytest.raises(ValueError, match="runner"):
        channel_url(host, runner)


def test_backoff_grows_with_full_jitter_up_to_the_cap_and_resets() -> None:
    backoff = Backoff(initial=0.1, cap=5.0, rng=random.Random(7))
    ceilings = [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0]
    delays = [backoff.next_delay() for _ in ceilings]
    assert all(0.0 <= delay < ceiling for delay, ceiling in zip(delays, ceilings, strict=True))
    backoff.reset()
    assert backoff.next_delay() < 0.1


def test_backoff_is_jittered_across_runners() -> None:
    firsts = {Backoff(rng=random.Random(seed)).next_delay() for seed in range(20)}
    assert len(firsts) == 20


def options(tmp_path: Path, **changes: object) -> RunnerOptions:
    values: dict[str, object] = {
        "host": "http://127.0.0.1:9",
        "runner": "r1",
        "key": KEY,
        "templates": None,
        "spool": tmp_path / "spool",
    }
    values.update(changes)
    return RunnerOptions(**values)  # type: ignore[arg-type]


def test_options_never_show_the_key(tmp_path: Path) -> None:
    assert KEY not in repr(options(tmp_path))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"poll_timeout": 0}, "poll_timeout must be 1-900 s"),
        ({"poll_timeout": 901}, "poll_timeout must be 1-900 s"),
        ({"kill_grace": -1.0}, "must not be negative"),
        ({"heartbeat_interval": 0.0}, "heartbeat_interval must be positive"),
        ({"key": ""}, "a runner key is required"),
    ],
)
def test_invalid_options(tmp_path: Path, changes: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        options(tmp_path, **changes).validate()


@pytest.mark.parametrize(
    ("changes", "logged"),
    [
        ({"executor": "microvm"}, "executor 'microvm' is not available"),
        ({"executor": "sandbox", "oci_runtime": "podman"}, "unknown OCI runtime 'podman'"),
        ({"executor": "docker"}, "unknown executor 'docker'"),
        ({"host": "localhost:8080"}, "runner host must be an http:// or https:// URL"),
        ({"templates": Path("/nonexistent/templates.toml")}, "cannot read templates file"),
        ({"poll_timeout": 0}, "poll_timeout"),
    ],
)
def test_unusable_configuration_exits_2_without_connecting(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, changes: dict[str, object], logged: str
) -> None:
    assert run_agent(options(tmp_path, **changes)) == 2
    assert logged in caplog.text
    assert KEY not in caplog.text


def test_a_host_without_pidfd_open_refuses_to_start_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(pid: int, flags: int = 0) -> int:
        raise OSError(errno.EPERM, "Operation not permitted")  # as a seccomp filter answers

    monkeypatch.setattr(os, "pidfd_open", refused)
    assert run_agent(options(tmp_path)) == 2
    assert [record.getMessage() for record in caplog.records if record.levelname == "ERROR"] == [
        "runner not started: the runner needs Linux 5.3 or later: os.pidfd_open is unusable "
        "here ([Errno 1] Operation not permitted)"
    ]


def test_connector_moves_to_the_next_replica_and_names_its_host() -> None:
    dead = [f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"]
    connector = Connector(
        dead,
        "r1",
        "bencher_runner_" + "0" * 64,
        events=queue.SimpleQueue(),
        cores=CorePlan(),
        user_agent="test",
    )
    assert connector.host == dead[0]
    assert connector.url == channel_url(dead[0], "r1")
    assert connector.connect() is None  # nothing listens there
    assert connector.host == dead[1]  # the sandbox pulls from this one next
    assert connector.url == channel_url(dead[1], "r1")
