"""Processing against a real database of each engine and a real blob store: poison outputs end
``processed`` once with their error, each job is queued once, and batches are bounded in bytes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from benchrunner.cli.follow import judgment_failure
from benchrunner.core.clock import SystemClock
from benchrunner.core.states import JobStatus
from benchrunner.core.templates import TemplateRegistry
from benchrunner.core.tiers import Plan
from benchrunner.detection.models import Model, TestKind
from benchrunner.protocol import IterationResult, JsonJobOutput
from benchrunner.server.blobs.blob_store import READ_CHUNK, LocalBlobStore, job_output_key
from benchrunner.server.config import ServerSettings
from benchrunner.server.context import ServerContext
from benchrunner.server.processing import judgment, metric_parts, processor
from benchrunner.server.processing.judgment import JudgmentLater, judge_later
from benchrunner.server.processing.metric_parts import METRIC_PART
from benchrunner.server.processing.processor import (
    INLINE_PARSE_BYTES,
    Processor,
    byte_batches,
    measure_job,
    measured_with_noise,
    write_processed,
)
from benchrunner.server.processing.results import measure_output
from benchrunner.server.store import alerts, job_reads, jobs, reports, thresholds
from benchrunner.server.store.engine import Database
from benchrunner.server.store.tables import (
    alert,
    confirmation,
    job_event,
    metric,
    report,
    threshold,
)
from benchrunner.server.views.resources import event_view
from tests.database_errors import SECRET, postgresql_refused, sqlite_busy, wrapped
from tests.databases import with_schema
from tests.unit.test_claim_policy import World

GOOD = b'{"results": [{"exit_code": 0, "stdout": "{\\"b\\": {\\"latency\\": {\\"value\\": 3}}}"}]}'


class RecordingBlobStore(LocalBlobStore):
    """The local store, noting every output read; a read can be held back by ``gate``."""

    def __init__(self, root: Path, trace: list[tuple[str, object]]) -> None:
        super().__init__(root)
        self.trace = trace
        self.gate = threading.Event()
        self.gate.set()
        self.reading = threading.Event()

    def read(
        self, key: str, offset: int = 0, length: int | None = None, chunk_size: int = READ_CHUNK
    ) -> Iterator[bytes] | None:
        self.reading.set()
        self.gate.wait(timeout=30)
        self.trace.append(("read", key))
        return super().read(key, offset, length, chunk_size)


@dataclass
class Setup:
    world: World
    ctx: ServerContext
    blobs: RecordingBlobStore
    trace: list[tuple[str, object]] = field(default_factory=list)
    jobs_made: int = 0
    org: tuple[int, int] = (0, 0)

    def completed_job(self, output: bytes | None) -> int:
        """A job taken through claim, running and completed, its output stored as given."""
        self.jobs_made += 1
        if self.jobs_made == 1:
            self.org = self.world.org("acme", Plan.TEAM)
        spec = self.world.spec(f"s{self.jobs_made}")
        runner = self.world.runner(f"r{self.jobs_made}", [spec])
        job_id = self.world.job(self.org, spec)
        assert self.world.claim(runner) == job_id
        self.world.finish(job_id)
        row = self.world.db.read_sync(jobs.job_get, job_id)
        assert row is not None and row.status == JobStatus.COMPLETED
        if output is not None:
            self.blobs.put(job_output_key(row.project_uuid, row.uuid), output)
        return job_id

    def output_path(self, job_id: int) -> Path:
        row = self.world.db.read_sync(jobs.job_get, job_id)
        assert row is not None
        return self.blobs.root / job_output_key(row.project_uuid, row.uuid)

    def outcome(self, job_id: int) -> tuple[JobStatus, str | None, int, int]:
        """Status, report error, metrics stored, and ``processed`` events."""

        def read(conn: sa.Connection) -> tuple[JobStatus, str | None, int, int]:
            row = jobs.job_get(conn, job_id)
            assert row is not None
            error = conn.execute(
                sa.select(report.c.error).where(report.c.id == row.report_id)
            ).scalar_one()
            metrics = conn.execute(
                sa.select(sa.func.count()).where(metric.c.report_id == row.report_id)
            ).scalar_one()
            processed = conn.execute(
                sa.select(sa.func.count()).where(
                    job_event.c.job_id == job_id,
                    job_event.c.event_type == "job_processed",
                )
            ).scalar_one()
            return row.status, error, metrics, processed

        return self.world.db.read_sync(read)


@pytest.fixture
def setup(database_url: str, tmp_path: Path) -> Iterator[Setup]:
    with_schema(database_url)
    db = Database(database_url)
    trace: list[tuple[str, object]] = []
    blobs = RecordingBlobStore(tmp_path / "blobs", trace)
    ctx = ServerContext(
        settings=ServerSettings(data_dir=tmp_path, db=database_url),
        db=db,
        blobs=blobs,
        templates=TemplateRegistry.empty(),
        clock=SystemClock(),
        secret_key="k",
    )
    yield Setup(World(db), ctx, blobs, trace)
    db.close()


def test_unusable_outputs_are_processed_once_with_their_error(setup: Setup) -> None:
    budget = 64 * 1024
    nested = b'{"results": [{"output": ' + b"[" * 5000 + b"]" * 5000 + b"}]}"
    huge = b'{"results": [{"stdout": "' + b"x" * budget + b'"}]}'
    cases = {
        "missing": (None, "missing from the server's store"),
        "not json": (b"\x00\xffthis is not json", "not a valid job output"),
        "wrong shape": (json.dumps({"results": "nope"}).encode(), "not a valid job output"),
        "nested": (nested, "not a valid job output"),
        "huge": (huge, f"more than the {budget} bytes the server reads"),
        "unreadable": (b"", "could not be read"),
    }
    ids = {name: setup.completed_job(output) for name, (output, _) in cases.items()}
    unreadable = setup.output_path(ids["unreadable"])
    unreadable.unlink()
    unreadable.mkdir()  # reading a directory fails with an OSError, as a broken disk would
    good = setup.completed_job(GOOD)
    processor = Processor(setup.ctx, batch_bytes=budget)

    asyncio.run(processor.process([good, *ids.values()]))

    assert setup.outcome(good) == (JobStatus.PROCESSED, None, 1, 1)
    for name, (_, expected) in cases.items():
        status, error, metrics, processed = setup.outcome(ids[name])
        assert (status, metrics, processed) == (JobStatus.PROCESSED, 0, 1), name
        assert error is not None and expected in error, (name, error)
        assert str(setup.blobs.root) not in error  # no server path on a report
    # Nothing is left for the sweeper to re-queue, and processing again changes nothing.
    asyncio.run(processor.process(list(ids.values())))
    assert all(setup.outcome(i)[3] == 1 for i in ids.values())


def test_a_huge_output_is_refused_unread(setup: Setup) -> None:
    huge = setup.completed_job(b'{"results": [{"stdout": "' + b"x" * 4096 + b'"}]}')
    asyncio.run(Processor(setup.ctx, batch_bytes=1024).process([huge]))
    assert setup.outcome(huge)[0] == JobStatus.PROCESSED
    assert setup.trace == []


def test_batches_are_bounded_in_bytes(setup: Setup) -> None:
    output = json.loads(GOOD)
    output["results"][0]["stderr"] = "e" * 30_000
    sized = json.dumps(output).encode()
    ids = [setup.completed_job(sized) for _ in range(7)]
    budget = 2 * len(sized) + 100  # two outputs fit, three do not
    setup.trace.clear()

    def committed(batch: list[int]) -> None:
        setup.trace.append(("commit", batch))

    processor = Processor(setup.ctx, batch_bytes=budget, on_batch=committed)
    asyncio.run(processor.process(ids))

    commits = [batch for kind, batch in setup.trace if kind == "commit"]
    assert commits == [ids[0:2], ids[2:4], ids[4:6], ids[6:7]]
    # Each batch's outputs are read after the previous batch committed: never all at once.
    kinds = [kind for kind, _ in setup.trace]
    assert kinds == ["read", "read", "commit"] * 3 + ["read", "commit"]
    assert all(setup.outcome(i) == (JobStatus.PROCESSED, None, 1, 1) for i in ids)


@pytest.mark.parametrize(
    ("sizes", "budget", "expected"),
    [
        ([], 10, []),
        ([5], 10, [[0]]),
        ([5, 5, 5], 10, [[0, 1], [2]]),
        ([20, 1, 1], 10, [[0], [1, 2]]),
        ([1, 20, 1], 10, [[0], [1], [2]]),
        ([0, 0, 10, 0], 10, [[0, 1, 2, 3]]),
    ],
)
def test_byte_batches(sizes: list[int], budget: int, expected: list[list[int]]) -> None:
    assert [list(r) for r in byte_batches(sizes, budget)] == expected


def test_a_job_enqueued_by_everyone_at_once_is_queued_and_processed_once(setup: Setup) -> None:
    job_id = setup.completed_job(GOOD)
    batches: list[list[int]] = []

    async def scenario() -> None:
        done = asyncio.Event()

        def committed(batch: list[int]) -> None:
            batches.append(batch)
            done.set()

        processor = Processor(setup.ctx, on_batch=committed)
        for _source in ("channel", "recovery", "sweeper"):
            processor.enqueue(job_id)
        assert processor.waiting == 1
        setup.blobs.gate.clear()  # hold the read: the job is being processed
        processor.start()
        assert await asyncio.to_thread(setup.blobs.reading.wait, 30)
        processor.enqueue(job_id)  # the sweeper again, while it is in progress
        assert processor.waiting == 0
        setup.blobs.gate.set()
        await asyncio.wait_for(done.wait(), 30)
        assert processor.backlog == 0
        await processor.stop()

    asyncio.run(scenario())
    assert batches == [[job_id]]
    assert [kind for kind, _ in setup.trace] == ["read"]
    assert setup.outcome(job_id)[3] == 1


def test_the_byte_budget_defaults_to_four_largest_messages_and_holds_at_least_one() -> None:
    assert ServerSettings(request_body_max_bytes=1 << 20).processing_budget() == 4 << 20
    assert ServerSettings(processing_batch_bytes=1 << 30).processing_budget() == 1 << 30
    with pytest.raises(ValueError, match="at least request_body_max_bytes"):
        ServerSettings(request_body_max_bytes=1 << 20, processing_batch_bytes=1 << 19)


def test_a_failing_evaluation_leaves_the_job_processed_with_its_metrics(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Judging runs after the batch's transaction committed: an error there leaves its jobs
    ``processed`` with their metrics, not ``completed``, to fail again on every retry."""

    def failing(*_args: object, **_kwargs: object) -> int:
        raise OverflowError("intermediate overflow in fsum")

    monkeypatch.setattr("benchrunner.server.processing.judgment.judge_report", failing)
    job_id = setup.completed_job(GOOD)
    asyncio.run(Processor(setup.ctx).process([job_id]))
    assert setup.outcome(job_id) == (JobStatus.PROCESSED, None, 1, 1)


