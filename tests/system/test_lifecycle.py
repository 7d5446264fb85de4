"""A job's life through real server and runner processes; the runner's scenarios run on both
transports (``each_transport``).

One server per engine serves the whole module; each test works in a project, spec and runner
names of its own (``tenant``), so no other test's runner can claim its jobs."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.harness import Deployment, output_json, process_gone, wait_until


@pytest.fixture
def each_transport(tenant: Deployment, transport: str) -> Deployment:
    """``tenant`` whose runner processes use ``transport``."""
    tenant.transport = transport
    return tenant


def test_template_job_runs_through_processed_with_metrics(each_transport: Deployment) -> None:
    deployment = each_transport
    runner = deployment.runner_process("r1").start()
    job_uuid = deployment.submit("bench.sleep", {"ms": 20}, iter=2)
    job = deployment.wait_status(job_uuid, "processed")
    assert [e.event_type for e in job.events] == [
        "job_created",
        "job_claimed",
        "job_started",
        "job_completed",
        "job_processed",
    ]
    assert [e.status for e in job.events] == [
        "pending",
        "claimed",
        "running",
        "completed",
        "processed",
    ]
    assert len(output_json(job)["results"]) == 2
    assert all(r["exit_code"] == 0 for r in output_json(job)["results"])
    with deployment.admin() as client:
        report = client.get_report(deployment.project, job.report)
    assert report.error is None
    assert report.start_time == job.started and report.end_time == job.completed
    values = [
        (b.benchmark.name, m.measure.slug, m.metric.value)
        for iteration in report.results
        for b in iteration
        for m in b.measures
    ]
    assert values == [("sleep", "latency", 20.0), ("sleep", "latency", 20.0)]
    assert runner.proc is not None and runner.proc.poll() is None


UNREADABLE = [
    (
        "bench.garbage",
        "adapter json could not read iteration 0 stdout: not valid JSON",
    ),
    (
        "bench.nul",
        "adapter json could not read iteration 0 stdout: not valid JSON",
    ),
    (
        "bench.not_utf8",
        "adapter json could not read iteration 0 stdout: benchmark 'a\ufffd' must map measures",
    ),
]


def test_unparsable_output_is_recorded_on_the_report_and_the_job_still_processed(
    tenant: Deployment,
) -> None:
    """The report's error names the adapter, the iteration and output it could not read, and
    why; bytes that are not UTF-8 are said to be so."""
    tenant.runner_process("r1").start()
    submitted = [(t, tenant.submit(t), message) for t, message in UNREADABLE]
    errors = {}
    for template, job_uuid, message in submitted:
        job = tenant.wait_status(job_uuid, "processed")
        with tenant.admin() as client:
            report = client.get_report(tenant.project, job.report)
        assert report.error is not None and report.error.startswith(message), report.error
        assert report.results == []
        processed = [e.message for e in job.events if e.status == "processed"]
        assert processed == [f"not parsed: {report.error}"], job.events
        errors[template] = report.error
    assert "is not UTF-8 text: U+FFFD at character 3" in errors["bench.not_utf8"]
    assert errors["bench.nul"].endswith("(the output contains a NUL character at character 0)")


@pytest.mark.engine_independent
def test_runner_refuses_a_template_it_does_not_list(
    each_transport: Deployment, tmp_path: Path
) -> None:
    deployment = each_transport
    own = tmp_path / "runner-templates.toml"
    own.write_text('[templates."bench.other"]\ncommand = ["true"]\n')
    runner = deployment.runner_process("picky", templates=own).start()
    job_uuid = deployment.submit("bench.noop")
    job = deployment.wait_status(job_uuid, "failed")
    assert "not approved on this runner" in output_json(job)["error"]
    # No process ever started: the job's "received" line is logged as it finishes, first.
    log = wait_until(
        lambda: f"job {job_uuid} finished" in runner.output() and runner.output(),
        message="the runner to log the job's end",
    )
    assert log.index(f"job {job_uuid} received") < log.index(f"job {job_uuid} finished")


def test_cancel_while_pending(tenant: Deployment) -> None:
    job_uuid = tenant.submit("bench.noop")
    with tenant.admin() as client:
        canceled = client.cancel_job(tenant.project, job_uuid)
    assert canceled.status == "canceled"
    requested, done = canceled.events[-2:]
    assert (requested.event_type, requested.actor) == (
        "job_cancel_requested",
        "admin@test.dev",
    )
    assert (done.event_type, done.actor, done.status) == (
        "job_canceled",
        "system",
        "canceled",
    )
    channel = tenant.channel("late")
    assert channel.ask({"event": "ready", "poll_timeout": 1})["event"] == "no_job"


def test_cancel_while_claimed_reaches_the_runner_when_it_starts(tenant: Deployment) -> None:
    channel = tenant.channel("raw")
    job_uuid = tenant.submit("bench.noop")
    assert channel.claim()["uuid"] == job_uuid
    with tenant.admin() as client:
        client.cancel_job(tenant.project, job_uuid)
    assert channel.ask({"event": "running"}) == {"event": "cancel", "job": job_uuid}
    assert channel.ask({"event": "heartbeat"}) == {"event": "cancel", "job": job_uuid}
    assert channel.ask({"event": "canceled", "job": job_uuid}) == {"event": "ack", "job": job_uuid}
    job = tenant.job(job_uuid)
    assert job.status == "canceled"
    assert [e.event_type for e in job.events] == [
        "job_created",
        "job_claimed",
        "job_cancel_requested",
        "job_canceled",
    ]


def test_cancel_while_running_kills_the_whole_process_group(
    each_transport: Deployment, tmp_path: Path
) -> None:
    deployment = each_transport
    runner = deployment.runner_process("r1").start()
    pidfile = tmp_path / "family.pids"
    job_uuid = deployment.submit("bench.family", {"pidfile": str(pidfile)})
    deployment.wait_status(job_uuid, "running")
    parent, child = (
        int(p)
        for p in wait_until(
            lambda: pidfile.exists() and pidfile.read_text(), message="pid file"
        ).split()
    )
    assert not process_gone(parent) and not process_gone(child)
    with deployment.admin() as client:
        client.cancel_job(deployment.project, job_uuid)
    wait_until(
        lambda: process_gone(parent) and process_gone(child),
        timeout=20,
        message="process group gone",
    )
    job = deployment.wait_status(job_uuid, "canceled")
    assert job.events[-1].event_type == "job_canceled"
    # the runner carries on with the next job
    assert deployment.wait_status(deployment.submit("bench.noop"), "processed")
    assert runner.proc is not None and runner.proc.poll() is None


def _stage(deployment: Deployment, tmp_path: Path, ms: int) -> tuple[str, Path, Path]:
    """A job that writes its pid to ``started``, sleeps ``ms``, then creates ``finished``."""
    started, finished = tmp_path / "started", tmp_path / "finished"
    job_uuid = deployment.submit(
        "bench.stage", {"started": str(started), "finished": str(finished), "ms": ms}
    )
    return job_uuid, started, finished


@pytest.mark.engine_independent
def test_runner_drains_on_sigterm_and_lets_the_running_job_finish(
    tenant: Deployment, tmp_path: Path
) -> None:
    runner = tenant.runner_process("r1")
    runner.drain_grace = 60
    runner.start()
    job_uuid, started, finished = _stage(tenant, tmp_path, ms=5000)
    wait_until(lambda: started.exists() and started.read_text(), message="the job to start")
    assert not finished.exists()
    assert runner.proc is not None
    runner.proc.send_signal(signal.SIGTERM)
    assert runner.proc.wait(timeout=60) == 0
    # The runner saw the job running when SIGTERM came, and the job then ran to its end.
    assert "draining: the running job may take" in runner.output()
    assert finished.exists()
    job = tenant.wait_status(job_uuid, "processed")
    assert [e.event_type for e in job.events][-3:] == [
        "job_started",
        "job_completed",
        "job_processed",
    ]


@pytest.mark.engine_independent
def test_runner_drain_cancels_a_job_that_outlives_the_grace(
    tenant: Deployment, tmp_path: Path
) -> None:
    runner = tenant.runner_process("r1")
    runner.drain_grace = 1
    runner.start()
    job_uuid, started, finished = _stage(tenant, tmp_path, ms=600_000)
    pid = int(wait_until(lambda: started.exists() and started.read_text(), message="job start"))
    assert runner.proc is not None
    runner.proc.send_signal(signal.SIGTERM)
    assert runner.proc.wait(timeout=60) == 0
    assert "draining: the running job may take" in runner.output()
    assert process_gone(pid) and not finished.exists()
    job = tenant.wait_status(job_uuid, "failed")
    assert "canceled after drain grace" in output_json(job)["error"]
