"""hot read indexes: two reads made on every job no longer depend on the planner's luck

- ``index_job_runner_in_flight``: every ``ready`` reads the jobs still in flight for its runner
  (``jobs.job_list_in_flight_for_runner``). Without statistics (a new store's, until the first
  ``ANALYZE`` that sees rows: at the next start or the hourly housekeeping), SQLite answered it
  through ``index_job_runner_id``, which holds every job the runner ever ran, and read each of
  them to check its status: about 5 % of the server's CPU per job after 2,000 jobs. This
  partial index holds only the jobs in flight, and both engines choose it with or without
  statistics.
- ``index_organization_role_organization``: every submission asks whether its organization has
  a member (``accounts.organization_for_job``), and the only index of ``organization_role``
  leads with the user: both engines scanned the whole table, every membership of every
  organization, statistics or not.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28 00:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

_IN_FLIGHT = sa.text("status BETWEEN 1 AND 2")


def upgrade() -> None:
    op.create_index(
        "index_job_runner_in_flight",
        "job",
        ["runner_id"],
        sqlite_where=_IN_FLIGHT,
        postgresql_where=_IN_FLIGHT,
    )
    op.create_index(
        "index_organization_role_organization", "organization_role", ["organization_id"]
    )


def downgrade() -> None:
    op.drop_index("index_organization_role_organization", table_name="organization_role")
    op.drop_index("index_job_runner_in_flight", table_name="job")
