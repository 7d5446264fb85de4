"""Poison jobs: a completed job whose stored output cannot be read or parsed is processed once,
with the reason on its report, and the sweeper does not pick it up again
(docs/decisions/hostile-input.md)."""

from __future__ import annotations

import json
from pathlib import Path
from uuid import UUID

import sqlalchemy as sa

from benchrunner.server.store.engine import Database
from benchrunner.server.store.job_outputs import INLINE_OUTPUT_BYTES
from benchrunner.server.store.tables import job, job_event, metric, report
from tests.harness import Deployment, wait_until
from tests.stored_outputs import output_blob, replace_output_row


def _processed_job(deployment: Deployment, name: str, padding: int = 0) -> str:
    """A job processed from its result; ``padding`` bytes of stderr make its output large
    enough for the blob store rather than a database row."""
    channel = deployment.channel(name)
    job_uuid = deployment.submit("bench.noop")
    channel.claim()
    channel.ask({"event": "running"})
    result = {
        "exit_code": 0,
        "stdout": '{"noop": {"latency": {"value": 7}}}',
        "stderr": "x" * padding,
    }
    channel.ask({"event": "completed", "job": job_uuid, "results": [result]})
    deployment.wait_status(job_uuid, "processed")
    channel.close()
    return job_uuid


def _rewind_to_completed(deployment: Deployment, job_uuid: str) -> None:
    """Back to the moment between "output stored" and "metrics parsed", as a replica that died
    there leaves it: still ``completed``, no metrics, no ``processed`` event."""
    db = Database(deployment.server.db)
    try:
        with db.write_engine.begin() as conn:
            job_id, report_id = conn.execute(
                sa.select(job.c.id, job.c.report_id).where(job.c.uuid == UUID(job_uuid))
            ).one()
            conn.execute(job.update().where(job.c.id == job_id).values(status=3))
            conn.execute(
                job_event.delete().where(
                    job_event.c.job_id == job_id, job_event.c.event_type == "job_processed"
                )
            )
            conn.execute(metric.delete().where(metric.c.report_id == report_id))
            conn.execute(report.update().where(report.c.id == report_id).values(error=None))
    finally:
        db.close()


def _output_path(deployment: Deployment, job_uuid: str) -> Path:
    path = output_blob(deployment.server.data_dir, job_uuid)
    assert path is not None, "the job's output is not a blob"
    return path


def _events(deployment: Deployment, job_uuid: str) -> list[str]:
    return [e.event_type for e in deployment.job(job_uuid).events]


def _report_error(deployment: Deployment, job_uuid: str) -> str | None:
    with deployment.admin() as client:
        found = client.get_report(deployment.project, deployment.job(job_uuid).report)
    return found.error


def test_a_poison_job_is_processed_once_and_not_swept_again(deployment: Deployment) -> None:
    garbage = _processed_job(deployment, "garbage")
    unreadable = _processed_job(deployment, "unreadable", padding=INLINE_OUTPUT_BYTES)
    marker = _processed_job(deployment, "marker")
    log = deployment.server.log
    mark = len(log.read_text())

    _rewind_to_completed(deployment, garbage)
    replace_output_row(deployment.server.db, garbage, b"\x00garbage, not a job output\xff" * 100)
    _rewind_to_completed(deployment, unreadable)
    path = _output_path(deployment, unreadable)
    path.unlink()
    path.mkdir()  # reading it fails with an OSError, as a broken disk would

    # The sweeper finds both left `completed` past the heartbeat timeout and re-queues them.
    deployment.wait_status(garbage, "processed")
    deployment.wait_status(unreadable, "processed")
    garbage_error = _report_error(deployment, garbage)
    assert garbage_error is not None and "not a valid job output" in garbage_error
    unreadable_error = _report_error(deployment, unreadable)
    assert unreadable_error is not None and "could not be read" in unreadable_error
    assert str(deployment.server.data_dir) not in unreadable_error

    # A healthy job rewound now is only processed by a later sweep: once it is, the sweeper
    # has looked again since, and left the poison jobs alone.
    _rewind_to_completed(deployment, marker)
    deployment.wait_status(marker, "processed")
    tail = log.read_text()[mark:]
    for poison in (garbage, unreadable):
        assert _events(deployment, poison).count("job_processed") == 1
        attempts = [line for line in tail.splitlines() if f'"job": "{poison}"' in line]
        assert len(attempts) == 1, attempts
        assert json.loads(attempts[0])["status_to"] == "processed"
    assert "Traceback" not in tail
    wait_until(lambda: _events(deployment, marker).count("job_processed") == 1)


def test_a_resent_result_for_a_job_whose_stored_output_is_garbage_is_acked(
    deployment: Deployment,
) -> None:
    """The check that a resend matches the stored result must not trip over a stored output
    it cannot read: the job is finished, so the resend is acknowledged and changes nothing."""
    channel = deployment.channel("resender")
    job_uuid = deployment.submit("bench.noop")
    channel.claim()
    channel.ask({"event": "running"})
    result = {"exit_code": 0, "stdout": '{"noop": {"latency": {"value": 7}}}'}
    completed = {"event": "completed", "job": job_uuid, "results": [result]}
    assert channel.ask(completed)["event"] == "ack"
    deployment.wait_status(job_uuid, "processed")
    replace_output_row(deployment.server.db, job_uuid, b"\x00garbage, not a job output\xff")

    assert channel.ask(completed)["event"] == "ack"
    assert channel.ask({"event": "heartbeat"})["event"] == "ack"  # the channel is still open
    assert _events(deployment, job_uuid)[-1] == "job_processed"
    assert "Traceback" not in deployment.server.log.read_text()
