"""PostgreSQL connections outside the SQLAlchemy pools: one per LISTEN, one for NOTIFY, one per
session-level advisory lock. Each must be a single long-lived session, which a pool cannot give.
"""

from __future__ import annotations

import sqlalchemy as sa


def libpq_url(sqlalchemy_url: str) -> str:
    """``postgresql+psycopg://...`` -> the ``postgresql://...`` form psycopg connects with."""
    return (
        sa.make_url(sqlalchemy_url)
        .set(drivername="postgresql")
        .render_as_string(hide_password=False)
    )