class _Stopped(Exception):
    """The server process stopped after the metrics' commit: nothing after it in the
    judgment runs."""


def _value_output(value: float) -> bytes:
    stdout = json.dumps({"b": {"latency": {"value": value}}})
    return json.dumps({"results": [{"exit_code": 0, "stdout": stdout}]}).encode()


def _judged_state(setup: Setup, job_id: int) -> tuple[int, int]:
    """Boundaries and alerts of the job's report."""

    def read(conn: sa.Connection) -> tuple[int, int]:
        row = jobs.job_get(conn, job_id)
        assert row is not None
        raised = conn.execute(
            sa.select(sa.func.count()).where(alert.c.report_id == row.report_id)
        ).scalar_one()
        return len(alerts.report_boundaries(conn, row.report_id)), raised

    return setup.world.db.read_sync(read)


def _unjudged_as_shown(setup: Setup, job_id: int) -> str | None:
    """What ``benchrunner run --wait`` reads from the job's events as the API shows them: the
    message of a ``processed`` event saying the judgment failed (``judgment_failure``)."""
    events = setup.world.db.read_sync(job_reads.job_events, job_id)
    return judgment_failure([event_view(row) for row in events])


def _threshold_on_the_series(setup: Setup, job_id: int, confirm: int = 0) -> None:
    """A threshold of 10 % up on the series of ``job_id``'s report, raising its alerts
    (none held back), or holding them back for ``confirm`` confirmation runs."""

    def put(conn: sa.Connection) -> None:
        row = jobs.job_get(conn, job_id)
        assert row is not None
        found = conn.execute(
            sa.select(report.c.project_id, report.c.branch_id, report.c.testbed_id).where(
                report.c.id == row.report_id
            )
        ).one()
        now = setup.ctx.clock.now()
        measure_id = reports.measure_ids(conn, found.project_id, ["latency"], now)["latency"]
        key = thresholds.SeriesKey(found.branch_id, found.testbed_id, measure_id, None)
        model = Model(TestKind.PERCENTAGE, upper_boundary=0.1)
        thresholds.threshold_put(conn, found.project_id, key, model, now)
        conn.execute(threshold.update().values(confirm=confirm))

    setup.world.db.write_sync(put)


