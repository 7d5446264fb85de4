"""A job submitted while a runner of its spec waits is claimed in the submission's own
transaction (``server/scheduling/hand_off.py``), on PostgreSQL by the statement inserting it
(``server/store/insert_claims.py``); a submission refused after it reserved the
runner gives the runner back; on PostgreSQL only a job no runner here took is announced to the
other replicas, by its own insert."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql

from benchrunner.server.scheduling.wakeups import CHANNEL
from benchrunner.server.store.listen import libpq_url
from tests.databases import postgres_database
from tests.harness import Deployment, RawChannel, deploy, wait_until
from tests.metrics_scrape import scrape
from tests.system.test_backpressure import assert_busy, busy_deployment, post_run


def waiting_runners(deployment: Deployment) -> int:
    with deployment.server.client() as client:
        return int(client.health().waiting_runners)


def claimed_lines(deployment: Deployment, job: str) -> list[dict[str, Any]]:
    """The server log's lines of ``job``'s move to ``claimed``."""
    return [
        line
        for line in deployment.server.log_lines()
        if line.get("event") == "job claimed" and line.get("job") == job
    ]


def run_one(channel: RawChannel, deployment: Deployment) -> str:
    """Submit a job, take it on ``channel`` and complete it; its UUID."""
    job = deployment.submit("bench.noop")
    assert channel.claim()["uuid"] == job
    channel.ask({"event": "running"})
    channel.ask({"event": "completed", "job": job, "results": []})
    return job


def test_a_job_for_a_waiting_runner_is_claimed_in_its_submission(deployment: Deployment) -> None:
    channel = deployment.channel("idle")
    first = run_one(channel, deployment)  # the server learns which spec the name resolves to
    channel.send({"event": "ready", "poll_timeout": 30})
    wait_until(lambda: waiting_runners(deployment) == 1, timeout=10)
    second = deployment.submit("bench.noop")
    assigned = channel.recv(timeout=10)
    assert assigned["event"] == "job" and assigned["uuid"] == second
    handed = deployment.job(second)
    assert handed.status == "claimed" and handed.claimed == handed.created, handed
    # Its move is logged once the job went out (``HandOffs.delivered``), exactly once: still
    # once after the job ended.
    wait_until(lambda: claimed_lines(deployment, second), timeout=10)
    channel.ask({"event": "running"})
    channel.ask({"event": "completed", "job": second, "results": []})
    wait_until(lambda: deployment.job(second).status == "processed", timeout=30)
    [line] = claimed_lines(deployment, second)
    assert line["runner"] == "idle"
    dispatched = deployment.job(first)  # claimed by the dispatcher, after the commit
    assert str(dispatched.claimed) > dispatched.created, dispatched


def test_a_handed_off_submission_answers_its_report_as_stored(deployment: Deployment) -> None:
    """A handed-off submission's answer is built on the event loop, without reading
    (``created_report_view_unread``): the very report a read of it answers."""
    channel = deployment.channel("idle")
    run_one(channel, deployment)
    channel.send({"event": "ready", "poll_timeout": 30})
    wait_until(lambda: waiting_runners(deployment) == 1, timeout=10)
    body = {
        "project": deployment.project,
        "spec": deployment.spec,
        "template": "bench.noop",
        "settings": {"adapter": "json"},
    }
    base = deployment.server.url
    auth = {"Authorization": f"Bearer {deployment.server.token}"}
    answered = httpx.post(f"{base}/v0/run", json=body, headers=auth, timeout=30)
    assert answered.status_code == 201, answered.text
    assert channel.recv(timeout=10)["event"] == "job"
    report = answered.json()
    where = f"{base}/v0/projects/{deployment.project}/reports/{report['uuid']}"
    read = httpx.get(where, headers=auth, timeout=30)
    handed = deployment.job(report["job"])  # the hand-off's path, whose answer reads nothing
    assert handed.claimed == handed.created, handed
    assert read.status_code == 200, read.text
    assert {**report, "deduplicated": None} == {**read.json(), "deduplicated": None}


def test_a_handed_off_submission_waits_for_no_flush_of_its_own(deployment: Deployment) -> None:
    """The submission that claims its job in its insert commits durably, once: no grouped
    commit and no WAL flush of its own (``benchrunner_db_wal_flushes_total``)."""
    channel = deployment.channel("idle")
    run_one(channel, deployment)
    channel.send({"event": "ready", "poll_timeout": 30})
    wait_until(lambda: waiting_runners(deployment) == 1, timeout=10)
    before = scrape(deployment.server.url)
    job = deployment.submit("bench.noop")
    assert channel.recv(timeout=10)["uuid"] == job
    after = scrape(deployment.server.url)
    for counter in ("benchrunner_db_grouped_commits_total", "benchrunner_db_wal_flushes_total"):
        assert after.value(counter) == before.value(counter), counter
    assert deployment.job(job).status == "claimed"


def test_a_limited_tier_job_for_a_waiting_runner_is_handed_to_it(deployment: Deployment) -> None:
    """On PostgreSQL the hand-off's claim is one statement of its own after the submission,
    which leaves a limited tier's job to a claim in a transaction (the tier's lock)."""
    with deployment.admin() as client:
        org = client.create_organization("cheap", "free").slug
        cheap = str(client.create_project(org, "cheap", "public").slug)
    channel = deployment.channel("idle")
    run_one(channel, deployment)
    channel.send({"event": "ready", "poll_timeout": 30})
    wait_until(lambda: waiting_runners(deployment) == 1, timeout=10)
    job = deployment.submit("bench.noop", project=cheap)
    assigned = channel.recv(timeout=10)
    assert assigned["event"] == "job" and assigned["uuid"] == job
    handed = deployment.job(job, project=cheap)
    assert handed.status == "claimed" and handed.claimed == handed.created, handed


def test_a_submission_refused_after_reserving_a_runner_leaves_it_waiting(
    tmp_path: Path, database_url: str
) -> None:
    with busy_deployment(
        tmp_path, database_url, max_queued_jobs="2", max_pending_per_organization="0"
    ) as deployment:
        with deployment.admin() as client:
            client.create_spec(
                name="big",
                architecture="x86_64",
                cpu=64,
                memory=1 << 40,
                disk=1 << 40,
                network=False,
            )
        channel = deployment.channel("small-only")
        run_one(channel, deployment)
        with deployment.admin() as client:
            body = {"project": deployment.project, "spec": "big", "template": "bench.noop"}
            blocking = [str(client.run(body).job) for _ in range(2)]  # nobody runs spec big
        channel.send({"event": "ready", "poll_timeout": 30})
        wait_until(lambda: waiting_runners(deployment) == 1, timeout=10)
        assert_busy(post_run(deployment), "job queue is full")
        # back among the waiting once the dispatcher's claim for it found nothing
        wait_until(lambda: waiting_runners(deployment) == 1, timeout=10)
        with deployment.admin() as client:
            client.cancel_job(deployment.project, blocking[0])
        job = deployment.submit("bench.noop")
        assigned = channel.recv(timeout=10)
        assert assigned["event"] == "job" and assigned["uuid"] == job


@pytest.mark.postgresql
def test_only_a_job_no_runner_here_took_is_announced_to_the_other_replicas(
    tmp_path: Path,
) -> None:
    with postgres_database() as url, deploy(tmp_path, url) as deployment:
        with psycopg.connect(libpq_url(url), autocommit=True) as listener:
            listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(CHANNEL)))
            channel = deployment.channel("idle")
            run_one(channel, deployment)  # submitted before the runner waits: announced
            channel.send({"event": "ready", "poll_timeout": 30})
            wait_until(lambda: waiting_runners(deployment) == 1, timeout=10)
            handed = deployment.submit("bench.noop")  # taken here: not announced
            assert channel.recv(timeout=10)["uuid"] == handed
            deployment.submit("bench.noop")  # the runner is busy: announced
            # The queue delivers notifications in commit order: everything before the sentinel.
            with psycopg.connect(libpq_url(url), autocommit=True) as other:
                other.execute("SELECT pg_notify(%s, 'sentinel')", (CHANNEL,))
            payloads = []
            for notify in listener.notifies(timeout=30):
                if notify.payload == "sentinel":
                    break
                payloads.append(notify.payload)
        assert len(payloads) == 2 and all(" job " in p for p in payloads), payloads
