"""A project's measures (``GET`` list and one), with their units."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from benchrunner.api.dimensions import Measure
from benchrunner.server.routes.dimensions import add_reads, dimension_view
from benchrunner.server.store.tables import measure

router = APIRouter(tags=["measures"])


def measure_view(row: Any, project_uuid: Any) -> Measure:
    return dimension_view(Measure, row, project_uuid, units=row.units)


add_reads(router, "measures", "measure", measure, Measure, measure_view)