def test_a_report_whose_judgment_was_interrupted_is_judged_on_recovery_once(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/reference/thresholds.md, "When": a job ``processed`` has its report judged. One
    whose server stopped after its metrics committed stays ``completed``; processing it again
    judges the metrics stored (not stored twice) and moves it, with one boundary and alert."""
    first = setup.completed_job(_value_output(3.0))
    stepped = setup.completed_job(_value_output(30.0))

    _threshold_on_the_series(setup, first)
    asyncio.run(Processor(setup.ctx).process([first]))
    assert _judged_state(setup, first) == (1, 0)

    async def stopped(*_args: object) -> None:
        raise _Stopped

    with monkeypatch.context() as patched:
        patched.setattr("benchrunner.server.processing.processor.judge_later", stopped)
        asyncio.run(Processor(setup.ctx).process([stepped]))
    assert setup.outcome(stepped) == (JobStatus.COMPLETED, None, 1, 0)
    assert _judged_state(setup, stepped) == (0, 0)
    for _ in range(2):  # startup's recovery, then the sweeper's: the second finds it processed
        asyncio.run(Processor(setup.ctx).process([stepped]))
    assert setup.outcome(stepped) == (JobStatus.PROCESSED, None, 1, 1)
    assert _judged_state(setup, stepped) == (1, 1)


def test_a_judgment_stopped_before_its_last_write_opens_its_confirmation_on_recovery(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The alerts held back for confirmation runs are written before the judgment's last
    write, which opens the confirmation: a stop between the two leaves them written, and the
    judgment again (which raises none anew) still opens it."""
    first = setup.completed_job(_value_output(3.0))
    stepped = setup.completed_job(_value_output(30.0))
    _threshold_on_the_series(setup, first, confirm=2)
    asyncio.run(Processor(setup.ctx).process([first]))
    last_write = judgment._judged

    def stopped(*_args: object) -> None:
        raise _Stopped

    with monkeypatch.context() as patched:
        patched.setattr(judgment, "_judged", stopped)
        asyncio.run(Processor(setup.ctx).process([stepped]))
    assert judgment._judged is last_write
    assert setup.outcome(stepped)[0] == JobStatus.COMPLETED
    asyncio.run(Processor(setup.ctx).process([stepped]))
    assert setup.outcome(stepped)[0] == JobStatus.PROCESSED

    def opened(conn: sa.Connection) -> int:
        row = jobs.job_get(conn, stepped)
        assert row is not None
        return int(
            conn.execute(
                sa.select(sa.func.count()).where(confirmation.c.report_id == row.report_id)
            ).scalar_one()
        )

    assert setup.ctx.db.read_sync(opened) == 1


def test_a_job_requeued_while_it_is_judged_is_judged_once(setup: Setup) -> None:
    """The sweeper re-queues a job left ``completed``, and so one whose judgment is under way:
    another processor judges it between this judgment's read and its write. The writes keep
    the first boundary and alert (a metric keeps its boundary, a boundary its alert) and the
    move is guarded: one boundary, one alert, one move to ``processed``."""
    first = setup.completed_job(_value_output(3.0))
    stepped = setup.completed_job(_value_output(30.0))
    _threshold_on_the_series(setup, first)
    asyncio.run(Processor(setup.ctx).process([first]))
    db = setup.ctx.db
    read = db.read_apart
    requeued: list[bool] = []

    async def requeued_after_the_read(unit: Any, *args: Any) -> Any:
        planned = await read(unit, *args)
        if not requeued:
            requeued.append(True)
            assert setup.outcome(stepped)[0] == JobStatus.COMPLETED
            await Processor(setup.ctx).process([stepped])  # as the sweeper's re-queue
            assert _judged_state(setup, stepped) == (1, 1)
        return planned

    db.read_apart = requeued_after_the_read  # type: ignore[method-assign,assignment]
    try:
        asyncio.run(Processor(setup.ctx).process([stepped]))
    finally:
        del db.read_apart
    assert requeued
    assert setup.outcome(stepped) == (JobStatus.PROCESSED, None, 1, 1)
    assert _judged_state(setup, stepped) == (1, 1)


def _judgment_begun_and_stopped(setup: Setup, job_id: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A processor stores the job's metrics and its judgment stops there (its replica died):
    the job stays ``completed`` with its metrics stored."""

    async def stopped(*_args: object) -> None:
        raise _Stopped

    with monkeypatch.context() as patched:
        patched.setattr("benchrunner.server.processing.processor.judge_later", stopped)
        asyncio.run(Processor(setup.ctx).process([job_id]))
    assert setup.outcome(job_id) == (JobStatus.COMPLETED, None, 1, 0)


def test_a_processor_that_read_a_job_before_its_judgment_began_elsewhere_stores_nothing(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Processor B reads the job and its report (no metrics stored); then processor A stores
    its metrics and begins its judgment, and the series' threshold is deleted. B finds no
    threshold to judge them, so it would store them and move the job in one write: its move
    finds the job's row changed since B read it (A's write touched it) and nothing is
    written. The judgment again (recovery) keeps one set of metrics."""
    job_id = setup.completed_job(GOOD)
    _threshold_on_the_series(setup, job_id)
    db = setup.ctx.db
    [job] = db.read_sync(jobs.jobs_completed_among, [job_id])
    parsing = db.read_sync(reports.reports_parsing, [job.report_id])[job.report_id]
    assert not parsing.metrics_stored
    _judgment_begun_and_stopped(setup, job_id, monkeypatch)

    def delete_the_threshold(conn: sa.Connection) -> bool:
        thresholds.threshold_delete(conn, conn.execute(sa.select(threshold.c.id)).scalar_one())
        return thresholds.series_has_thresholds(conn, parsing.branch_id, parsing.testbed_id)

    assert not asyncio.run(db.write(delete_the_threshold))
    measured = measure_job(None, parsing.adapter, parsing.average, parsing.fold, GOOD)
    item = measured_with_noise(job, *measured, parsing)
    assert asyncio.run(write_processed(db, item, setup.ctx.clock.now())) is None
    assert setup.outcome(job_id) == (JobStatus.COMPLETED, None, 1, 0)
    asyncio.run(Processor(setup.ctx).process([job_id]))
    assert setup.outcome(job_id) == (JobStatus.PROCESSED, None, 1, 1)


def test_a_job_whose_judgment_wrote_lately_is_re_queued_only_once_it_falls_silent(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweeper re-queues the jobs left ``completed`` since before its cutoff: not one
    whose judgment wrote since (it is under way on a live replica), but the same one once
    the judgment has written nothing since the cutoff (its replica died)."""
    job_id = setup.completed_job(GOOD)
    _threshold_on_the_series(setup, job_id)
    db = setup.ctx.db
    begun = setup.ctx.clock.now()
    _judgment_begun_and_stopped(setup, job_id, monkeypatch)
    assert job_id not in db.read_sync(jobs.jobs_completed_unprocessed, begun, 10)
    silent_since = setup.ctx.clock.now()
    assert db.read_sync(jobs.jobs_completed_unprocessed, silent_since, 10) == [job_id]


def _events(setup: Setup, job_id: int) -> list[str]:
    """The messages of the job's ``processed`` events."""

    def read(conn: sa.Connection) -> list[str]:
        return list(
            conn.execute(
                sa.select(job_event.c.message).where(
                    job_event.c.job_id == job_id, job_event.c.event_type == "job_processed"
                )
            ).scalars()
        )

    return setup.world.db.read_sync(read)


@pytest.mark.parametrize(
    "cause",
    [
        pytest.param(lambda: wrapped(sqlite_busy()), id="SQLite busy"),
        pytest.param(lambda: wrapped(postgresql_refused()), id="PostgreSQL connection refused"),
    ],
)
def test_a_judgment_the_database_cut_short_leaves_the_job_completed_to_be_judged_again(
    setup: Setup,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    cause: Callable[[], Exception],
) -> None:
    """A judgment whose read fails for a moment (``store.unavailable``) moves nothing: the
    job stays ``completed``, a warning logged without the statement's parameters, and the
    next try judges it, raising its alert (a real regression is never left unreported)."""
    first = setup.completed_job(_value_output(3.0))
    stepped = setup.completed_job(_value_output(30.0))
    _threshold_on_the_series(setup, first)
    asyncio.run(Processor(setup.ctx).process([first]))
    read = setup.ctx.db.read_apart

    async def unavailable(*_args: Any) -> Any:
        raise cause()

    setup.ctx.db.read_apart = unavailable  # type: ignore[method-assign,assignment]
    try:
        with caplog.at_level(logging.WARNING, "benchrunner.server.processing.judgment"):
            asyncio.run(Processor(setup.ctx).process([stepped]))
    finally:
        del setup.ctx.db.read_apart
    assert setup.ctx.db.read_apart == read
    assert setup.outcome(stepped) == (JobStatus.COMPLETED, None, 1, 0)
    assert _judged_state(setup, stepped) == (0, 0)
    [warned] = [r for r in caplog.records if r.name.endswith("judgment")]
    assert warned.levelno == logging.WARNING and warned.exc_info is None
    assert "OperationalError" in warned.getMessage() and SECRET not in warned.getMessage()
    asyncio.run(Processor(setup.ctx).process([stepped]))  # the sweeper's re-queue
    assert setup.outcome(stepped) == (JobStatus.PROCESSED, None, 1, 1)
    assert _judged_state(setup, stepped) == (1, 1)
    assert _events(setup, stepped) == ["parsed 1 metrics"]


@pytest.mark.parametrize("failing_step", ["judge_report", "_write_parts"])
def test_a_judgment_failing_for_a_bug_moves_the_job_saying_so(
    setup: Setup,
    failing_step: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A failure that is not the database's would recur on every try: the job moves to
    ``processed`` with its metrics unjudged, its event saying the judgment failed and why, an
    error logged; nothing judged, nothing is looked back from."""
    first = setup.completed_job(_value_output(3.0))
    stepped = setup.completed_job(_value_output(30.0))
    _threshold_on_the_series(setup, first)
    asyncio.run(Processor(setup.ctx).process([first]))

    def failing(*_args: object, **_kwargs: object) -> int:
        raise OverflowError("intermediate overflow in fsum")

    async def failing_async(*_args: object, **_kwargs: object) -> None:
        raise OverflowError("intermediate overflow in fsum")

    looked_back: list[object] = []

    async def look_back(_db: object, looked: object, _now: object) -> int:
        looked_back.append(looked)
        return 0

    with monkeypatch.context() as patched, caplog.at_level(logging.ERROR):
        patched.setattr(
            judgment, failing_step, failing_async if failing_step == "_write_parts" else failing
        )
        patched.setattr(judgment, "look_back_later", look_back)
        asyncio.run(Processor(setup.ctx).process([stepped]))
    assert looked_back == []
    assert setup.outcome(stepped) == (JobStatus.PROCESSED, None, 1, 1)
    assert _judged_state(setup, stepped) == (0, 0)
    assert _events(setup, stepped) == ["parsed 1 metrics; judgment failed: OverflowError"]
    assert any(r.levelno == logging.ERROR and r.name.endswith("judgment") for r in caplog.records)
    assert _unjudged_as_shown(setup, stepped) == "parsed 1 metrics; judgment failed: OverflowError"
    assert _unjudged_as_shown(setup, first) is None


def test_a_judgment_failing_on_a_value_names_the_failure_without_the_value(
    setup: Setup,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The job's event, shown to the project's viewers, names the failure by its type and
    database code, never by the driver's message, which quotes the value it refused; the
    server's error log has the whole message."""
    job_id = setup.completed_job(GOOD)
    _threshold_on_the_series(setup, job_id)
    value: bytes | str
    if database_url.startswith("sqlite"):
        # Python's sqlite3 quotes the text it cannot decode (no SQLite error code: recurs)
        statement, value, named = (
            "SELECT CAST(:v AS TEXT)",
            SECRET.encode() + b"\xff",
            "OperationalError",
        )
    else:
        statement, value, named = (
            "SELECT CAST(:v AS float8)",
            SECRET,
            "InvalidTextRepresentation (22P02)",
        )

    def refusing(conn: sa.Connection, *_args: object, **_kwargs: object) -> int:
        return int(conn.execute(sa.text(statement), {"v": value}).scalar_one())

    with monkeypatch.context() as patched, caplog.at_level(logging.ERROR):
        patched.setattr(judgment, "judge_report", refusing)
        asyncio.run(Processor(setup.ctx).process([job_id]))
    assert setup.outcome(job_id) == (JobStatus.PROCESSED, None, 1, 1)
    assert _events(setup, job_id) == [f"parsed 1 metrics; judgment failed: {named}"]
    [logged] = [r for r in caplog.records if r.name.endswith("judgment")]
    assert logged.levelno == logging.ERROR and logged.exc_info is not None
    assert SECRET in str(logged.exc_info[1])


@pytest.mark.only_engine("sqlite")
def test_storing_the_rest_failing_for_a_bug_leaves_the_job_for_recovery_and_loses_no_metric(
    setup: Setup,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A failure storing the rest of a report's metrics that is not the database's leaves the
    job ``completed`` with its first part stored, an error logged: moving it on would lose the
    metrics not stored. Once what failed is mended, recovery stores and judges every one.
    PostgreSQL stores every metric with the job's write: no rest."""
    count = METRIC_PART + 10
    job_id = setup.completed_job(_many_output(count))
    _threshold_on_the_series(setup, job_id)

    def failing(*_args: object) -> None:
        raise OverflowError("Python int too large to convert to SQLite INTEGER")

    with monkeypatch.context() as patched, caplog.at_level(logging.ERROR):
        patched.setattr(metric_parts, "_store_part", failing)
        asyncio.run(Processor(setup.ctx).process([job_id]))
    assert setup.outcome(job_id) == (JobStatus.COMPLETED, None, METRIC_PART, 0)
    assert any(r.levelno == logging.ERROR and r.name.endswith("judgment") for r in caplog.records)
    asyncio.run(Processor(setup.ctx).process([job_id]))
    assert setup.outcome(job_id) == (JobStatus.PROCESSED, None, count, 1)
    assert _judged_state(setup, job_id)[0] == count


def test_a_judgment_that_raises_leaves_its_job_and_judges_the_rest_of_the_batch(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The processor judges each report of a batch on its own: one whose judgment raises (its
    last write failed) stays ``completed`` for the next try, the others are judged and
    moved, and the batch is announced."""
    first = setup.completed_job(_value_output(3.0))
    failing = setup.completed_job(_value_output(30.0))
    judged = setup.completed_job(_value_output(30.0))
    _threshold_on_the_series(setup, first)
    asyncio.run(Processor(setup.ctx).process([first]))
    failing_report = setup.world.db.read_sync(jobs.job_get, failing)
    assert failing_report is not None

    async def raising_for_one(db: Database, later: JudgmentLater, now: Any) -> Any:
        if later.report_id == failing_report.report_id:
            raise _Stopped
        return await judge_later(db, later, now)

    batches: list[list[int]] = []
    with monkeypatch.context() as patched:
        patched.setattr(processor, "judge_later", raising_for_one)
        asyncio.run(Processor(setup.ctx, on_batch=batches.append).process([failing, judged]))
    assert batches == [[failing, judged]]
    assert setup.outcome(failing) == (JobStatus.COMPLETED, None, 1, 0)
    assert setup.outcome(judged)[0] == JobStatus.PROCESSED
    assert _judged_state(setup, judged)[0] == 1
    asyncio.run(Processor(setup.ctx).process([failing]))
    assert setup.outcome(failing) == (JobStatus.PROCESSED, None, 1, 1)


def _many_output(count: int) -> bytes:
    stdout = json.dumps({f"b{k}": {"latency": {"value": 3.0}} for k in range(count)})
    return json.dumps({"results": [{"exit_code": 0, "stdout": stdout}]}).encode()


def test_a_large_report_stored_in_parts_and_stopped_between_them_stores_each_metric_once(
    setup: Setup, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/decisions/processing.md: on SQLite a report's metrics are stored ``METRIC_PART`` a
    write transaction, its job ``completed`` until the last; a server stopped between two parts
    (here: the second cut short by the database, which leaves it as a stop does:
    ``store.unavailable``) leaves it so with the parts stored, and processing it again stores
    the rest, each metric once. PostgreSQL stores them in one statement."""
    count = 2 * METRIC_PART + 50
    job_id = setup.completed_job(_many_output(count))
    if database_url.startswith("sqlite"):
        store_part = metric_parts._store_part
        parts: list[int] = []

        def stopped_at_the_second(*args: Any) -> Any:
            parts.append(len(args[2]))
            if len(parts) == 2:
                raise wrapped(sqlite_busy())
            return store_part(*args)

        with monkeypatch.context() as patched:
            patched.setattr(metric_parts, "_store_part", stopped_at_the_second)
            asyncio.run(Processor(setup.ctx).process([job_id]))
        # the first part went with the job's write; the rest in two, stopped at the second
        assert parts == [METRIC_PART, count - 2 * METRIC_PART]
        assert setup.outcome(job_id) == (JobStatus.COMPLETED, None, 2 * METRIC_PART, 0)
    asyncio.run(Processor(setup.ctx).process([job_id]))
    assert setup.outcome(job_id) == (JobStatus.PROCESSED, None, count, 1)

    def keys(conn: sa.Connection) -> list[tuple[int, int, int]]:
        found = conn.execute(
            sa.select(metric.c.benchmark_id, metric.c.measure_id, metric.c.iteration)
        )
        return [(int(b), int(m), int(i)) for b, m, i in found]

    stored = setup.world.db.read_sync(keys)
    assert len(set(stored)) == len(stored) == count


def test_results_of_one_metric_in_two_parts_are_stored_and_judged_as_in_one(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A result named with an ignore suffix is the metric of its unsuffixed name again, kept
    beside it as a report stored in one transaction keeps it, though on SQLite it falls in a
    later part than the first (``METRIC_PART``). A stop before the judgment (after the first
    part on SQLite, after them all on PostgreSQL) and the recovery store each once and judge
    each: one boundary a metric."""
    count = METRIC_PART + 10
    stdout = {f"b{k}": {"latency": {"value": 3.0}} for k in range(count)}
    stdout["b0_bencher_ignore"] = {"latency": {"value": 4.0}}
    output = json.dumps({"results": [{"exit_code": 0, "stdout": json.dumps(stdout)}]})
    job_id = setup.completed_job(output.encode())
    _threshold_on_the_series(setup, job_id)

    async def stopped(*_args: object) -> None:
        raise _Stopped

    with monkeypatch.context() as patched:
        patched.setattr("benchrunner.server.processing.processor.judge_later", stopped)
        asyncio.run(Processor(setup.ctx).process([job_id]))
    assert setup.outcome(job_id)[0] == JobStatus.COMPLETED
    asyncio.run(Processor(setup.ctx).process([job_id]))
    assert setup.outcome(job_id) == (JobStatus.PROCESSED, None, count + 1, 1)
    assert _judged_state(setup, job_id) == (count + 1, 0)


def test_collected_files_of_one_iteration_keep_one_result_per_benchmark() -> None:
    first = json.dumps({"sort": {"latency": {"value": 1}}, "hash": {"latency": {"value": 5}}})
    second = json.dumps({"sort": {"latency": {"value": 2}}})
    output = JsonJobOutput(
        results=[IterationResult(exit_code=0, output={"a.json": first, "b.json": second})]
    )
    values, error = measure_output("json", output)
    assert error is None
    assert [(v.benchmark, v.value) for v in values] == [("sort", 2.0), ("hash", 5.0)]


@pytest.mark.parametrize("small", [False, True])
def test_where_outputs_are_parsed(
    setup: Setup, monkeypatch: pytest.MonkeyPatch, small: bool
) -> None:
    """The adapters' parsing is CPU-heavy (milliseconds per large output): it runs in the
    parser pool, never on the thread of the loop that answers the runners' heartbeats; but a
    batch of a few hundred bytes parses in microseconds, cheaper on the loop than in a worker.
    (The server's pool is of processes, where this test could not see the parse; a thread
    pool shows the same dispatch.)"""
    from benchrunner import adapters

    parsed_on: list[int] = []
    parse = adapters.parse

    def noting_the_thread(*args: Any) -> list[adapters.Measurement]:
        parsed_on.append(threading.get_ident())
        return parse(*args)

    monkeypatch.setattr(adapters, "parse", noting_the_thread)
    ids = [setup.completed_job(GOOD) for _ in range(3)]
    loop_thread: list[int] = []
    # 0 bytes: no batch is small enough to parse on the loop.
    inline_parse_bytes = INLINE_PARSE_BYTES if small else 0

    async def scenario() -> None:
        loop_thread.append(threading.get_ident())
        with ThreadPoolExecutor(1) as parsers:
            processor = Processor(setup.ctx, parsers=parsers, inline_parse_bytes=inline_parse_bytes)
            await processor.process(ids)

    asyncio.run(scenario())
    if small:
        assert parsed_on == [loop_thread[0]] * 3
    else:
        assert len(parsed_on) == 3
        assert loop_thread[0] not in parsed_on
    assert all(setup.outcome(i) == (JobStatus.PROCESSED, None, 1, 1) for i in ids)


def test_inline_writes_commit_a_job_at_a_time_when_the_write_step_is_spent(setup: Setup) -> None:
    """With no time for a second job in a write (a write step of 0), each job commits on its
    own, the loop running in between, and every job still ends processed exactly once."""
    ids = [setup.completed_job(GOOD) for _ in range(4)]
    # What each committing transaction sees of the metrics table, itself included (the hot
    # statements bypass ``execute`` and its events, so they are counted by their effect).
    metrics_at_commit: list[int] = []

    def committing(conn: sa.Connection) -> None:
        counted = conn.exec_driver_sql("SELECT count(*) FROM metric").scalar_one()
        metrics_at_commit.append(int(counted))

    engine = setup.ctx.db.write_engine
    sa.event.listen(engine, "commit", committing)
    asyncio.run(Processor(setup.ctx, write_step=0.0).process(ids))
    sa.event.remove(engine, "commit", committing)
    before = [0, *metrics_at_commit[:-1]]
    writes = [n for n, prior in zip(metrics_at_commit, before, strict=True) if n > prior]
    # Writes run in a thread on PostgreSQL: the batch is one transaction there, as before.
    assert len(writes) == (4 if setup.ctx.db.inline else 1)
    assert all(setup.outcome(i) == (JobStatus.PROCESSED, None, 1, 1) for i in ids)


@pytest.mark.engine_independent
def test_a_stopped_processor_ends_the_judgments_awaited_of_it(setup: Setup) -> None:
    """A request waiting for a recovery's judgment when the processor stops is answered at once
    (its report pending), not after its whole wait."""

    async def scenario() -> tuple[bool, bool]:
        processor = Processor(setup.ctx)
        ends = processor.judgment_of_awaiting(987654)  # queued, never judged: not started
        await processor.stop()
        return ends.done(), ends.done() and not ends.result()

    assert asyncio.run(scenario()) == (True, True)
