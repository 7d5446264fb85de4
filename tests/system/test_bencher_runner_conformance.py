"""Bencher's runner binary, unchanged, on our channel (docs/decisions/bencher-runner.md).

A raw WebSocket sends exactly the messages Bencher's runner sends (no extensions announced,
a key in Bencher's format) and every frame the server answers is read by the rules of
Bencher's runner (``tests.bencher_runner_rules``); then the same scenarios with our runner's
extensions announced, where the extensions must appear. The channel does not depend on the
engine, so this runs on SQLite only: one server for the whole module, each test in a project,
spec and runner names of its own (``tenant``).
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from benchrunner.api.jobs import Job
from benchrunner.protocol import OUR_EXTENSIONS, JobAssigned, parse_server_message
from tests.bencher_runner_rules import read_close_reason, read_server_message
from tests.harness import HEARTBEAT_TIMEOUT, Deployment, RawChannel, cli, output_json, wait_until
from tests.registry_support import push_image, registry_token, v2

BENCHER_METADATA = {"os": "linux", "arch": "x86_64", "version": "0.6.12"}
BMF = json.dumps({"bench::add": {"latency": {"value": 42.0}}})


@pytest.fixture(scope="module")
def shared(shared_deployment: Deployment) -> Deployment:
    """The module's one server, on SQLite alone, under ``tenant``."""
    return shared_deployment


class Wire:
    """One runner connection; every server frame is checked against Bencher's runner's rules,
    and, when our extensions were announced, against our own protocol first (an extension
    message is read by our rules only)."""

    def __init__(self, deployment: Deployment, name: str, *, ours: bool) -> None:
        self.deployment = deployment
        self.ours = ours
        server = deployment.server
        response = httpx.post(
            f"{server.url}/v0/runners",
            json={
                "name": f"{deployment.names}{name}",
                "specs": [deployment.spec],
                "key_format": "bencher",
            },
            headers={"Authorization": f"Bearer {server.token}"},
        )
        assert response.status_code == 201, response.text
        self.slug, self.key = response.json()["slug"], response.json()["key"]
        extensions = OUR_EXTENSIONS if ours else ()
        self.raw = RawChannel(server, self.slug, self.key, extensions=extensions)
        deployment.channels.append(self.raw)

    def recv(self, timeout: float = 15) -> dict[str, Any]:
        text = self.raw.ws.recv(timeout=timeout)
        assert isinstance(text, str), text
        if self.ours and parse_server_message(text).event == "error":
            return dict(json.loads(text))  # an extension: Bencher's runner is never sent one
        return read_server_message(text)

    def ask(self, message: dict[str, Any] | str, timeout: float = 15) -> dict[str, Any]:
        self.raw.send(message)
        return self.recv(timeout)

    def ready(self, poll_timeout: int = 5) -> dict[str, Any]:
        message: dict[str, Any] = {
            "event": "ready",
            "poll_timeout": poll_timeout,
            "runner": BENCHER_METADATA,
        }
        if self.ours:
            message["extensions"] = list(OUR_EXTENSIONS)
        return self.ask(message, timeout=poll_timeout + 10)

    def closed(self, timeout: float = 30) -> tuple[int | None, str]:
        """Read (and check) frames until the server closes; the close code and reason."""
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                try:
                    self.recv(timeout=max(0.01, deadline - time.monotonic()))
                except TimeoutError:
                    continue
        except ConnectionClosed:
            pass
        close = self.raw.ws.protocol.close_rcvd
        return (close.code, close.reason) if close else (None, "")


def _image_job(deployment: Deployment) -> str:
    server = deployment.server
    with v2(
        server, registry_token(server, server.token, f"repository:{deployment.project}:push")
    ) as client:
        image = push_image(client, deployment.project, "v1", b"bench layer")
    with deployment.admin() as admin:
        created = admin.run(
            {
                "project": deployment.project,
                "spec": deployment.spec,
                "image": image,
                "settings": {"adapter": "json"},
            }
        )
    return str(created.job)


def _job(deployment: Deployment, job_uuid: str) -> Job:
    with deployment.admin() as admin:
        return admin.get_job(deployment.project, job_uuid)


