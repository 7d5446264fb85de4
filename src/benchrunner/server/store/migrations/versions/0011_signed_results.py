"""signed results: a job keeps its runner's signature over the stored output (seed 002)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 10:40:00

The runner's public key already has its column (``runner.public_key``, 0001). The signature,
its output hash and the key's fingerprint go on the job row, not on ``job_output``: a large
output is a blob with no ``job_output`` row, while every job has its row.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("job") as batch:
        batch.add_column(sa.Column("output_hash", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("output_signature", sa.String(length=128), nullable=True))
        batch.add_column(sa.Column("output_key_fingerprint", sa.String(length=71), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("job") as batch:
        batch.drop_column("output_key_fingerprint")
        batch.drop_column("output_signature")
        batch.drop_column("output_hash")
