"""A `completed` is two writes, each committed on its own, its `ack` sent between them: the
move to `completed` with its output (a database row when small), then, after the `ack`, the
output parsed and the move to `processed` with its metrics. A server stopped between them
leaves the job `completed` with its output, processed at the next start. A large output goes
to the blob store first and is processed in the background; a `failed` keeps its output the
same way."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.pq import TransactionStatus

from benchrunner.api.jobs import Job
from benchrunner.server.channel import lifecycle
from benchrunner.server.processing import completion, judgment, processor
from benchrunner.server.processing.processor import Recorded, record_processed
from benchrunner.server.store.job_outputs import INLINE_OUTPUT_BYTES
from tests.databases import ENGINES, fresh_database
from tests.harness import Deployment, output_json, wait_until
from tests.inprocess import InProcessChannel, InProcessServer, serve_in_process
from tests.stored_outputs import output_blob, output_row


def _started(deployment: Deployment, name: str) -> tuple[Any, str]:
    channel = deployment.channel(name)
    job_uuid = deployment.submit("bench.noop")
    assert channel.claim()["uuid"] == job_uuid
    assert channel.ask({"event": "running"})["event"] == "ack"
    return channel, job_uuid


def _result(value: int, padding: int = 0) -> dict[str, Any]:
    stdout = json.dumps({"noop": {"latency": {"value": value}}})
    return {"exit_code": 0, "stdout": stdout, "stderr": "x" * padding}


def _latency(deployment: Deployment, job: Job) -> float:
    with deployment.admin() as client:
        report = client.get_report(deployment.project, job.report)
    (iteration,) = report.results
    (benchmark,) = iteration
    (measure,) = benchmark.measures
    return float(measure.metric.value)


def test_a_small_result_is_stored_with_its_ack_and_processed_after(
    deployment: Deployment,
) -> None:
    channel, job_uuid = _started(deployment, "small")
    done = channel.ask({"event": "completed", "job": job_uuid, "results": [_result(5)]})
    assert done == {"event": "ack", "job": job_uuid}
    assert deployment.job(job_uuid).status in ("completed", "processed")
    job = deployment.wait_status(job_uuid, "processed")
    assert _latency(deployment, job) == 5
    assert output_json(job)["results"][0]["stdout"] == _result(5)["stdout"]
    row = output_row(deployment.server.db, job_uuid)
    assert row is not None and json.loads(row)["results"][0]["exit_code"] == 0
    assert output_blob(deployment.server.data_dir, job_uuid) is None
    events = [e.event_type for e in job.events]
    assert events[-2:] == ["job_completed", "job_processed"]

    # A resend of the same result is acknowledged and changes nothing; a different one is not.
    again = channel.ask({"event": "completed", "job": job_uuid, "results": [_result(5)]})
    assert again == {"event": "ack", "job": job_uuid}
    other = channel.ask({"event": "completed", "job": job_uuid, "results": [_result(6)]})
    assert other["event"] == "error" and "different result" in other["message"]


def test_a_large_result_goes_to_the_blob_store_and_is_processed_after(
    deployment: Deployment,
) -> None:
    channel, job_uuid = _started(deployment, "large")
    result = _result(8, padding=INLINE_OUTPUT_BYTES)
    done = channel.ask({"event": "completed", "job": job_uuid, "results": [result]})
    assert done == {"event": "ack", "job": job_uuid}
    job = deployment.wait_status(job_uuid, "processed")
    assert _latency(deployment, job) == 8
    assert output_row(deployment.server.db, job_uuid) is None
    blob = output_blob(deployment.server.data_dir, job_uuid)
    assert blob is not None and blob.stat().st_size > INLINE_OUTPUT_BYTES
    assert len(output_json(deployment.job(job_uuid))["results"][0]["stderr"]) == INLINE_OUTPUT_BYTES


def test_a_failures_output_is_kept_and_a_different_result_is_refused(
    deployment: Deployment,
) -> None:
    channel, job_uuid = _started(deployment, "failing")
    partial = {"exit_code": 1, "stdout": "", "stderr": "crashed half-way"}
    failed = {"event": "failed", "job": job_uuid, "error": "exit 1", "results": [partial]}
    assert channel.ask(failed) == {"event": "ack", "job": job_uuid}
    job = deployment.job(job_uuid)
    assert job.status == "failed"
    assert output_json(job)["error"] == "exit 1"
    assert output_json(job)["results"][0]["stderr"] == "crashed half-way"
    assert channel.ask(failed) == {"event": "ack", "job": job_uuid}  # the identical resend

    # The runner's own failure is on record: any other result for the job is a replay.
    for different in (
        {"event": "completed", "job": job_uuid, "results": [_result(9)]},
        {**failed, "error": "exit 2"},
        {**failed, "results": [{**partial, "stderr": "other"}]},
        {"event": "canceled", "job": job_uuid},
    ):
        reply = channel.ask(different)
        assert reply["event"] == "error", different
        assert reply["message"].startswith("Job already submitted"), reply
        assert "already has a different result (failed)" in reply["message"]
    job = deployment.job(job_uuid)
    assert job.status == "failed"
    assert (output_json(job)["error"], output_json(job)["results"][0]["stderr"]) == (
        "exit 1",
        "crashed half-way",
    )


def test_a_late_result_replaces_a_failure_the_server_decided(deployment: Deployment) -> None:
    channel, job_uuid = _started(deployment, "late")
    # Asking for new work while the job is in flight: the server fails it (runner_lost_job).
    channel.send({"event": "ready", "poll_timeout": 1})
    assert channel.recv(timeout=10)["event"] == "no_job"
    assert deployment.status(job_uuid) == "failed"

    late = {"event": "completed", "job": job_uuid, "results": [_result(9)]}
    assert channel.ask(late) == {"event": "ack", "job": job_uuid}
    job = deployment.wait_status(job_uuid, "processed")
    assert output_json(job).get("error") is None
    assert output_json(job)["results"][0]["stdout"] == _result(9)["stdout"]
    assert _latency(deployment, job) == 9
    assert channel.ask(late) == {"event": "ack", "job": job_uuid}  # the identical resend


def _report_metrics(server: InProcessServer, job: Job) -> list[float]:
    """Every metric value of the job's report (one per benchmark, measure and iteration)."""
    with server.admin() as client:
        report = client.get_report("bench", job.report)
    return [
        measure.metric.value
        for iteration in report.results
        for benchmark in iteration
        for measure in benchmark.measures
    ]


