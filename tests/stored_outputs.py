"""Where a finished job's output is stored, for tests that look at or damage it: a row of
``job_output`` when small, else a blob file under the server's data directory."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import sqlalchemy as sa

from benchrunner.server.store.engine import Database
from benchrunner.server.store.tables import job, job_output


def _job_id(conn: sa.Connection, job_uuid: str) -> int:
    return int(conn.execute(sa.select(job.c.id).where(job.c.uuid == UUID(job_uuid))).scalar_one())


def output_row(db_url: str, job_uuid: str) -> bytes | None:
    """The job's output as stored in the database; None when it has no row there."""
    db = Database(db_url)
    try:
        with db.read_engine.begin() as conn:
            where = job_output.c.job_id == _job_id(conn, job_uuid)
            data = conn.execute(sa.select(job_output.c.data).where(where)).scalar()
            return None if data is None else bytes(data)
    finally:
        db.close()


def replace_output_row(db_url: str, job_uuid: str, data: bytes) -> None:
    """Overwrite the job's stored row, as a damaged database or a hand edit would."""
    db = Database(db_url)
    try:
        with db.write_engine.begin() as conn:
            where = job_output.c.job_id == _job_id(conn, job_uuid)
            assert conn.execute(job_output.update().where(where).values(data=data)).rowcount == 1
    finally:
        db.close()


def output_blob(data_dir: Path, job_uuid: str) -> Path | None:
    """The job's output blob, None when there is none (its output is small, or purged)."""
    found = list((data_dir / "blobs").glob(f"*/output/v0/jobs/{job_uuid}"))
    assert len(found) <= 1, found
    return found[0] if found else None
