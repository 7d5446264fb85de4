"""A project's testbeds (``GET`` list and one)."""

from __future__ import annotations

from fastapi import APIRouter

from benchrunner.api.dimensions import Testbed
from benchrunner.server.routes.dimensions import add_reads
from benchrunner.server.store.tables import testbed

router = APIRouter(tags=["testbeds"])

add_reads(router, "testbeds", "testbed", testbed, Testbed)