@pytest.mark.parametrize("ours", [False, True], ids=["bencher", "extensions"])
def test_a_job_from_ready_to_result(tenant: Deployment, ours: bool) -> None:
    wire = Wire(tenant, "runner", ours=ours)
    assert wire.ready(poll_timeout=1) == {"event": "no_job"}
    job_uuid = _image_job(tenant)
    job = wire.ready()
    assert job["event"] == "job" and job["uuid"] == job_uuid
    assert job["spec"]["os"] == "linux" and job["spec"]["architecture"] == "x86_64"
    assert ("nonce" in job) is ours  # our extension, only for a runner that announced it
    assert wire.ask({"event": "running"}) == {"event": "ack", "job": job_uuid}
    assert wire.ask({"event": "heartbeat"}) == {"event": "ack", "job": job_uuid}
    completed = {
        "event": "completed",
        "job": job_uuid,
        "results": [{"exit_code": 0, "stdout": BMF, "stderr": ""}],
    }
    assert wire.ask(completed) == {"event": "ack", "job": job_uuid}
    assert wire.ask(completed) == {"event": "ack", "job": job_uuid}  # a resend
    wait_until(lambda: _job(tenant, job_uuid).status == "processed", timeout=30)

    different = {**completed, "results": [{"exit_code": 0, "stdout": "{}", "stderr": ""}]}
    reply = wire.ask(different)
    if ours:
        assert reply["event"] == "error" and "different result" in reply["message"]
    else:  # Bencher's server acknowledges a late result and keeps the first
        assert reply == {"event": "ack", "job": job_uuid}
    stored = _job(tenant, job_uuid)
    assert stored.status == "processed"
    assert output_json(stored)["results"][0]["stdout"] == BMF


@pytest.mark.parametrize("ours", [False, True], ids=["bencher", "extensions"])
def test_what_the_server_would_refuse(tenant: Deployment, ours: bool) -> None:
    wire = Wire(tenant, "runner", ours=ours)
    stranger = "00000000-0000-0000-0000-000000000001"
    failed = {"event": "failed", "job": stranger, "results": [], "error": "boom"}
    reply = wire.ask(failed)
    if ours:
        assert reply["event"] == "error" and "not claimed by this runner" in reply["message"]
    else:  # Bencher's server acknowledges a result for a job it does not know
        assert reply == {"event": "ack", "job": stranger}
    # Between jobs, Bencher's server ignores a heartbeat and a running: the next frame its
    # runner sees is the answer to its ready. Ours are told.
    wire.raw.send({"event": "heartbeat"})
    wire.raw.send({"event": "running"})
    if ours:
        assert wire.recv() == {"event": "ack"}
        assert wire.recv()["event"] == "error"
    assert wire.ready(poll_timeout=1) == {"event": "no_job"}
    wire.raw.send('{"event": "ready", "poll_timeout": ')
    if ours:
        assert wire.recv()["event"] == "error"
        assert wire.ready(poll_timeout=1) == {"event": "no_job"}
    else:  # Bencher's server's handler returns on a message it cannot read: no close frame
        assert wire.closed() == (None, "")
        assert wire.raw.ws.protocol.state is State.CLOSED


@pytest.mark.parametrize("ours", [False, True], ids=["bencher", "extensions"])
def test_a_silent_runner_is_closed_with_bencher_s_code_and_reason(
    tenant: Deployment, ours: bool
) -> None:
    wire = Wire(tenant, "runner", ours=ours)
    job_uuid = _image_job(tenant)
    assert wire.ready()["uuid"] == job_uuid
    assert wire.ask({"event": "running"}) == {"event": "ack", "job": job_uuid}
    code, reason = wire.closed(timeout=HEARTBEAT_TIMEOUT * 4)
    assert code == 1000
    assert reason == '"heartbeat_timeout"'
    assert read_close_reason(reason) == "heartbeat_timeout"
    assert _job(tenant, job_uuid).status == "failed"


def test_a_ready_mid_job_is_acknowledged_with_the_job_and_is_no_heartbeat(
    tenant: Deployment,
) -> None:
    """Bencher's server answers a ``ready`` during a job with ``ack`` carrying the job, keeps
    the job, and does not count the ``ready`` as a heartbeat. (Our runner, which announces
    extensions, sends ``ready`` only after losing its job: that fails it, test_channel.py.)"""
    wire = Wire(tenant, "runner", ours=False)
    job_uuid = _image_job(tenant)
    assert wire.ready()["uuid"] == job_uuid
    assert wire.ask({"event": "running"}) == {"event": "ack", "job": job_uuid}
    assert wire.ready() == {"event": "ack", "job": job_uuid}
    assert _job(tenant, job_uuid).status == "running"
    assert wire.ask({"event": "heartbeat"}) == {"event": "ack", "job": job_uuid}
    alive_until = time.monotonic() + HEARTBEAT_TIMEOUT
    # From here on only readys: the channel ends at the heartbeat's deadline all the same.
    deadline = alive_until + HEARTBEAT_TIMEOUT * 2
    with contextlib.suppress(ConnectionClosed):
        while time.monotonic() < deadline:
            assert wire.ready() == {"event": "ack", "job": job_uuid}
            with contextlib.suppress(TimeoutError):
                pytest.fail(f"unexpected {wire.recv(timeout=HEARTBEAT_TIMEOUT / 5)}")
    assert time.monotonic() >= alive_until - 1, "closed before the heartbeat's deadline"
    close = wire.raw.ws.protocol.close_rcvd
    assert close is not None, "a ready kept the channel alive past the heartbeat's deadline"
    assert (close.code, read_close_reason(close.reason)) == (1000, "heartbeat_timeout")
    assert _job(tenant, job_uuid).status == "failed"


