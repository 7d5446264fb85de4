"""The query planner's statistics on SQLite, kept fresh by the server.

PostgreSQL gathers its own (autovacuum's ANALYZE). SQLite gathers none unless asked, and
without them its planner guesses: on a project's jobs page it sorted every job of the project
instead of walking the ``job (created, id)`` index and stopping after a page (twice the CPU
with 10,000 jobs, benchmarks/RESULTS.md, "Console pages"). So the server runs ``ANALYZE`` at
startup and on each housekeeping round. ``analysis_limit`` makes it sample about that many
rows of each index instead of reading them all, which bounds its cost by the number of indexes
rather than the size of the database (about 50 ms with 10,000 jobs and their reports). Plain
``PRAGMA optimize`` is not enough before SQLite 3.46: it only looks at tables the same
connection has queried, and the server's connections come from a pool.
"""

from __future__ import annotations

from sqlalchemy.engine import Connection

from benchrunner.server.store import capabilities

ANALYZE_SAMPLE = "PRAGMA analysis_limit=1000"


def refresh_statistics(conn: Connection) -> bool:
    """Gather the planner's statistics on SQLite (in ``conn``'s transaction); whether it did:
    nothing to do on PostgreSQL."""
    if not capabilities.of(conn).analyze_by_hand:
        return False
    conn.exec_driver_sql(ANALYZE_SAMPLE)
    conn.exec_driver_sql("ANALYZE")
    return True
