"""Raw samples in the API's answers (``?samples=true`` on a report and on the perf query)."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from benchrunner.api.perf import PerfSamples
from benchrunner.core.samples import Samples
from benchrunner.server.http.answers import BuiltJson
from benchrunner.server.store import reports
from benchrunner.server.store.samples import samples_of


def samples_view(found: Samples) -> PerfSamples:
    """``values`` kept (at most ``core.samples.CAP``), ``count``, ``min`` and ``max`` of all of
    them, and ``cut``: whether some were left out of ``values``."""
    return PerfSamples(
        values=list(found.values),
        count=found.count,
        min=found.minimum,
        max=found.maximum,
        cut=found.cut,
    )


def report_samples(conn: Connection, report_id: int) -> dict[str, Samples]:
    """The samples of each of the report's metrics, by the metric's UUID (as text)."""
    metrics = reports.report_metrics(conn, report_id)
    found = samples_of(conn, [(m.id, m.value) for m in metrics])
    return {str(m.uuid): found[m.id] for m in metrics}


def with_samples(view: BuiltJson, found: dict[str, Samples]) -> BuiltJson:
    """A report's view (``report_json.report_view``) with ``samples`` beside each measure's
    ``metric``."""
    for iteration in view["results"]:
        for bench in iteration:
            for entry in bench["measures"]:
                kept = found.get(entry["metric"]["uuid"])
                if kept is not None:
                    entry["samples"] = samples_view(kept).model_dump()
    return view
