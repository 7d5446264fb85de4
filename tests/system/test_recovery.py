"""Crashes: results survive a runner crash; jobs survive a server crash
(docs/decisions/result-delivery.md)."""

from __future__ import annotations

import datetime as dt
import json
import signal
import time
from pathlib import Path
from uuid import UUID

import pytest
import sqlalchemy as sa

from benchrunner.server.store.engine import Database
from benchrunner.server.store.tables import job, metric, report
from tests.harness import (
    SHORT_HEARTBEAT_TIMEOUT,
    Deployment,
    RawChannel,
    deploy,
    output_json,
    wait_until,
)


def test_spooled_result_is_redelivered_after_the_runner_restarts(
    each_transport: Deployment,
) -> None:
    deployment = each_transport
    runner = deployment.runner_process("crashy").start(BENCHRUNNER_TEST_CRASH_AFTER_SPOOL="1")
    job_uuid = deployment.submit("bench.sleep", {"ms": 5})
    assert runner.proc is not None
    assert runner.proc.wait(timeout=30) == 17  # crashed after spooling, before sending
    spooled = runner.spool / f"{job_uuid}.json"
    assert json.loads(spooled.read_text())["event"] == "completed"
    assert deployment.status(job_uuid) == "running"
    runner.start()
    # A runner's start (its Python, its noise guard's first timing) takes tens of seconds on a
    # machine at a load of 25: the bound is for a result never redelivered, not a slow one.
    deployment.wait_status(job_uuid, "processed", timeout=120)
    wait_until(lambda: not spooled.exists(), message="spool file deleted after ack")


def test_redelivered_result_overrides_a_heartbeat_timeout_failure(
    tmp_path: Path, database_url: str
) -> None:
    with deploy(tmp_path, database_url, heartbeat_timeout=SHORT_HEARTBEAT_TIMEOUT) as deployment:
        runner = deployment.runner_process("crashy").start(BENCHRUNNER_TEST_CRASH_AFTER_SPOOL="1")
        job_uuid = deployment.submit("bench.sleep", {"ms": 5})
        assert runner.proc is not None and runner.proc.wait(timeout=30) == 17
        deployment.wait_status(job_uuid, "failed")
        runner.start()
        job = deployment.wait_status(job_uuid, "processed")
    kinds = [e.event_type for e in job.events]
    assert kinds[-3:] == ["heartbeat_stale_recovered", "job_completed", "job_processed"]
    assert output_json(job)["results"][0]["exit_code"] == 0


def test_server_killed_and_restarted(tmp_path: Path, database_url: str, transport: str) -> None:
    # The heartbeat timeout is under test (startup fails claims older than it), so the server
    # stays down that long: short, but above the runner's reconnect backoff (capped at a few
    # seconds), so that the runner gets back in before the restarted server judges its job.
    with deploy(tmp_path, database_url, heartbeat_timeout=6.0) as deployment:
        deployment.transport = transport
        _server_killed_and_restarted(deployment)


def _server_killed_and_restarted(deployment: Deployment) -> None:
    runner = deployment.runner_process("steady").start()
    running = deployment.submit("bench.sleep", {"ms": 6000})
    deployment.wait_status(running, "running")
    orphan_channel = deployment.channel("orphan-holder")
    orphan = deployment.submit("bench.noop")
    assert orphan_channel.claim()["uuid"] == orphan
    orphan_channel.close()
    killed = dt.datetime.now(dt.UTC)
    deployment.server.kill(signal.SIGKILL)
    # The scenario, not a wait for a condition: the server stays down for the heartbeat
    # timeout, since startup fails only claims older than that.
    time.sleep(deployment.server.heartbeat_timeout)
    deployment.server.start()
    job = deployment.wait_status(orphan, "failed")
    assert "orphaned" in str(job.events[-1].message)
    assert job.events[-1].event_type == "recovered_after_crash"
    finished = deployment.wait_status(running, "processed", timeout=40)
    assert [e.event_type for e in finished.events][-3:] == [
        "job_started",
        "job_completed",
        "job_processed",
    ]
    # The job was still running when the server died: its result came to the new server.
    completed = dt.datetime.fromisoformat(finished.events[-2].created)
    assert completed > killed, (completed, killed)
    assert runner.proc is not None and runner.proc.poll() is None


