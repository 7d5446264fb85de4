"""The channel protocol at its edges: authentication, bad input, matching and limits.

One server per engine serves the tests that need no server of their own; each works in a project,
spec and runner names of its own (``tenant``), so no other test's channel can claim its jobs. A
server of its own (``deployment``) is kept where the test counts the server's connected runners
or queue, or needs other settings or a second replica."""

from __future__ import annotations

import contextlib
import json
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.databases import postgres_database
from tests.harness import Deployment, RawChannel, deploy, output_json, wait_until


def _rejected(deployment: Deployment, runner: str, token: str) -> int:
    with pytest.raises(InvalidStatus) as info:
        RawChannel(deployment.server, runner, token)
    return info.value.response.status_code


def test_bad_rotated_and_archived_tokens_are_rejected(tenant: Deployment) -> None:
    slug, token = tenant.new_runner("guarded")
    assert _rejected(tenant, slug, "bencher_runner_" + "0" * 64) == 401
    assert _rejected(tenant, slug, "not-a-runner-token") == 401
    other, _ = tenant.new_runner("other")
    assert _rejected(tenant, other, token) == 401  # right token, wrong runner
    RawChannel(tenant.server, slug, token).close()
    with tenant.admin() as client:
        rotated = client.rotate_runner_token(slug).token
    assert _rejected(tenant, slug, token) == 401
    RawChannel(tenant.server, slug, rotated).close()
    with tenant.admin() as client:
        client.update_runner(slug, archived=True)
    assert _rejected(tenant, slug, rotated) == 401


def _nested(depth: int) -> str:
    return '{"event": "heartbeat", "x": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.engine_independent
def test_invalid_messages_get_an_error_and_the_channel_stays_open(tenant: Deployment) -> None:
    logged = tenant.server.log.stat().st_size
    channel = tenant.channel("sloppy")
    job = str(uuid.uuid4())
    for bad, explained in [
        ("not json", "not valid JSON"),
        ("[1]", "not a JSON object"),
        ('{"no": "event"}', "missing 'event'"),
        ('{"event": "dance"}', "unknown event 'dance'"),
        ('{"event": "ready", "poll_timeout": 5000}', "less than or equal to 900"),
        ('{"event": "ready", "poll_timeout": true}', "valid integer"),
        ('{"event": "ready", "poll_timeout": "5"}', "valid integer"),
        (f'{{"event": "completed", "job": "{job}", "results": [{{"exit_code": "0"}}]}}', "integer"),
        ('{"event": "completed"}', "job: Field required"),
        (_nested(1_000), "nested deeper than 200 levels"),
        (_nested(100_000), "nested deeper than 200 levels"),
        ("[" * 100_000, "nested deeper than 200 levels"),
    ]:
        reply = channel.ask(bad)
        assert reply["event"] == "error" and explained in reply["message"], (bad[:60], reply)
    channel.ws.send(b"\x00binary")
    assert channel.recv()["event"] == "error"
    # An error names the message it refuses, as far as the server could read it.
    assert "reply_to" not in channel.ask('{"event": "dance"}')
    assert channel.ask('{"event": "completed"}')["reply_to"] == "completed"
    refused = channel.ask({"event": "completed", "job": job, "results": []})
    assert (refused["event"], refused["reply_to"], refused["job"]) == ("error", "completed", job)
    assert channel.ask({"event": "ready", "poll_timeout": 1})["event"] == "no_job"
    assert "Traceback" not in tenant.server.log_since(logged)


@pytest.mark.engine_independent
def test_a_burst_of_messages_gets_every_answer_in_order(tenant: Deployment) -> None:
    """Messages that arrive together are answered in the same turn of the server's loop and
    their answers written together (server/app/websocket_protocol.py): each still gets its own,
    in order, a heartbeat read without parsing its ``ack`` and a malformed one its ``error``."""
    channel = tenant.channel("bursty")
    burst = ['{"event":"heartbeat"}', "not json", '{"event":"heartbeat"}', '{"event": "dance"}']
    for text in burst * 25:
        channel.send(text)
    assert [channel.recv()["event"] for _ in burst * 25] == ["ack", "error", "ack", "error"] * 25
    assert channel.ask({"event": "ready", "poll_timeout": 1})["event"] == "no_job"


@pytest.mark.engine_independent
def test_a_text_message_that_is_not_utf8_closes_with_1007_without_a_traceback(
    tenant: Deployment,
) -> None:
    logged = tenant.server.log.stat().st_size
    channel = tenant.channel("garbled")
    channel.ws.send(b'{"event": "heartbeat\xff"}', text=True)
    assert channel.wait_closed(timeout=10)[0] == 1007
    with tenant.admin() as client:
        assert client.health().status == "ok"
    log = tenant.server.log_since(logged)
    assert "not UTF-8; closed with 1007" in log
    assert "Traceback" not in log


