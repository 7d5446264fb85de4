"""Metrics' raw samples (``core.samples``): written with the metrics, read by metric id.

A metric without a ``metric_sample`` row has one sample, its value: nothing is stored for it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.samples import Samples, bounded
from benchrunner.server.store.tables import metric_sample

IN_LIST_CHUNK = 500

_INSERT = metric_sample.insert()
_READ = sa.select(
    metric_sample.c.metric_id,
    metric_sample.c.sample_values,
    metric_sample.c.count.label("sample_count"),
    metric_sample.c.minimum,
    metric_sample.c.maximum,
).where(metric_sample.c.metric_id.in_(sa.bindparam("ids", expanding=True)))


def samples_add(conn: Connection, found: Iterable[tuple[int, Sequence[float]]]) -> None:
    """Store each ``(metric id, samples)`` with more than one sample, bounded."""
    rows = []
    for metric_id, values in found:
        if len(values) < 2:
            continue
        kept = bounded(values)
        rows.append(
            {
                "metric_id": metric_id,
                "sample_values": json.dumps(list(kept.values)),
                "count": kept.count,
                "minimum": kept.minimum,
                "maximum": kept.maximum,
            }
        )
    if rows:
        conn.execute(_INSERT, rows)


def samples_of(
    conn: Connection, values: dict[int, float] | Sequence[tuple[int, float]]
) -> dict[int, Samples]:
    """Each metric's samples, by id, given each metric's value (what a metric without stored
    samples has as its one sample)."""
    by_id = dict(values)
    ids = sorted(by_id)
    found: dict[int, Samples] = {i: Samples((by_id[i],), 1, by_id[i], by_id[i]) for i in ids}
    for start in range(0, len(ids), IN_LIST_CHUNK):
        chunk = ids[start : start + IN_LIST_CHUNK]
        for row in conn.execute(_READ, {"ids": chunk}):
            kept = tuple(float(v) for v in json.loads(row.sample_values))
            found[row.metric_id] = Samples(kept, row.sample_count, row.minimum, row.maximum)
    return found
