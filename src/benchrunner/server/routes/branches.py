"""A project's branches (``GET`` list and one), with their start points."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from benchrunner.api.dimensions import Branch, StartPoint
from benchrunner.server.routes.dimensions import add_reads, dimension_view
from benchrunner.server.store.tables import branch
from benchrunner.server.views.resources import iso

router = APIRouter(tags=["branches"])


def branch_view(row: Any, project_uuid: Any) -> Branch:
    start_point = None
    if row.start_point_branch_id is not None:
        start_point = StartPoint(
            version=row.start_point_version, max_versions=row.start_point_max_versions
        )
    return dimension_view(
        Branch, row, project_uuid, start_point=start_point, head_reset=iso(row.head_reset)
    )


add_reads(router, "branches", "branch", branch, Branch, branch_view)