def test_a_reconnecting_runner_supersedes_its_older_channel(deployment: Deployment) -> None:
    slug, key = deployment.new_runner("flaky")
    old = RawChannel(deployment.server, slug, key)
    deployment.channels.append(old)
    old.send({"event": "ready", "poll_timeout": 900})  # the old socket waits for a job...
    new = RawChannel(deployment.server, slug, key)
    deployment.channels.append(new)
    assert old.wait_closed(timeout=10) == (4001, "superseded")
    job_uuid = deployment.submit("bench.noop")  # ...which must not go to it
    assert new.claim()["uuid"] == job_uuid
    assert new.ask({"event": "running"}) == {"event": "ack", "job": job_uuid}
    assert new.ask({"event": "completed", "job": job_uuid, "results": []})["event"] == "ack"
    with deployment.admin() as client:
        assert client.health().connected_runners == 1


@pytest.mark.postgresql
def test_a_job_claimed_into_a_lost_channel_returns_to_the_queue_at_the_runners_next_ready(
    tmp_path: Path,
) -> None:
    """Runner R's old connection on replica A is half-open (A cannot tell) and still has a
    ``ready`` waiting; R is connected again on replica B. A job claimed through A goes into the
    void; R's next ``ready`` on B returns it to the queue at once (it never started: nothing of
    it is lost) instead of after A's timeouts, and takes it."""
    with postgres_database() as url, deploy(tmp_path, url, heartbeat_timeout=60.0) as deployment:
        replica_b = deployment.add_replica("replica-b")
        slug, key = deployment.new_runner("split")
        lost = RawChannel(deployment.server, slug, key)
        deployment.channels.append(lost)
        lost.send({"event": "ready", "poll_timeout": 900})
        current = RawChannel(replica_b, slug, key)
        deployment.channels.append(current)
        job_uuid = deployment.submit("bench.noop")
        deployment.wait_status(job_uuid, "claimed")
        current.send({"event": "ready", "poll_timeout": 1})
        sent = current.recv(timeout=10)
        assert (sent["event"], sent["uuid"]) == ("job", job_uuid)
        job = deployment.job(job_uuid)
        assert job.status == "claimed"
        returned = [e for e in job.events if e.event_type == "job_returned"]
        assert returned and str(returned[0].message).startswith("undelivered: the runner asked")
        assert not any("runner_lost_job" in str(e.message) for e in job.events)


def test_terminal_message_for_someone_elses_job_is_an_error(tenant: Deployment) -> None:
    holder = tenant.channel("holder")
    thief = tenant.channel("thief")
    job_uuid = tenant.submit("bench.noop")
    holder.claim()
    reply = thief.ask({"event": "completed", "job": job_uuid, "results": []})
    assert reply["event"] == "error"
    assert tenant.status(job_uuid) == "claimed"


def test_a_different_repeated_result_is_rejected(tenant: Deployment) -> None:
    channel = tenant.channel("twice")
    job_uuid = tenant.submit("bench.noop")
    channel.claim()
    channel.ask({"event": "running"})
    result = {"exit_code": 0, "stdout": '{"x": {"y": {"value": 1}}}'}
    done = {"event": "completed", "job": job_uuid, "results": [result]}
    assert channel.ask(done) == {"event": "ack", "job": job_uuid}
    assert channel.ask(done) == {"event": "ack", "job": job_uuid}  # a resend is fine
    changed = {**done, "results": [{**result, "stdout": '{"x": {"y": {"value": 2}}}'}]}
    assert channel.ask(changed)["event"] == "error"
    job = tenant.wait_status(job_uuid, "processed")
    assert output_json(job)["results"] == [{**result, "stderr": None, "output": None}]


def test_spec_mismatch_is_never_claimed(tenant: Deployment) -> None:
    with tenant.admin() as client:
        big = client.create_spec(
            name=f"{tenant.spec}-big",
            architecture="x86_64",
            cpu=64,
            memory=1 << 40,
            disk=1 << 40,
            network=False,
        ).slug
    channel = tenant.channel("small-only")
    job_uuid = tenant.submit("bench.noop")  # the tenant's small spec
    with tenant.admin() as client:
        big_job = str(
            client.run({"project": tenant.project, "spec": big, "template": "bench.noop"}).job
        )
    assert channel.claim()["uuid"] == job_uuid
    channel.ask({"event": "running"})
    channel.ask({"event": "completed", "job": job_uuid, "results": []})
    assert channel.ask({"event": "ready", "poll_timeout": 1})["event"] == "no_job"
    assert tenant.status(big_job) == "pending"