def _running(server: InProcessServer, name: str) -> tuple[InProcessChannel, str]:
    channel = server.channel(name)
    job_uuid = server.submit("bench.noop")
    channel.claim()
    assert channel.ask({"event": "running"})["event"] == "ack"
    return channel, job_uuid


@pytest.mark.parametrize("engine", ENGINES)
def test_the_ack_is_sent_before_the_processed_write(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The processed write waits until the runner holds its ``ack`` (at most 10 s: were it
    made first, the ack would come only after that wait, and the write would see it unset)."""
    acked = threading.Event()
    seen: list[bool] = []

    def after_the_ack(*args: Any, **kwargs: Any) -> Recorded | None:
        seen.append(acked.wait(timeout=10))
        return record_processed(*args, **kwargs)

    monkeypatch.setattr(processor, "record_processed", after_the_ack)
    with (
        fresh_database(engine, tmp_path) as url,
        serve_in_process(tmp_path, url) as server,
    ):
        channel, job_uuid = _running(server, "ordered")
        done = channel.ask({"event": "completed", "job": job_uuid, "results": [_result(2)]})
        assert done == {"event": "ack", "job": job_uuid}
        acked.set()
        wait_until(lambda: server.job(job_uuid).status == "processed")
        assert seen == [True]
        assert _report_metrics(server, server.job(job_uuid)) == [2.0]


def test_a_completed_costs_two_statements_and_no_transaction_on_postgresql(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the runner's ``completed`` to ``processed``: the move to ``completed`` and the
    move to ``processed``, each one statement, neither inside a BEGIN and COMMIT (counted at
    psycopg's cursor and commit, the server in this process)."""
    lock = threading.Lock()
    moves: list[int] = []  # the connection of each statement that moves a job
    commits: list[int] = []  # the connections that sent a COMMIT
    counting = threading.Event()
    execute, commit = psycopg.Cursor.execute, psycopg.Connection.commit

    def counted_execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        text = " ".join((query.decode() if isinstance(query, bytes) else str(query)).split())
        if counting.is_set() and text.startswith("WITH moved AS (UPDATE job"):
            with lock:
                moves.append(id(self.connection))
        return execute(self, query, *args, **kwargs)

    def counted_commit(self: Any) -> None:
        if counting.is_set() and self.info.transaction_status == TransactionStatus.INTRANS:
            with lock:
                commits.append(id(self))
        commit(self)

    monkeypatch.setattr(psycopg.Cursor, "execute", counted_execute)
    monkeypatch.setattr(psycopg.Connection, "commit", counted_commit)
    with (
        fresh_database("postgresql", tmp_path) as url,
        serve_in_process(tmp_path, url) as server,
    ):
        channel, job_uuid = _running(server, "counted")
        counting.set()
        done = channel.ask({"event": "completed", "job": job_uuid, "results": [_result(3)]})
        assert done == {"event": "ack", "job": job_uuid}
        wait_until(lambda: server.job(job_uuid).status == "processed")
        counting.clear()
        assert _report_metrics(server, server.job(job_uuid)) == [3.0]
    assert len(moves) == 2, moves
    assert not set(moves) & set(commits), (moves, commits)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_processed_write_leaves_the_job_to_the_processor(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The processed write after the ack fails once: the job stays ``completed`` with its
    output, and the background processor processes it, once."""
    failures: list[int] = []

    def failing_once(conn: Any, job: Any, *args: Any, **kwargs: Any) -> Recorded | None:
        if not failures:
            failures.append(job.id)
            raise RuntimeError("injected: the processed write failed")
        return record_processed(conn, job, *args, **kwargs)

    monkeypatch.setattr(processor, "record_processed", failing_once)
    with (
        fresh_database(engine, tmp_path) as url,
        serve_in_process(tmp_path, url) as server,
    ):
        channel, job_uuid = _running(server, "shortcut")
        done = channel.ask({"event": "completed", "job": job_uuid, "results": [_result(4)]})
        assert done == {"event": "ack", "job": job_uuid}
        wait_until(lambda: server.job(job_uuid).status == "processed")
        assert failures, "the processed write was not tried"
        job = server.job(job_uuid)
        events = [e.event_type for e in job.events]
        assert events.count("job_completed") == 1 and events.count("job_processed") == 1
        assert _report_metrics(server, job) == [4.0]
        assert output_row(url, job_uuid) is not None


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_last_judgment_write_leaves_the_job_to_the_processor_at_once(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job whose metrics a threshold judges is judged after its ack; the judgment's last
    write (the move to ``processed``) fails once: the job, left ``completed``, goes to the
    background processor then, not at the sweeper's next look, and is judged once."""
    failures: list[int] = []
    last_write = judgment._judged

    def failing_once(conn: Any, later: Any, *args: Any) -> tuple[bool, bool]:
        if not failures:
            failures.append(later.report_id)
            raise RuntimeError("injected: the judgment's last write failed")
        return last_write(conn, later, *args)

    monkeypatch.setattr(judgment, "_judged", failing_once)
    with (
        fresh_database(engine, tmp_path) as url,
        serve_in_process(tmp_path, url, sweep_interval=3600.0) as server,
    ):
        channel = server.channel("judged")
        with server.admin() as client:
            body = {
                "project": "bench",
                "spec": "small",
                "template": "bench.noop",
                "thresholds": {
                    "models": {"latency": {"test": "percentage", "upper_boundary": 0.1}}
                },
            }
            job_uuid = str(client.run(body).job)
        channel.claim()
        assert channel.ask({"event": "running"})["event"] == "ack"
        done = channel.ask({"event": "completed", "job": job_uuid, "results": [_result(4)]})
        assert done == {"event": "ack", "job": job_uuid}
        wait_until(lambda: server.job(job_uuid).status == "processed", timeout=30)
        assert failures, "the judgment's last write was not tried"
        events = [e.event_type for e in server.job(job_uuid).events]
        assert events.count("job_completed") == 1 and events.count("job_processed") == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_a_server_stopped_between_the_two_writes_processes_the_job_at_its_next_start(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server stops right after the ack, before the processed write: the job is
    ``completed`` with its output; the next start processes it, with one set of metrics."""

    async def stopped(*_args: Any) -> Recorded | None:
        return None  # the server stopped here: nothing after the ack was written

    with fresh_database(engine, tmp_path) as url:
        with monkeypatch.context() as patched:
            patched.setattr(lifecycle, "process_completed", stopped)
            with serve_in_process(tmp_path, url) as server:
                channel, job_uuid = _running(server, "stopping")
                completed = {"event": "completed", "job": job_uuid, "results": [_result(7)]}
                assert channel.ask(completed) == {"event": "ack", "job": job_uuid}
                job = server.job(job_uuid)
                assert job.status == "completed"
                assert output_json(job)["results"][0]["stdout"] == _result(7)["stdout"]
                assert _report_metrics(server, job) == []
        with serve_in_process(tmp_path, url, setup=False) as restarted:
            wait_until(lambda: restarted.job(job_uuid).status == "processed")
            job = restarted.job(job_uuid)
            events = [e.event_type for e in job.events]
            assert events.count("job_completed") == 1 and events.count("job_processed") == 1
            assert _report_metrics(restarted, job) == [7.0]


def test_a_result_that_cannot_be_applied_now_is_left_to_the_resend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job that keeps changing while its result is applied gets no ``error`` (the runner
    would drop its result) but a closed channel: 1011, then the resend is applied."""
    lost_races: list[int] = []
    real_complete = completion.complete

    def changed_meanwhile(*args: Any, **kwargs: Any) -> completion.Completion:
        if len(lost_races) < 3:
            lost_races.append(1)
            return completion.Completion(completed=False)
        return real_complete(*args, **kwargs)

    monkeypatch.setattr(lifecycle, "complete", changed_meanwhile)
    with (
        fresh_database("sqlite", tmp_path) as url,
        serve_in_process(tmp_path, url) as server,
    ):
        with server.admin() as client:
            runner = client.create_runner("racing", ["small"])
        ws_url = f"ws://127.0.0.1:{server.port}"
        channel = InProcessChannel(ws_url, runner.slug, runner.token)
        job_uuid = server.submit("bench.noop")
        channel.claim()
        assert channel.ask({"event": "running"})["event"] == "ack"
        channel.send({"event": "completed", "job": job_uuid, "results": [_result(3)]})
        assert channel.wait_closed() == (1011, "resend the result")
        assert len(lost_races) == 3
        assert server.job(job_uuid).status == "running"
        again = InProcessChannel(ws_url, runner.slug, runner.token)
        done = again.ask({"event": "completed", "job": job_uuid, "results": [_result(3)]})
        assert done == {"event": "ack", "job": job_uuid}
        wait_until(lambda: server.job(job_uuid).status == "processed")


def test_a_job_the_server_cannot_prepare_fails_instead_of_returning_to_the_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Back in the queue, it would be claimed again at once, ahead of every other job."""

    def broken(self: Any, runner: Any, claim: Any) -> Any:
        raise RuntimeError("injected: no pull token")

    monkeypatch.setattr(lifecycle.Lifecycle, "assignment", broken)
    with (
        fresh_database("sqlite", tmp_path) as url,
        serve_in_process(tmp_path, url) as server,
    ):
        channel = server.channel("preparing")
        job_uuid = server.submit("bench.noop")
        channel.send({"event": "ready", "poll_timeout": 5})
        wait_until(lambda: server.job(job_uuid).status == "failed", message="the job failed")
        reason = str(server.job(job_uuid).events[-1].message)
        assert "could not prepare the job for its runner: injected: no pull token" in reason
