"""A project's benchmarks (``GET`` list and one) and ``PATCH`` to ignore one: an ignored
benchmark's metrics are still stored but never judged against a threshold (without renaming
it to ``...-bencher-ignore``, Bencher's only way)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from sqlalchemy.engine import Connection

from benchrunner.api.dimensions import Benchmark, BenchmarkUpdate
from benchrunner.server.access import project_access
from benchrunner.server.http.answers import ANSWERED
from benchrunner.server.routes.deps import Ctx, MaybeUser
from benchrunner.server.routes.dimensions import add_reads, dimension_view
from benchrunner.server.store import dimensions
from benchrunner.server.store.tables import benchmark
from benchrunner.server.views.lookups import in_project

router = APIRouter(tags=["benchmarks"])


def benchmark_view(row: Any, project_uuid: Any) -> Benchmark:
    return dimension_view(Benchmark, row, project_uuid, ignored=row.ignored)


add_reads(router, "benchmarks", "benchmark", benchmark, Benchmark, benchmark_view)


# ``ref:path``: a name may hold "/" (Criterion groups, git branches), sent percent-encoded.
@router.patch("/v0/projects/{project}/benchmarks/{ref:path}", **ANSWERED)
async def update_benchmark(
    project: str, ref: str, body: BenchmarkUpdate, user: MaybeUser, ctx: Ctx
) -> Benchmark:
    """Set ``ignored``: members of the project's organization only."""

    def unit(conn: Connection) -> Benchmark:
        row = project_access(conn, user, project, write=True)
        found = in_project(conn, benchmark, row.id, ref, "benchmark")
        if body.ignored is not None:
            dimensions.benchmark_set_ignored(conn, found.id, body.ignored)
        return benchmark_view(in_project(conn, benchmark, row.id, ref, "benchmark"), row.uuid)

    return await ctx.db.write(unit)