def test_paused_runner_claims_nothing_until_unpaused(tenant: Deployment) -> None:
    channel = tenant.channel("sleepy")
    slug = tenant.channels[-1].ws.request.path.split("/")[3]  # type: ignore[union-attr]
    with tenant.admin() as client:
        client.update_runner(slug, paused=True)
    job_uuid = tenant.submit("bench.noop")
    assert channel.ask({"event": "ready", "poll_timeout": 1})["event"] == "no_job"
    channel.send({"event": "ready", "poll_timeout": 30})
    with tenant.admin() as client:
        client.update_runner(slug, paused=False)
    assert channel.recv(timeout=10)["uuid"] == job_uuid


@pytest.mark.engine_independent
def test_oversized_message_is_rejected_at_the_protocol_level(
    tmp_path: Path, database_url: str
) -> None:
    with deploy(tmp_path, database_url, request_body_max_bytes=64 * 1024) as deployment:
        channel = deployment.channel("big-mouth")
        channel.send({"event": "heartbeat", "padding": "x" * (100 * 1024)})
        code, _ = channel.wait_closed(timeout=10)
        assert code == 1009
        assert _close_codes_of_huge_frames(deployment, tries=30) == Counter({1009: 30})
        with deployment.admin() as client:
            response = httpx.post(
                f"{deployment.server.url}/v0/run",
                content=b"{" + b" " * (100 * 1024) + b"}",
                headers={
                    "Authorization": f"Bearer {deployment.server.token}",
                    "Content-Type": "application/json",
                },
            )
            assert client.health().status == "ok"
        assert response.status_code == 413
        assert "exceeds" in response.json()["message"]


@pytest.mark.engine_independent
def test_template_arguments_out_of_range_are_rejected(tenant: Deployment) -> None:
    with tenant.admin() as client:
        for args, message in [
            ({"ms": 60001}, "must be <= 60000"),
            ({"ms": -1}, "must be >= 0"),
            ({"ms": "soon"}, "must be an int"),
            ({"sec": 1}, "no argument"),
        ]:
            response = httpx.post(
                f"{tenant.server.url}/v0/run",
                json={
                    "project": tenant.project,
                    "spec": tenant.spec,
                    "template": "bench.sleep",
                    "args": args,
                },
                headers={"Authorization": f"Bearer {tenant.server.token}"},
            )
            assert response.status_code == 400, response.text
            assert message in response.json()["message"]
        assert client.list_jobs(tenant.project) == []


@pytest.mark.engine_independent
@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"image": "sha256:" + "a" * 64}, "spec is required"),
        ({"spec": "small"}, "image or template is required"),
        (
            {"image": "sha256:" + "a" * 64, "spec": "small", "results": ["{}"]},
            "cannot provide both results and image",
        ),
        ({"template": "bench.noop"}, "spec is required for template"),
        (
            {"template": "bench.noop", "spec": "small", "image": "sha256:" + "a" * 64},
            "mutually exclusive",
        ),
        (
            {"template": "bench.noop", "spec": "small", "results": ["{}"]},
            "cannot provide both results and template",
        ),
        ({}, "results are required"),
        ({"template": "bench.nope", "spec": "small"}, "unknown template"),
    ],
)
def test_run_validation_table(tenant: Deployment, body: dict[str, Any], message: str) -> None:
    response = httpx.post(
        f"{tenant.server.url}/v0/run",
        json={"project": tenant.project, **body},
        headers={"Authorization": f"Bearer {tenant.server.token}"},
    )
    assert response.status_code == 400
    assert message in response.json()["message"]


# ------------------------------------------------------------------------- tiers


def _team_free_org(deployment: Deployment) -> str:
    """A project of a new free organization's; its slug."""
    with deployment.admin() as client:
        org = client.create_organization(f"{deployment.project}-cheap", "free").slug
        return str(client.create_project(org, f"{deployment.project}-cheap", "public").slug)


def test_free_tier_runs_one_job_at_a_time_per_organization(tenant: Deployment) -> None:
    cheap = _team_free_org(tenant)
    first, second = (tenant.channel(f"free-{i}") for i in range(2))
    with tenant.admin() as client:
        jobs = [
            client.run({"project": cheap, "spec": tenant.spec, "template": "bench.noop"}).job
            for _ in range(2)
        ]
    assert first.claim()["uuid"] == jobs[0]
    assert second.ask({"event": "ready", "poll_timeout": 1})["event"] == "no_job"
    second.send({"event": "ready", "poll_timeout": 30})
    first.ask({"event": "running"})
    first.ask({"event": "completed", "job": jobs[0], "results": []})
    assert second.recv(timeout=10)["uuid"] == jobs[1]  # woken when the slot frees up


