"""webhooks: a project's webhooks, the outbox of their deliveries and each delivery's attempts
(docs/how-to/thresholds-alerts.md)

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-28 23:15:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from benchrunner.server.store.tables import UtcDateTime

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhook",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("events", sa.String(255), nullable=False),
        sa.Column("format", sa.String(8), nullable=False),
        sa.Column("secret", sa.String(255), nullable=False),
        sa.Column("created", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["project.id"],
            name=op.f("fk_webhook_project_id_project"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook")),
        sa.UniqueConstraint("uuid", name=op.f("uq_webhook_uuid")),
    )
    op.create_index("index_webhook_project", "webhook", ["project_id"])
    op.create_table(
        "webhook_delivery",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.Uuid(), nullable=False),
        sa.Column("webhook_id", sa.Integer(), nullable=False),
        sa.Column("event", sa.String(32), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt", UtcDateTime(), nullable=False),
        sa.Column("created", UtcDateTime(), nullable=False),
        sa.Column("finished", UtcDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["webhook_id"],
            ["webhook.id"],
            name=op.f("fk_webhook_delivery_webhook_id_webhook"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_delivery")),
        sa.UniqueConstraint("uuid", name=op.f("uq_webhook_delivery_uuid")),
    )
    op.create_index("index_webhook_delivery_due", "webhook_delivery", ["status", "next_attempt"])
    op.create_index("index_webhook_delivery_webhook", "webhook_delivery", ["webhook_id"])
    op.create_table(
        "webhook_attempt",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("delivery_id", sa.Integer(), nullable=False),
        sa.Column("attempted", UtcDateTime(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.String(500), nullable=True),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["delivery_id"],
            ["webhook_delivery.id"],
            name=op.f("fk_webhook_attempt_delivery_id_webhook_delivery"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_attempt")),
    )
    op.create_index("index_webhook_attempt_delivery", "webhook_attempt", ["delivery_id"])


def downgrade() -> None:
    op.drop_table("webhook_attempt")
    op.drop_table("webhook_delivery")
    op.drop_table("webhook")