def test_completed_but_unprocessed_jobs_are_processed_at_startup(deployment: Deployment) -> None:
    channel = deployment.channel("quick")
    job_uuid = deployment.submit("bench.noop")
    channel.claim()
    channel.ask({"event": "running"})
    result = {"exit_code": 0, "stdout": '{"noop": {"latency": {"value": 7}}}'}
    channel.ask({"event": "completed", "job": job_uuid, "results": [result]})
    report_uuid = deployment.wait_status(job_uuid, "processed").report
    channel.close()
    deployment.server.kill(signal.SIGTERM)
    # Rewind to the moment between "output stored" and "metrics parsed", as a crash would leave it.
    db = Database(deployment.server.db)
    with db.write_engine.begin() as conn:
        conn.execute(job.update().where(job.c.uuid == UUID(job_uuid)).values(status=3))
        report_id = conn.execute(
            sa.select(report.c.id).where(report.c.uuid == UUID(report_uuid))
        ).scalar_one()
        conn.execute(metric.delete().where(metric.c.report_id == report_id))
    db.close()
    deployment.server.start()
    deployment.wait_status(job_uuid, "processed")
    with deployment.admin() as client:
        results = client.get_report(deployment.project, report_uuid).results
    assert results[0][0].measures[0].metric.value == 7.0


@pytest.mark.engine_independent
def test_server_sigterm_closes_channels_with_1012(deployment: Deployment) -> None:
    channel = deployment.channel("listener")
    assert channel.ask({"event": "heartbeat"})["event"] == "ack"
    deployment.server.kill(signal.SIGTERM)
    code, _ = channel.wait_closed(timeout=15)
    assert code == 1012


def test_a_result_whose_running_was_lost_still_completes(deployment: Deployment) -> None:
    channel = deployment.channel("hasty")
    job_uuid = deployment.submit("bench.noop")
    channel.claim()
    result = {"exit_code": 0, "stdout": '{"noop": {"latency": {"value": 1}}}'}
    reply = channel.ask({"event": "completed", "job": job_uuid, "results": [result]})
    assert reply == {"event": "ack", "job": job_uuid}
    job = deployment.wait_status(job_uuid, "processed")
    assert [e.event_type for e in job.events][-4:] == [
        "job_claimed",
        "job_started",
        "job_completed",
        "job_processed",
    ]


def test_reconnecting_without_heartbeats_does_not_outlive_the_hard_timeout(
    deployment: Deployment,
) -> None:
    slug, token = deployment.new_runner("flappy")
    channel = RawChannel(deployment.server, slug, token)
    job_uuid = deployment.submit("bench.noop", timeout=1)
    channel.claim()
    channel.ask({"event": "running"})
    channels = [channel]

    def ended_while_reconnecting() -> bool:
        channels[-1].close()
        channels.append(RawChannel(deployment.server, slug, token))
        channels[-1].ask({"event": "running", "job": job_uuid})
        return deployment.status(job_uuid) != "running"

    wait_until(ended_while_reconnecting, timeout=20, interval=0, message="the job to end")
    channels[-1].close()
    job = deployment.job(job_uuid)
    assert job.status == "canceled"
    assert "job_timeout_exceeded" in str(job.events[-1].message)
    assert job.events[-1].event_type == "job_timeout"
    again = RawChannel(deployment.server, slug, token)
    assert again.ask({"event": "running", "job": job_uuid}) == {"event": "cancel", "job": job_uuid}
    again.close()


def test_a_result_too_large_for_the_server_fails_the_job_instead_of_looping(
    tmp_path: Path, database_url: str
) -> None:
    with deploy(tmp_path, database_url, request_body_max_bytes=64 * 1024) as deployment:
        runner = deployment.runner_process("chatty").start()
        job = deployment.wait_status(deployment.submit("bench.chatty"), "failed", timeout=40)
        assert "message size limit" in output_json(job)["error"]
        assert output_json(job)["results"] == [
            {"exit_code": 0, "stdout": None, "stderr": None, "output": None}
        ]
        assert runner.proc is not None and runner.proc.poll() is None


def test_an_acknowledged_result_survives_a_server_killed_right_after_the_ack(
    deployment: Deployment,
) -> None:
    """The runner deletes its spooled result on ``ack``: whatever the ack acknowledges must be
    stored before it is sent (SQLite: the WAL synced; PostgreSQL: a synchronous commit)."""
    channel = deployment.channel("acked")
    job_uuid = deployment.submit("bench.noop")
    channel.claim()
    channel.ask({"event": "running"})
    result = {"exit_code": 0, "stdout": '{"noop": {"latency": {"value": 11}}}'}
    reply = channel.ask({"event": "completed", "job": job_uuid, "results": [result]})
    deployment.server.kill(signal.SIGKILL)
    assert reply == {"event": "ack", "job": job_uuid}
    channel.close()
    deployment.server.start()
    job = deployment.wait_status(job_uuid, "processed")
    assert [e.event_type for e in job.events][-2:] == ["job_completed", "job_processed"]
    stored = output_json(job)["results"]
    assert [(r["exit_code"], r["stdout"]) for r in stored] == [(0, result["stdout"])]
