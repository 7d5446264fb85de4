"""Job events as the audit list (actor and request metadata) and rerun: through a real
server, its HTTP API and the ``benchrunner job`` commands."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from benchrunner.api.jobs import Job, JobEvent
from tests.harness import Deployment, cli

RESULT = {"exit_code": 0, "stdout": '{"noop": {"latency": {"value": 3}}}'}


def _processed_job(deployment: Deployment) -> str:
    channel = deployment.channel("r1")
    job_uuid = deployment.submit("bench.noop")
    assert channel.claim()["uuid"] == job_uuid
    channel.ask({"event": "running"})
    reply = channel.ask({"event": "completed", "job": job_uuid, "results": [RESULT]})
    assert reply == {"event": "ack", "job": job_uuid}
    channel.close()
    deployment.wait_status(job_uuid, "processed")
    return job_uuid


def _event(job: Job, event_type: str) -> JobEvent:
    (found,) = [e for e in job.events or [] if e.event_type == event_type]
    return found


def test_job_created_records_the_actor_and_the_request(deployment: Deployment) -> None:
    body = {
        "project": "bench",
        "spec": "small",
        "template": "bench.noop",
        "args": {},
        "settings": {"adapter": "json"},
    }
    headers = {
        "Authorization": f"Bearer {deployment.server.token}",
        "User-Agent": "ci-bot/1.0 (+audit test)",
    }
    response = httpx.post(f"{deployment.server.url}/v0/run", json=body, headers=headers)
    assert response.status_code == 201, response.text
    job = deployment.job(response.json()["job"])
    (created,) = job.events
    assert (created.event_type, created.status) == ("job_created", "pending")
    assert created.actor == "admin@test.dev"
    assert created.meta == {
        "source_ip": "127.0.0.1",
        "user_agent": "ci-bot/1.0 (+audit test)",
        "token": "bootstrap",  # the token's name; never the token
    }
    assert deployment.server.token not in job.model_dump_json()


def test_rerun_makes_a_new_report_and_job_with_the_same_config_linked_both_ways(
    deployment: Deployment,
) -> None:
    old_uuid = _processed_job(deployment)
    url = f"{deployment.server.url}/v0/projects/bench/jobs/{old_uuid}/rerun"
    headers = {"Authorization": f"Bearer {deployment.server.token}"}
    response = httpx.post(url, headers=headers)
    assert response.status_code == 201, response.text
    report = response.json()
    old, new = deployment.job(old_uuid), deployment.job(report["job"])
    assert report["uuid"] == new.report != old.report
    assert new.status == "pending"
    assert new.spec is not None and old.spec is not None
    assert (new.config, new.spec.slug) == (old.config, old.spec.slug)
    with deployment.admin() as client:
        old_report = client.get_report("bench", old.report)
    assert (report["branch"]["uuid"], report["testbed"]["uuid"]) == (
        old_report.branch.uuid,
        old_report.testbed.uuid,
    )
    assert report["adapter"] == old_report.adapter
    rerun = _event(old, "job_rerun")
    assert rerun.actor == "admin@test.dev"
    assert rerun.meta["job"] == new.uuid and rerun.meta["report"] == new.report
    created = _event(new, "job_created")
    assert created.meta["rerun_of"] == old_uuid
    assert created.meta["token"] == "bootstrap"
    # The new job runs like any other.
    channel = deployment.channel("r2")
    assert channel.claim()["uuid"] == new.uuid


def test_a_job_in_flight_cannot_be_rerun(deployment: Deployment) -> None:
    headers = {"Authorization": f"Bearer {deployment.server.token}"}
    pending = deployment.submit("bench.noop")
    running = deployment.submit("bench.noop")
    channel = deployment.channel("r1")
    assert channel.claim()["uuid"] == pending
    channel.ask({"event": "running"})
    for job_uuid, status in ((pending, "running"), (running, "pending")):
        url = f"{deployment.server.url}/v0/projects/bench/jobs/{job_uuid}/rerun"
        response = httpx.post(url, headers=headers)
        assert response.status_code == 409, response.text
        assert f"is still {status}" in response.json()["message"]
        assert "job_rerun" not in [e.event_type for e in deployment.job(job_uuid).events]
    with deployment.admin() as client:
        assert client.list_jobs("bench").total == 2  # nothing was created


def test_rerun_needs_the_rights_cancel_needs(deployment: Deployment) -> None:
    job_uuid = deployment.submit("bench.noop")
    with deployment.admin() as client:
        client.cancel_job("bench", job_uuid)
    base = f"{deployment.server.url}/v0/projects/bench/jobs/{job_uuid}"
    for action in ("rerun", "cancel"):
        response = httpx.post(f"{base}/{action}")  # anonymous, on a claimed organization
        assert response.status_code == 403, (action, response.text)
    missing = httpx.post(
        f"{deployment.server.url}/v0/projects/bench/jobs/{'0' * 8}-0000-0000-0000-{'0' * 12}/rerun",
        headers={"Authorization": f"Bearer {deployment.server.token}"},
    )
    assert missing.status_code == 404


@pytest.mark.engine_independent
def test_cli_job_rerun_show_and_list(deployment: Deployment, tmp_path: Path) -> None:
    env = deployment.cli_env(tmp_path)
    old_uuid = deployment.submit("bench.noop")
    cli("job", "cancel", old_uuid, env=env)
    rerun = json.loads(cli("job", "rerun", old_uuid, "--json", env=env).stdout)
    new_uuid = rerun["job"]
    said = cli("job", "rerun", old_uuid, env=env).stdout
    assert f"job {old_uuid} rerun as job" in said
    shown = cli("job", "show", old_uuid, env=env).stdout
    for expected in ("job_created", "job_cancel_requested", "job_canceled", "job_rerun"):
        assert expected in shown
    assert f"job={new_uuid}" in shown
    assert "token=bootstrap" in shown and "source_ip=127.0.0.1" in shown
    listed = json.loads(cli("job", "list", "--status", "pending", "--json", env=env).stdout)
    assert len(listed) == 2 and new_uuid in [j["uuid"] for j in listed]
    canceled = json.loads(
        cli("job", "list", "--status", "canceled", "--spec", "small", "--json", env=env).stdout
    )
    assert [j["uuid"] for j in canceled] == [old_uuid]
    refused = cli("job", "rerun", new_uuid, env=env, check=False)
    assert refused.returncode != 0 and "is still pending" in refused.stderr
    bad = cli("job", "list", "--status", "asleep", env=env, check=False)
    assert bad.returncode != 0 and "unknown job status 'asleep'" in bad.stderr
