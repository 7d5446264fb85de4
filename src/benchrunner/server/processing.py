"""Completed job -> adapter -> metrics in the report -> ``processed`` (SPEC section 7).

Runs in one write transaction per job: the metrics, the report's times and the transition
commit together, so a crash half-way leaves the job ``completed`` and startup re-processes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from sqlalchemy.engine import Connection

from benchrunner import adapters
from benchrunner.protocol import IterationResult, JsonJobOutput
from benchrunner.server.blobs import job_output_key
from benchrunner.server.context import ServerContext
from benchrunner.server.store import jobs, reports, transitions

log = logging.getLogger(__name__)


def _texts(result: IterationResult) -> list[str]:
    """Collected files carry the results when there are any; otherwise stdout does."""
    if result.output:
        return [result.output[path] for path in sorted(result.output)]
    return [result.stdout or ""]


def measure_output(
    adapter: str, output: JsonJobOutput | None
) -> tuple[list[reports.MetricValue], str | None]:
    """Metrics of every iteration, or the first parse error (and no metrics)."""
    if output is None:
        return [], "the job's output is missing from the blob store"
    if not output.results:
        return [], "the job produced no iterations"
    values: list[reports.MetricValue] = []
    for index, result in enumerate(output.results):
        for text in _texts(result):
            try:
                found = adapters.parse(adapter, text)
            except adapters.AdapterError as exc:
                return [], f"iteration {index}: adapter {adapter!r} could not parse output: {exc}"
            except Exception as exc:  # an adapter bug must not wedge the job in `completed`
                log.exception("adapter %s crashed", adapter)
                return [], f"iteration {index}: adapter {adapter!r} failed: {exc!r}"
            values.extend(
                reports.MetricValue(
                    index, m.benchmark, m.measure, m.value, m.lower_value, m.upper_value
                )
                for m in found
            )
    return values, None


MAX_BATCH = 64


class Processor:
    def __init__(self, ctx: ServerContext) -> None:
        self._ctx = ctx
        self._queue: asyncio.Queue[int] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="processor")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def enqueue(self, job_id: int) -> None:
        self._queue.put_nowait(job_id)

    async def _run(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while len(batch) < MAX_BATCH and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                await self.process(batch)
            except Exception:
                log.exception("processing %d jobs together failed; trying one by one", len(batch))
                for job_id in batch:
                    try:
                        await self.process([job_id])
                    except Exception:
                        log.exception("processing job %s failed; it stays completed", job_id)

    async def process(self, job_ids: list[int]) -> None:
        """Process completed jobs in one write transaction (all or none of them commit)."""
        found = await self._ctx.db.read(jobs.jobs_completed_among, job_ids)
        if not found:
            return
        outputs = await asyncio.to_thread(self._read_outputs, found)
        await self._ctx.db.write(self._commit_all, outputs)

    def _read_outputs(
        self, found: list[jobs.JobRow]
    ) -> list[tuple[jobs.JobRow, JsonJobOutput | None]]:
        outputs: list[tuple[jobs.JobRow, JsonJobOutput | None]] = []
        for job in found:
            raw = self._ctx.blobs.get(job_output_key(job.project_uuid, job.uuid))
            outputs.append((job, None if raw is None else JsonJobOutput.model_validate_json(raw)))
        return outputs

    def _commit_all(
        self, conn: Connection, outputs: list[tuple[jobs.JobRow, JsonJobOutput | None]]
    ) -> None:
        for job, output in outputs:
            self._commit(conn, job, output)

    def _commit(self, conn: Connection, job: jobs.JobRow, output: JsonJobOutput | None) -> bool:
        """Parse and store one job's metrics. The guarded move to ``processed`` comes first, so
        a job another replica (or an earlier batch) processed meanwhile adds nothing."""
        job_id = job.id
        report = reports.report_row(conn, job.report_id)
        values, error = measure_output(report.adapter, output)
        now = self._ctx.clock.now()
        if not transitions.job_mark_processed(
            conn,
            job_id,
            now,
            message=f"parsed {len(values)} metrics" if error is None else f"adapter error: {error}",
        ):
            return False
        reports.metrics_add(conn, job.report_id, job.project_id, values, now)
        reports.report_finish(
            conn,
            job.report_id,
            start_time=job.started or job.created,
            end_time=job.completed or now,
            error=error,
        )
        log.info(
            "job processed",
            extra={"job": str(job.uuid), "from": "completed", "to": "processed", "error": error},
        )
        return True