def test_unclaimed_tier_runs_one_job_at_a_time_per_source_ip(tenant: Deployment) -> None:
    landed: set[str] = set()

    def anonymous_run(source_ip: str) -> str:
        transport = httpx.HTTPTransport(local_address=source_ip)
        with httpx.Client(transport=transport) as client:
            response = client.post(
                f"{tenant.server.url}/v0/run",
                json={
                    "project": f"{tenant.project}-anon",
                    "spec": tenant.spec,
                    "template": "bench.noop",
                },
            )
        assert response.status_code == 201, response.text
        landed.add(response.json()["project"]["slug"])
        return str(response.json()["job"])

    a1, a2, b1 = anonymous_run("127.0.0.2"), anonymous_run("127.0.0.2"), anonymous_run("127.0.0.3")
    assert len(landed) == 1  # one project, made by the first run
    with tenant.admin() as client:
        jobs = client.list_jobs(landed.pop(), per_page=10)
    assert {j.priority for j in jobs} == {0}
    channels = [tenant.channel(f"anon-{i}") for i in range(3)]
    assert channels[0].claim()["uuid"] == a1
    assert channels[1].claim()["uuid"] == b1
    assert channels[2].ask({"event": "ready", "poll_timeout": 1})["event"] == "no_job"
    channels[0].ask({"event": "running"})
    channels[0].ask({"event": "failed", "job": a1, "results": [], "error": "boom"})
    assert channels[2].claim()["uuid"] == a2


# ------------------------------------------------------------------------- racing


@pytest.fixture
def busy(tmp_path: Path, database_url: str) -> Iterator[Deployment]:
    with deploy(tmp_path, database_url, heartbeat_timeout=30.0) as deployment:
        yield deployment


def test_eight_connections_race_for_four_hundred_jobs_each_runs_once(busy: Deployment) -> None:
    total = 400  # more jobs prove no more and cost CI time
    channels = [busy.channel(f"racer-{i}") for i in range(8)]
    seen: Counter[str] = Counter()
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work(channel: RawChannel) -> None:
        try:
            while True:
                reply = channel.ask({"event": "ready", "poll_timeout": 2}, timeout=30)
                if reply["event"] == "no_job":
                    with lock:
                        if sum(seen.values()) >= total:
                            return
                    continue
                job = reply["uuid"]
                with lock:
                    seen[job] += 1
                assert channel.ask({"event": "running"})["event"] == "ack"
                result = {"exit_code": 0, "stdout": json.dumps({"n": {"v": {"value": 1}}})}
                done = channel.ask({"event": "completed", "job": job, "results": [result]})
                assert done == {"event": "ack", "job": job}
        except BaseException as exc:  # surfaced in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(c,)) for c in channels]
    for thread in threads:
        thread.start()
    submitted = []
    with busy.admin() as client:
        for _ in range(total):
            submitted.append(
                client.run({"project": "bench", "spec": "small", "template": "bench.noop"}).job
            )
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors
    assert set(seen) == set(submitted)
    assert max(seen.values()) == 1
    with busy.admin() as client:
        wait_until(
            lambda: (client.health().queue or {}).get("completed") == 0,
            timeout=120,
            message="all jobs processed",
        )
    response = httpx.get(
        f"{busy.server.url}/v0/projects/bench/jobs",
        params={"status": "processed"},
        headers={"Authorization": f"Bearer {busy.server.token}"},
    )
    assert response.headers["X-Total-Count"] == str(total)


def _close_codes_of_huge_frames(deployment: Deployment, tries: int) -> Counter[int | None]:
    """Send a frame far over the limit on ``tries`` new channels; the close code each got.

    The frame's header already says it is too big while the rest is still arriving. Closing
    the socket on unread data makes the kernel send a reset, which can overtake the close frame:
    the runner would see an abrupt end and resend its result instead of shrinking it. The frame
    is larger than the loopback socket buffers, so the rest cannot all be waiting in them; before
    the server read on after its close frame, several of 30 tries lost their 1009."""
    slug, key = deployment.new_runner("huge-mouth")
    huge = json.dumps({"event": "heartbeat", "padding": "x" * (8 * 1024 * 1024)})
    codes: Counter[int | None] = Counter()
    for _ in range(tries):
        channel = RawChannel(deployment.server, slug, key)
        with contextlib.suppress(ConnectionClosed):  # the server may stop reading mid-frame
            channel.ws.send(huge)
        codes[channel.wait_closed(timeout=10)[0]] += 1
        channel.close()
    return codes