def test_a_bencher_key_authenticates_and_rotates(tenant: Deployment) -> None:
    server = tenant.server
    admin = {"Authorization": f"Bearer {server.token}"}
    wire = Wire(tenant, "keyed", ours=False)
    assert wire.ready(poll_timeout=1) == {"event": "no_job"}
    rotated = httpx.post(f"{server.url}/v0/runners/{wire.slug}/key", headers=admin)
    assert rotated.status_code == 201, rotated.text
    answer = rotated.json()
    assert set(answer) == {"uuid", "key"}
    assert answer["key"].startswith("bencher_runner_") and len(answer["key"]) == 45
    assert wire.closed()[0] == 1008  # the old key's channel ends at once
    with pytest.raises(Exception, match="401"):
        RawChannel(server, wire.slug, wire.key, extensions=())
    fresh = RawChannel(server, wire.slug, answer["key"], extensions=())
    tenant.channels.append(fresh)
    fresh.send({"event": "ready", "poll_timeout": 1})
    assert read_server_message(str(fresh.ws.recv(timeout=15))) == {"event": "no_job"}
    # our /token still rotates into the hex format, through the same lookup
    token = httpx.post(f"{server.url}/v0/runners/{wire.slug}/token", headers=admin).json()
    assert len(token["token"]) == 79
    ours = RawChannel(server, wire.slug, token["token"])
    tenant.channels.append(ours)
    assert ours.ask({"event": "ready", "poll_timeout": 1}) == {"event": "no_job"}


def test_the_cli_creates_and_rotates_runners_with_bencher_keys(
    tenant: Deployment, tmp_path: Path
) -> None:
    env = tenant.cli_env(tmp_path)
    made = cli(
        "runner", "create", f"{tenant.names}CLI keyed", "--spec", tenant.spec,
        "--key-format", "bencher", "--json", env=env,
    )  # fmt: skip
    created = json.loads(made.stdout)
    assert _is_bencher_key(created["token"]) and created["key"] == created["token"]
    channel = RawChannel(tenant.server, created["slug"], created["token"], extensions=())
    tenant.channels.append(channel)
    channel.send({"event": "ready", "poll_timeout": 1})
    assert read_server_message(str(channel.ws.recv(timeout=15))) == {"event": "no_job"}

    shown = cli("runner", "rotate-token", created["slug"], "--key-format", "bencher", env=env)
    rotated = shown.stdout.split()
    assert [word for word in rotated if _is_bencher_key(word)], shown.stdout
    ours = json.loads(cli("runner", "rotate-token", created["slug"], "--json", env=env).stdout)
    assert len(ours["token"]) == len("bencher_runner_") + 64
    refused = cli("runner", "create", "x", "--key-format", "base64", env=env, check=False)
    assert refused.returncode == 2 and "base64" in refused.stderr


def _is_bencher_key(text: str) -> bool:
    body = text.removeprefix("bencher_runner_")
    return text != body and len(body) == 30 and body.isascii() and body.isalnum()


def test_a_runner_that_did_not_announce_templates_is_never_offered_a_template_job(
    tenant: Deployment,
) -> None:
    template_job = tenant.submit("bench.noop")  # first in line
    image_job = _image_job(tenant)
    bencher = Wire(tenant, "bencher", ours=False)
    assert bencher.ready()["uuid"] == image_job
    assert _job(tenant, template_job).status == "pending"
    # A template job is outside Bencher's protocol: read by ours alone.
    ours = Wire(tenant, "ours", ours=True).raw
    ready = {"event": "ready", "poll_timeout": 5, "extensions": list(OUR_EXTENSIONS)}
    offered = parse_server_message(json.dumps(ours.ask(ready, timeout=15)))
    assert isinstance(offered, JobAssigned) and offered.uuid == uuid.UUID(template_job)
