"""duet alerts: an alert belongs to a boundary or to a duet result (exactly one); a duet result
records the margins it was judged with and where they came from; a run's margin may be unset

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27 11:10:00
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from alembic import op

from benchrunner.server.store.tables import UtcDateTime

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

_ONE_SUBJECT = (
    "(boundary_id IS NOT NULL AND duet_result_id IS NULL)"
    " OR (boundary_id IS NULL AND duet_result_id IS NOT NULL)"
)

_duet = sa.table(
    "duet",
    sa.column("id", sa.Integer()),
    sa.column("report_id", sa.Integer()),
    sa.column("margin", sa.Float()),
    sa.column("created", UtcDateTime()),
)
_duet_result = sa.table(
    "duet_result",
    sa.column("id", sa.Integer()),
    sa.column("duet_id", sa.Integer()),
    sa.column("limit", sa.String()),
    sa.column("lower_margin", sa.Float()),
    sa.column("upper_margin", sa.Float()),
    sa.column("margin_source", sa.String()),
)
_alert = sa.table(
    "alert",
    sa.column("uuid", sa.Uuid()),
    sa.column("duet_result_id", sa.Integer()),
    sa.column("report_id", sa.Integer()),
    sa.column("limit", sa.String()),
    sa.column("status", sa.String()),
    sa.column("created", UtcDateTime()),
    sa.column("modified", UtcDateTime()),
)


def upgrade() -> None:
    with op.batch_alter_table("duet", schema=None) as batch_op:
        batch_op.alter_column("margin", existing_type=sa.Float(), nullable=True)

    with op.batch_alter_table("duet_result", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lower_margin", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("upper_margin", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("margin_source", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("margin_model_id", sa.Integer(), nullable=True))
    # Every duet so far was judged with its run's margin (0 when the run gave none).
    run_margin = (
        sa.select(_duet.c.margin).where(_duet.c.id == _duet_result.c.duet_id).scalar_subquery()
    )
    op.execute(
        _duet_result.update().values(
            lower_margin=run_margin, upper_margin=run_margin, margin_source="run"
        )
    )
    with op.batch_alter_table("duet_result", schema=None) as batch_op:
        batch_op.alter_column("margin_source", existing_type=sa.String(length=16), nullable=False)
        batch_op.create_foreign_key(
            op.f("fk_duet_result_margin_model_id_model"),
            "model",
            ["margin_model_id"],
            ["id"],
            ondelete="SET NULL",
        )
        batch_op.create_index("index_duet_result_margin_model", ["margin_model_id"], unique=False)

    with op.batch_alter_table("alert", schema=None) as batch_op:
        batch_op.alter_column("boundary_id", existing_type=sa.Integer(), nullable=True)
        batch_op.add_column(sa.Column("duet_result_id", sa.Integer(), nullable=True))
        batch_op.create_foreign_key(
            op.f("fk_alert_duet_result_id_duet_result"),
            "duet_result",
            ["duet_result_id"],
            ["id"],
            ondelete="CASCADE",
        )
        batch_op.create_unique_constraint("uq_alert_duet_result_id", ["duet_result_id"])
        batch_op.create_check_constraint(op.f("ck_alert_one_subject"), _ONE_SUBJECT)

    # The duet results beyond their margin become the alerts they always meant, raised when
    # their duet was stored.
    conn = op.get_bind()
    beyond = conn.execute(
        sa.select(_duet_result.c.id, _duet_result.c.limit, _duet.c.report_id, _duet.c.created)
        .join(_duet, _duet.c.id == _duet_result.c.duet_id)
        .where(_duet_result.c.limit.is_not(None))
        .order_by(_duet_result.c.id)
    ).all()
    if beyond:
        conn.execute(
            _alert.insert(),
            [
                {
                    "uuid": uuid.uuid4(),
                    "duet_result_id": row.id,
                    "report_id": row.report_id,
                    "limit": row.limit,
                    "status": "active",
                    "created": row.created,
                    "modified": row.created,
                }
                for row in beyond
            ],
        )


def downgrade() -> None:
    conn = op.get_bind()
    kept = conn.execute(
        sa.select(sa.func.count()).select_from(_alert).where(_alert.c.duet_result_id.is_not(None))
    ).scalar_one()
    if kept:
        raise RuntimeError(
            f"{kept} alerts are on duet results (alert.duet_result_id), which the older schema "
            "cannot hold; downgrading would lose them and their statuses"
        )
    with op.batch_alter_table("alert", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_alert_one_subject"), type_="check")
        batch_op.drop_constraint("uq_alert_duet_result_id", type_="unique")
        batch_op.drop_constraint(op.f("fk_alert_duet_result_id_duet_result"), type_="foreignkey")
        batch_op.drop_column("duet_result_id")
        batch_op.alter_column("boundary_id", existing_type=sa.Integer(), nullable=False)

    with op.batch_alter_table("duet_result", schema=None) as batch_op:
        batch_op.drop_index("index_duet_result_margin_model")
        batch_op.drop_constraint(op.f("fk_duet_result_margin_model_id_model"), type_="foreignkey")
        batch_op.drop_column("margin_model_id")
        batch_op.drop_column("margin_source")
        batch_op.drop_column("upper_margin")
        batch_op.drop_column("lower_margin")

    # The older schema needs a run margin: a run that gave none was judged by its thresholds,
    # or by 0, which is what the older code took for none.
    op.execute(_duet.update().where(_duet.c.margin.is_(None)).values(margin=0.0))
    with op.batch_alter_table("duet", schema=None) as batch_op:
        batch_op.alter_column("margin", existing_type=sa.Float(), nullable=False)
