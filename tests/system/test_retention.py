"""Retention: the stored outputs of finished jobs past ``--retention-days`` are deleted by the
sweeper's leader, the newest ``--retention-keep`` kept, jobs in flight never touched; reports
and their metrics stay."""

from __future__ import annotations

from pathlib import Path

from benchrunner.api.jobs import Job
from tests.harness import Deployment, deploy, output_json, wait_until
from tests.inprocess import serve_in_process
from tests.metrics_scrape import scrape
from tests.stored_outputs import output_blob, output_row

RESULT = {"exit_code": 0, "stdout": '{"ret": {"latency": {"value": 3}}}'}


def _stored(deployment: Deployment, job: Job) -> bool:
    """Whether the job's output is still stored, in a row or as a blob."""
    uuid = job.uuid
    return (
        output_row(deployment.server.db, uuid) is not None
        or output_blob(deployment.server.data_dir, uuid) is not None
    )


def test_expired_outputs_go_the_newest_and_jobs_in_flight_stay(
    tmp_path: Path, database_url: str
) -> None:
    options = {"retention-days": "0", "retention-keep": "1", "retention-interval": "0.2"}
    with deploy(tmp_path, database_url, options=options) as deployment:
        runner = deployment.runner_process("agent").start()
        finished = []
        for _ in range(3):
            uuid = deployment.submit("bench.noop")
            finished.append(deployment.wait_status(uuid, "processed"))
        runner.kill()
        in_flight = deployment.submit("bench.noop")
        channel = deployment.channel("raw")
        assert channel.claim()["uuid"] == in_flight
        channel.ask({"event": "running"})
        wait_until(
            lambda: not any(_stored(deployment, job) for job in finished[:2]),
            message="outputs purged",
        )
        assert _stored(deployment, finished[2])  # the newest finished job is kept
        assert "output" not in deployment.job(finished[0].uuid).model_fields_set
        assert output_json(deployment.job(finished[2].uuid))["results"]

        # The job in flight finishes: it is the newest now, and the one before it goes.
        done = channel.ask({"event": "completed", "job": in_flight, "results": [RESULT]})
        assert done["event"] == "ack", done
        last = deployment.wait_status(in_flight, "processed")
        wait_until(
            lambda: not _stored(deployment, finished[2]),
            message="the previous newest output purged",
        )
        assert _stored(deployment, last)
        found = scrape(deployment.server.url)
        assert found.value("benchrunner_retention_purged_jobs_total") == 3
        assert found.value("benchrunner_retention_purged_bytes_total") > 0
        with deployment.admin() as client:  # history stays
            report = client.get_report(deployment.project, finished[0].report)
        assert report.results, report
    log = deployment.server.log.read_text()
    assert "retention deleted the outputs of" in log


def test_outputs_are_kept_until_they_are_older_than_the_retention_days(
    tmp_path: Path, database_url: str
) -> None:
    day = 24 * 3600.0
    with serve_in_process(
        tmp_path, database_url, retention_days=30, retention_keep=0, retention_interval=60
    ) as server:
        channel = server.channel("raw")
        job_uuid = server.submit()
        assert channel.claim()["uuid"] == job_uuid
        channel.ask({"event": "running"})
        done = channel.ask({"event": "completed", "job": job_uuid, "results": [RESULT]})
        assert done["event"] == "ack", done
        wait_until(lambda: server.job(job_uuid).status == "processed")
        housekeeping = server.state("services").housekeeping
        rounds = housekeeping.rounds
        server.clock.advance(29 * day)
        wait_until(lambda: housekeeping.rounds > rounds, message="a retention round")
        assert "output" in server.job(job_uuid).model_fields_set
        server.clock.advance(1 * day + 60)
        wait_until(
            lambda: "output" not in server.job(job_uuid).model_fields_set,
            message="the output purged",
        )
        assert server.job(job_uuid).status == "processed"
        channel.close()


def test_a_purged_jobs_live_log_goes_with_its_output(tmp_path: Path, database_url: str) -> None:
    options = {"retention-days": "0", "retention-keep": "0", "retention-interval": "0.2"}
    with deploy(tmp_path, database_url, options=options) as deployment:
        channel = deployment.channel("raw")
        job = deployment.submit("bench.noop")
        assert channel.claim()["uuid"] == job
        channel.ask({"event": "running"})
        channel.send({"event": "log", "job": job, "stream": "stdout", "offset": 0, "data": "hi\n"})
        with deployment.admin() as client:
            wait_until(  # written within about a second
                lambda: client.job_logs(deployment.project, job).content == "hi\n",
                message="the chunk stored",
            )
        done = channel.ask({"event": "completed", "job": job, "results": [RESULT]})
        assert done["event"] == "ack", done
        deployment.wait_status(job, "processed")
        wait_until(
            lambda: "output" not in deployment.job(job).model_fields_set, message="outputs purged"
        )
        with deployment.admin() as client:
            assert client.job_logs(deployment.project, job).content == ""
