"""signed results: a job keeps its runner's signature over the stored output
(docs/decisions/signed-results.md)

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25 10:40:00

The runner's public key already has its column (``runner.public_key``, 0001). The signature,
its output hash and the key's fingerprint go on the job row, not on ``job_output``: a large
output is a blob with no ``job_output`` row, while every job has its row.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


COLUMNS = (
    ("output_hash", 64),
    ("output_signature", 128),
    ("output_key_fingerprint", 71),
)


def upgrade() -> None:
    for name, length in COLUMNS:
        op.add_column("job", sa.Column(name, sa.String(length=length), nullable=True))


def downgrade() -> None:
    # Plain ALTER TABLE ... DROP COLUMN (SQLite 3.35+), not a batch copy of the job table,
    # which would rebuild its indexes and lose the DESC of index_job_pending.
    for name, _length in reversed(COLUMNS):
        op.drop_column("job", name)
