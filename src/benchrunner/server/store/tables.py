"""The schema: runner, spec, runner_spec and job, plus accounts and reports (docs/reference/).

Timestamps are stored as naive UTC and read back as aware UTC (``UtcDateTime``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_name)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
    }
)


def _naive_utc(value: Any) -> dt.datetime | None:
    """An aware datetime as stored: naive, in UTC."""
    if value is None:
        return None
    if not isinstance(value, dt.datetime):
        raise TypeError(f"expected a datetime, got {value!r}")
    if value.tzinfo is None:
        raise ValueError("naive datetime given; use UTC-aware datetimes")
    return value.astimezone(dt.UTC).replace(tzinfo=None)


def _naive_utc_text(value: Any) -> str | None:
    """``_naive_utc`` as SQLite stores a ``DateTime``: the text of SQLAlchemy's default storage
    format (``2026-11-29 19:45:50.000000``, the microseconds always written)."""
    naive = _naive_utc(value)
    return None if naive is None else naive.isoformat(" ", "microseconds")


def _aware_utc(value: Any) -> dt.datetime | None:
    return None if value is None else value.replace(tzinfo=dt.UTC)


class UtcDateTime(sa.TypeDecorator[dt.datetime]):
    """An aware datetime, stored naive in UTC.

    Its bind and result processors are one function per value, the engine's own conversion
    folded in: a job binds and reads a few dozen of these, and ``TypeDecorator``'s processors
    (``process_bind_param`` called by one function and its result passed to the engine's, then
    SQLite's ``%`` formatting of every field) cost about a third more per value on SQLite."""

    impl = sa.DateTime
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> dt.datetime | None:
        return _naive_utc(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> dt.datetime | None:
        return _aware_utc(value)

    def bind_processor(self, dialect: Dialect) -> Callable[[Any], Any]:
        # PostgreSQL's driver takes the datetime; SQLite's engine converts it to its text.
        return _naive_utc if self.impl_instance.bind_processor(dialect) is None else _naive_utc_text

    def result_processor(self, dialect: Dialect, coltype: object) -> Callable[[Any], Any]:
        parse = self.impl_instance.result_processor(dialect, coltype)
        if parse is None:
            return _aware_utc

        def process(value: Any) -> dt.datetime | None:
            return None if value is None else _aware_utc(parse(value))

        return process


def _id() -> sa.Column[int]:
    return sa.Column("id", sa.Integer, primary_key=True, autoincrement=True)


def _uuid() -> sa.Column[Any]:
    return sa.Column("uuid", sa.Uuid, nullable=False, unique=True)


def _ts(name: str, *, nullable: bool = False) -> sa.Column[dt.datetime]:
    return sa.Column(name, UtcDateTime(), nullable=nullable)


def _fk(name: str, target: str, ondelete: str, *, nullable: bool = False) -> sa.Column[int]:
    return sa.Column(name, sa.Integer, sa.ForeignKey(target, ondelete=ondelete), nullable=nullable)


organization = sa.Table(
    "organization",
    metadata,
    _id(),
    _uuid(),
    sa.Column("name", sa.String(64), nullable=False),
    sa.Column("slug", sa.String(64), nullable=False, unique=True),
    sa.Column("plan", sa.String(16), nullable=False),
    _ts("created"),
    _ts("modified"),
)

user = sa.Table(
    "user",
    metadata,
    _id(),
    _uuid(),
    sa.Column("name", sa.String(64), nullable=False),
    sa.Column("slug", sa.String(64), nullable=False, unique=True),
    sa.Column("email", sa.String(320), nullable=False, unique=True),
    sa.Column("password_hash", sa.String(255), nullable=True),
    sa.Column("admin", sa.Boolean, nullable=False, default=False),
    _ts("created"),
    _ts("modified"),
)

organization_role = sa.Table(
    "organization_role",
    metadata,
    _id(),
    _fk("user_id", "user.id", "CASCADE"),
    _fk("organization_id", "organization.id", "CASCADE"),
    sa.Column("role", sa.String(16), nullable=False),
    _ts("created"),
    sa.UniqueConstraint("user_id", "organization_id", name="uq_organization_role_user_org"),
    # Whether an organization has a member, asked on every submission (its jobs' priority).
    sa.Index("index_organization_role_organization", "organization_id"),
)

api_token = sa.Table(
    "api_token",
    metadata,
    _id(),
    _uuid(),
    _fk("user_id", "user.id", "CASCADE"),
    sa.Column("name", sa.String(64), nullable=False),
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    _ts("created"),
    _ts("expiration", nullable=True),
    _ts("revoked", nullable=True),
)

# A console sign-in: the cookie holds the token, the row its SHA-256; deleting the row signs out.
console_session = sa.Table(
    "console_session",
    metadata,
    _id(),
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    _fk("user_id", "user.id", "CASCADE"),
    _ts("created"),
    _ts("expires"),
)

project = sa.Table(
    "project",
    metadata,
    _id(),
    _uuid(),
    _fk("organization_id", "organization.id", "CASCADE"),
    sa.Column("name", sa.String(64), nullable=False),
    sa.Column("slug", sa.String(64), nullable=False, unique=True),
    sa.Column("visibility", sa.String(16), nullable=False),
    _ts("created"),
    _ts("modified"),
)

runner = sa.Table(
    "runner",
    metadata,
    _id(),
    _uuid(),
    sa.Column("name", sa.String(64), nullable=False),
    sa.Column("slug", sa.String(64), nullable=False, unique=True),
    sa.Column("token_hash", sa.String(64), nullable=False),
    _ts("last_heartbeat", nullable=True),
    _fk("organization_id", "organization.id", "CASCADE", nullable=True),
    sa.Column("public_key", sa.String(64), nullable=True),
    sa.Column("paused", sa.Boolean, nullable=False, default=False),
    sa.Column("os", sa.String(128), nullable=True),
    sa.Column("arch", sa.String(64), nullable=True),
    sa.Column("version", sa.String(64), nullable=True),
    _ts("created"),
    _ts("modified"),
    _ts("archived", nullable=True),
    sa.Index("index_runner_token_hash", "token_hash"),
)

spec = sa.Table(
    "spec",
    metadata,
    _id(),
    _uuid(),
    sa.Column("name", sa.String(64), nullable=False),
    sa.Column("slug", sa.String(64), nullable=False, unique=True),
    sa.Column("architecture", sa.String(16), nullable=False),
    sa.Column("cpu", sa.Integer, nullable=False),
    sa.Column("memory", sa.BigInteger, nullable=False),
    sa.Column("disk", sa.BigInteger, nullable=False),
    sa.Column("network", sa.Boolean, nullable=False, default=False),
    sa.Column("os", sa.String(16), nullable=False, server_default="linux"),
    sa.Column("sandbox", sa.String(16), nullable=True),
    _ts("fallback", nullable=True),
    _ts("created"),
    _ts("modified"),
    _ts("archived", nullable=True),
    # The noise guard (docs/decisions/noise.md): whether its runners calibrate around each job, and
    # the limits
    # above which a report is noisy (NULL: the server's defaults).
    sa.Column("noise_guard", sa.Boolean, nullable=False, default=True),
    sa.Column("noise_cv_limit", sa.Float, nullable=True),
    sa.Column("noise_drift_limit", sa.Float, nullable=True),
)

runner_spec = sa.Table(
    "runner_spec",
    metadata,
    _id(),
    _fk("runner_id", "runner.id", "CASCADE"),
    _fk("spec_id", "spec.id", "RESTRICT"),
    sa.UniqueConstraint("runner_id", "spec_id", name="uq_runner_spec_runner_spec"),
)


def _project_named(name: str, name_length: int, *extra: Any) -> sa.Table:
    return sa.Table(
        name,
        metadata,
        _id(),
        _uuid(),
        _fk("project_id", "project.id", "CASCADE"),
        sa.Column("name", sa.String(name_length), nullable=False),
        sa.Column("slug", sa.String(64), nullable=False),
        _ts("created"),
        sa.UniqueConstraint("project_id", "name", name=f"uq_{name}_project_name"),
        *extra,
    )


# Counts up to 2**32 - 1 (Bencher's u32: sample sizes, windows, max_versions): 64 bits on
# PostgreSQL; SQLite's INTEGER holds 64 bits already.
_COUNT = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

# A branch's history is its own reports since ``head_reset`` (None: since it was created) plus,
# when it has a start point, the start point branch's reports of versions
# (start_point_version - start_point_max_versions, start_point_version].
branch = _project_named(
    "branch",
    256,
    _fk("start_point_branch_id", "branch.id", "SET NULL", nullable=True),
    sa.Column("start_point_version", sa.Integer, nullable=True),
    sa.Column("start_point_max_versions", _COUNT, nullable=True),
    _ts("head_reset", nullable=True),
)
testbed = _project_named("testbed", 64)
benchmark = _project_named(
    "benchmark", 1024, sa.Column("ignored", sa.Boolean, nullable=False, default=False)
)
measure = _project_named(
    "measure", 64, sa.Column("units", sa.String(64), nullable=False, default="units")
)
sa.Index("index_measure_project_slug", measure.c.project_id, measure.c.slug)

report = sa.Table(
    "report",
    metadata,
    _id(),
    _uuid(),
    _fk("user_id", "user.id", "SET NULL", nullable=True),
    _fk("project_id", "project.id", "CASCADE"),
    _fk("branch_id", "branch.id", "CASCADE"),
    _fk("testbed_id", "testbed.id", "CASCADE"),
    sa.Column("adapter", sa.String(32), nullable=False),
    _ts("start_time"),
    _ts("end_time"),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("average", sa.String(16), nullable=True),
    sa.Column("fold", sa.String(16), nullable=True),
    sa.Column("hash", sa.String(64), nullable=True),
    sa.Column("version", sa.Integer, nullable=True),
    _ts("created"),
    sa.Column("noise", sa.Text, nullable=True),  # JSON: the noise guard's figures and verdict
    # A confirmation run's report: the report whose crossing it re-measures. Such a report is
    # kept but is never history (docs/how-to/thresholds-alerts.md).
    _fk("confirms_report_id", "report.id", "CASCADE", nullable=True),
    # JSON: the commits after the previous report's hash up to this one's, oldest first; and
    # the image tag holding {commit} that runs each (docs/how-to/bisect.md).
    sa.Column("bisect_range", sa.Text, nullable=True),
    sa.Column("bisect_image", sa.String(512), nullable=True),
    # JSON: a direct run's results, kept from its report's creation until its judgment's last
    # write; a report holding them awaits its judgment (store/pending_judgments.py).
    sa.Column("direct_results", sa.LargeBinary, nullable=True),
    sa.Index("index_report_project_created", "project_id", "created"),
    # A series' history: one branch and testbed, by time; and a branch's latest version (its
    # latest report, by id among those of that version: one end of the index, not a sort).
    sa.Index("index_report_branch_testbed_start", "branch_id", "testbed_id", "start_time"),
    sa.Index("index_report_branch_version", "branch_id", "version", "id"),
    sa.Index("index_report_confirms", "confirms_report_id"),
)

_AWAITS_JUDGMENT = sa.text("direct_results IS NOT NULL")
sa.Index(
    "index_report_awaits_judgment",
    report.c.created,
    sqlite_where=_AWAITS_JUDGMENT,
    postgresql_where=_AWAITS_JUDGMENT,
)

metric = sa.Table(
    "metric",
    metadata,
    _id(),
    _uuid(),
    _fk("report_id", "report.id", "CASCADE"),
    sa.Column("iteration", sa.Integer, nullable=False),
    _fk("benchmark_id", "benchmark.id", "CASCADE"),
    _fk("measure_id", "measure.id", "CASCADE"),
    sa.Column("value", sa.Float, nullable=False),
    sa.Column("lower_value", sa.Float, nullable=True),
    sa.Column("upper_value", sa.Float, nullable=True),
    sa.Index("index_metric_report_id", "report_id"),
    # History of one benchmark and measure: bounded by that series, whatever other projects hold.
    sa.Index("index_metric_benchmark_measure_report", "benchmark_id", "measure_id", "report_id"),
)

# A metric's raw samples when it has more than its value (core/samples.py): its harness's
# per-sample figures, or the iterations a fold made one. ``sample_values`` is a JSON array of at
# most core.samples.CAP of them; count, minimum and maximum describe them all.
metric_sample = sa.Table(
    "metric_sample",
    metadata,
    sa.Column(
        "metric_id",
        sa.Integer,
        sa.ForeignKey("metric.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("sample_values", sa.Text, nullable=False),
    sa.Column("count", sa.Integer, nullable=False),
    sa.Column("minimum", sa.Float, nullable=False),
    sa.Column("maximum", sa.Float, nullable=False),
)

# A threshold judges one measure on one branch and testbed: every benchmark of it
# (benchmark_id NULL), or one benchmark (an override, which wins over the measure's).
threshold = sa.Table(
    "threshold",
    metadata,
    _id(),
    _uuid(),
    _fk("project_id", "project.id", "CASCADE"),
    _fk("branch_id", "branch.id", "CASCADE"),
    _fk("testbed_id", "testbed.id", "CASCADE"),
    _fk("measure_id", "measure.id", "CASCADE"),
    _fk("benchmark_id", "benchmark.id", "CASCADE", nullable=True),
    _ts("created"),
    _ts("modified"),
    sa.Column("alert_when_noisy", sa.Boolean, nullable=False, default=False),
    # Confirmation runs before an alert (docs/how-to/thresholds-alerts.md); NULL: the default.
    sa.Column("confirm", sa.Integer, nullable=True),
    # Its alerts start a bisection by themselves (docs/how-to/bisect.md).
    sa.Column("bisect", sa.Boolean, nullable=False, default=False),
    sa.UniqueConstraint(
        "branch_id",
        "testbed_id",
        "measure_id",
        "benchmark_id",
        name="uq_threshold_branch_testbed_measure_benchmark",
    ),
    sa.Index("index_threshold_project", "project_id"),
)
_FOR_EVERY_BENCHMARK = sa.text("benchmark_id IS NULL")
# NULLs are distinct in a unique constraint: one measure-wide threshold per series needs this.
sa.Index(
    "uq_threshold_measure_wide",
    threshold.c.branch_id,
    threshold.c.testbed_id,
    threshold.c.measure_id,
    unique=True,
    sqlite_where=_FOR_EVERY_BENCHMARK,
    postgresql_where=_FOR_EVERY_BENCHMARK,
)

# A threshold's models: the current one has ``replaced`` NULL; updating a threshold inserts a
# new model and stamps the old one, so a boundary always names the model that drew it.
model = sa.Table(
    "model",
    metadata,
    _id(),
    _uuid(),
    _fk("threshold_id", "threshold.id", "CASCADE"),
    sa.Column("test", sa.String(16), nullable=False),
    sa.Column("min_sample_size", _COUNT, nullable=True),
    sa.Column("max_sample_size", _COUNT, nullable=True),
    sa.Column("window_seconds", _COUNT, nullable=True),
    sa.Column("lower_boundary", sa.Float, nullable=True),
    sa.Column("upper_boundary", sa.Float, nullable=True),
    sa.Column("max_pvalue", sa.Float, nullable=True),
    sa.Column("min_magnitude", sa.Float, nullable=True),
    _ts("created"),
    _ts("replaced", nullable=True),
    sa.Index("index_model_threshold", "threshold_id"),
)
_CURRENT = sa.text("replaced IS NULL")
sa.Index(
    "uq_model_current",
    model.c.threshold_id,
    unique=True,
    sqlite_where=_CURRENT,
    postgresql_where=_CURRENT,
)

# What a metric was judged against: the limits its threshold's model drew from its history.
boundary = sa.Table(
    "boundary",
    metadata,
    _id(),
    _fk("metric_id", "metric.id", "CASCADE"),
    _fk("threshold_id", "threshold.id", "CASCADE"),
    _fk("model_id", "model.id", "CASCADE"),
    sa.Column("baseline", sa.Float, nullable=True),
    sa.Column("lower_limit", sa.Float, nullable=True),
    sa.Column("upper_limit", sa.Float, nullable=True),
    # The samples test's answer: same, different or unknown (detection/samples.py).
    sa.Column("verdict", sa.String(16), nullable=True),
    sa.UniqueConstraint("metric_id", name="uq_boundary_metric_id"),
    sa.Index("index_boundary_threshold", "threshold_id"),
)

# One alert per boundary (a metric outside a threshold's limit, or a change point) or per duet
# result (a contender/baseline ratio beyond the duet's margin): exactly one of the two is set.
# ``report_id`` is the report whose evaluation raised it: the metric's own report for a limit, a
# later one for a change point found in the history, the duet's report for a duet.
ALERT_ONE_SUBJECT = (
    "(boundary_id IS NOT NULL AND duet_result_id IS NULL)"
    " OR (boundary_id IS NULL AND duet_result_id IS NOT NULL)"
)
alert = sa.Table(
    "alert",
    metadata,
    _id(),
    _uuid(),
    _fk("boundary_id", "boundary.id", "CASCADE", nullable=True),
    _fk("duet_result_id", "duet_result.id", "CASCADE", nullable=True),
    _fk("report_id", "report.id", "CASCADE"),
    sa.Column("limit", sa.String(8), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("change_before", sa.Float, nullable=True),
    sa.Column("change_after", sa.Float, nullable=True),
    sa.Column("change_magnitude", sa.Float, nullable=True),
    sa.Column("change_pvalue", sa.Float, nullable=True),
    # A change point's: the last report before its step (the step's first is the metric's).
    _fk("change_from_report_id", "report.id", "SET NULL", nullable=True),
    _ts("created"),
    _ts("modified"),
    # Triage (docs/how-to/thresholds-alerts.md): true_positive, false_positive or expected,
    # who set it last and when; NULL while untriaged.
    sa.Column("verdict", sa.String(16), nullable=True),
    _fk("verdict_user_id", "user.id", "SET NULL", nullable=True),
    sa.Column("verdict_at", UtcDateTime(), nullable=True),
    # pending, confirmed or suspected when re-runs judged it; NULL when none did.
    sa.Column("confirmation", sa.String(16), nullable=True),
    # Why the confirmation decided as it did, when its outcome alone does not say
    # ("unknown after 50 rounds": duets that never told the versions apart).
    sa.Column("confirmation_reason", sa.Text, nullable=True),
    # A bisect threshold's alert (docs/how-to/bisect.md): ``pending`` until the bisection
    # driver starts its bisection (``started``) or finds it cannot (``skipped``, with why).
    sa.Column("bisect", sa.String(16), nullable=True),
    sa.Column("bisect_reason", sa.Text, nullable=True),
    sa.UniqueConstraint("boundary_id", name="uq_alert_boundary_id"),
    sa.UniqueConstraint("duet_result_id", name="uq_alert_duet_result_id"),
    sa.CheckConstraint(ALERT_ONE_SUBJECT, name="one_subject"),
    sa.Index("index_alert_report", "report_id"),
    sa.Index("index_alert_bisect", "bisect"),
    sa.Index("index_alert_change_from", "change_from_report_id"),
)

# A duet job's verdict, kept apart from ``metric`` so that the absolute history (perf, thresholds)
# never sees a ratio. ``sequence`` is the order the runs ran in ("AB BA ..."; A = baseline).
duet = sa.Table(
    "duet",
    metadata,
    _id(),
    _fk("report_id", "report.id", "CASCADE"),
    sa.Column("seed", sa.BigInteger, nullable=False),
    sa.Column("rounds", sa.Integer, nullable=False),
    sa.Column("sequence", sa.Text, nullable=False),
    sa.Column("method", sa.String(128), nullable=False),
    sa.Column("resamples", sa.Integer, nullable=False),
    sa.Column("confidence", sa.Float, nullable=False),
    # The run's ``duet.margin``; NULL when it gave none (each result then takes its threshold's).
    sa.Column("margin", sa.Float, nullable=True),
    _ts("created"),
    sa.UniqueConstraint("report_id", name="uq_duet_report_id"),
)

# One benchmark and measure of a duet: the contender/baseline ratio and its interval; ``limit``
# set (lower/upper) is the duet's alert (an ``alert`` row). The margins it was judged with
# (fractions; NULL: that side raises nothing) came from ``margin_source``: ``run`` (the run's
# ``duet.margin``), ``threshold`` (the percentage model ``margin_model_id`` of the series'
# threshold) or ``none`` (neither: 0).
duet_result = sa.Table(
    "duet_result",
    metadata,
    _id(),
    _fk("duet_id", "duet.id", "CASCADE"),
    _fk("benchmark_id", "benchmark.id", "CASCADE"),
    _fk("measure_id", "measure.id", "CASCADE"),
    sa.Column("rounds", sa.Integer, nullable=False),
    sa.Column("ratio", sa.Float, nullable=False),
    sa.Column("lower_value", sa.Float, nullable=False),
    sa.Column("upper_value", sa.Float, nullable=False),
    sa.Column("limit", sa.String(8), nullable=True),
    sa.Column("lower_margin", sa.Float, nullable=True),
    sa.Column("upper_margin", sa.Float, nullable=True),
    sa.Column("margin_source", sa.String(16), nullable=False),
    _fk("margin_model_id", "model.id", "SET NULL", nullable=True),
    sa.Index("index_duet_result_duet", "duet_id"),
    # A threshold's deletion sets its models' duet results' margin_model_id NULL: found here.
    sa.Index("index_duet_result_margin_model", "margin_model_id"),
)

# "This change was intended": the branch/testbed's history (of one measure, or of every one)
# before ``report_id`` no longer counts.
baseline_reset = sa.Table(
    "baseline_reset",
    metadata,
    _id(),
    _uuid(),
    _fk("project_id", "project.id", "CASCADE"),
    _fk("branch_id", "branch.id", "CASCADE"),
    _fk("testbed_id", "testbed.id", "CASCADE"),
    _fk("measure_id", "measure.id", "CASCADE", nullable=True),
    _fk("report_id", "report.id", "CASCADE"),
    _ts("created"),
    sa.Index("index_baseline_reset_branch_testbed", "branch_id", "testbed_id"),
)

job = sa.Table(
    "job",
    metadata,
    _id(),
    _uuid(),
    _fk("report_id", "report.id", "CASCADE"),
    _fk("organization_id", "organization.id", "CASCADE"),
    sa.Column("source_ip", sa.String(45), nullable=False),
    _fk("spec_id", "spec.id", "RESTRICT"),
    sa.Column("config", sa.Text, nullable=False),
    sa.Column("timeout", sa.Integer, nullable=False),
    sa.Column("priority", sa.Integer, nullable=False),
    sa.Column("status", sa.Integer, nullable=False),
    _fk("runner_id", "runner.id", "RESTRICT", nullable=True),
    _ts("claimed", nullable=True),
    _ts("started", nullable=True),
    _ts("completed", nullable=True),
    _ts("last_heartbeat", nullable=True),
    sa.Column("last_billed_minute", sa.Integer, nullable=True),
    sa.Column("nonce", sa.String(64), nullable=True),
    sa.Column("kind", sa.String(16), nullable=False),
    _ts("created"),
    _ts("modified"),
    _ts("outputs_purged", nullable=True),  # retention deleted its stored outputs then
    # A keyed runner's signed result (docs/decisions/signed-results.md): kept here rather than on
    # ``job_output``, which
    # has no row for a large output (a blob).
    sa.Column("output_hash", sa.String(64), nullable=True),
    sa.Column("output_signature", sa.String(128), nullable=True),
    sa.Column("output_key_fingerprint", sa.String(71), nullable=True),
)

_PENDING = sa.text("status = 0")
# Ranges, not IN lists: SQLite evaluates a partial index's ``IN (...)`` through a temporary
# table built for every row written, and each status change writes the job's row (migration
# 0020). ``test_job_status_predicates`` checks that the ranges are the states they stand for.
_IN_FLIGHT = sa.text("status BETWEEN 1 AND 2")


def unindexed(column: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
    """``column`` as no index has it (``column + 0``), for a condition that checks a row found
    another way (a job by its id) and must not choose how it is found. A prepared statement's
    generic plan cannot tell a lookup by the primary key from one by another column of a
    single equal value: PostgreSQL moved a runner's job through ``index_job_runner_id``,
    reading every job the runner ever ran, and a claim's move through a partial index of
    pending jobs, reading the queue (benchmarks/RESULTS.md, "What a job's statements read")."""
    return column + sa.literal_column("0")


def pending(status: sa.ColumnElement[int]) -> sa.ColumnElement[bool]:
    """``status = 0`` with the value written out, as ``index_job_pending`` says it. With a
    bound parameter the plan depends on the value bound (whether the partial index applies):
    SQLite then prepares the statement anew at every execution, which made a claim five times
    dearer, and a generic plan of PostgreSQL's could not use the index at all."""
    return status == sa.literal_column("0")


def in_flight(status: sa.ColumnElement[int]) -> sa.ColumnElement[bool]:
    """``status BETWEEN 1 AND 2`` (claimed or running) with the values written out, as the
    partial indexes below say it.

    SQLite uses a partial index only when the query repeats the index's WHERE term; with bound
    parameters instead of literals it scans the whole table.
    """
    return status.between(sa.literal_column("1"), sa.literal_column("2"))


# The queue in claim order, to its last key: a claim reads its one job from the index.
sa.Index(
    "index_job_pending",
    job.c.status,
    job.c.priority.desc(),
    job.c.created.asc(),
    job.c.id.asc(),
    sqlite_where=_PENDING,
    postgresql_where=_PENDING,
)
sa.Index(
    "index_job_org_in_flight",
    job.c.organization_id,
    sqlite_where=_IN_FLIGHT,
    postgresql_where=_IN_FLIGHT,
)
sa.Index(
    "index_job_source_ip_in_flight",
    job.c.source_ip,
    sqlite_where=_IN_FLIGHT,
    postgresql_where=_IN_FLIGHT,
)
sa.Index("index_job_in_flight", job.c.status, sqlite_where=_IN_FLIGHT, postgresql_where=_IN_FLIGHT)
# What is in flight for a runner, read on each of its ``ready``s: not through its whole history.
sa.Index(
    "index_job_runner_in_flight",
    job.c.runner_id,
    sqlite_where=_IN_FLIGHT,
    postgresql_where=_IN_FLIGHT,
)
_COMPLETED = sa.text("status = 3")
# Completed jobs not yet processed, oldest first: the sweeper re-queues those a dead replica left.
sa.Index(
    "index_job_completed",
    job.c.modified,
    sqlite_where=_COMPLETED,
    postgresql_where=_COMPLETED,
)
_HAS_RUNNER = sa.text("runner_id IS NOT NULL")
sa.Index(
    "index_job_runner_id", job.c.runner_id, sqlite_where=_HAS_RUNNER, postgresql_where=_HAS_RUNNER
)
PENDING_ORDER = job.c.id + sa.literal_column("0")
"""The pending jobs' order in ``index_job_pending_id``, from whose ends the server's cap reads
the span of their ids (``store.backlog``): an expression of the id that no other index has, so
that no planner reads an end through ``pk_job`` past every finished job (PostgreSQL did, its
statistics making any row likely pending), nor through another partial index. A query names
it exactly so."""
ORG_PENDING_ORDER = job.c.id - sa.literal_column("0")
"""``PENDING_ORDER`` for ``index_job_org_pending``, an organization's span: an expression of
its own, so that an organization's ends are read from its own index (PostgreSQL read them
through ``index_job_pending_id``, past every other organization's pending job, when the
organization held most of the table's rows)."""
sa.Index(
    "index_job_pending_id",
    job.c.status,
    PENDING_ORDER,
    sqlite_where=_PENDING,
    postgresql_where=_PENDING,
)
# An organization's pending jobs: its cap counts them when their span reaches it.
sa.Index(
    "index_job_org_pending",
    job.c.status,
    job.c.organization_id,
    ORG_PENDING_ORDER,
    sqlite_where=_PENDING,
    postgresql_where=_PENDING,
)
_OUTPUTS_KEPT = sa.text("status >= 4 AND outputs_purged IS NULL")
# Finished jobs whose outputs retention has not deleted yet, oldest first.
sa.Index(
    "index_job_outputs_kept",
    job.c.modified,
    sqlite_where=_OUTPUTS_KEPT,
    postgresql_where=_OUTPUTS_KEPT,
)
sa.Index("index_job_spec_id", job.c.spec_id)
# A project's jobs page: the newest first without sorting them all (once the planner's statistics
# show a project holding many jobs), and their number by status from the index alone.
sa.Index("index_job_created", job.c.created, job.c.id)
# A report's jobs, and their statuses from the index alone.
sa.Index("index_job_report_status", job.c.report_id, job.c.status)

job_event = sa.Table(
    "job_event",
    metadata,
    _id(),
    _fk("job_id", "job.id", "CASCADE"),
    sa.Column("event_type", sa.String(64), nullable=False),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("actor", sa.String(128), nullable=True),
    sa.Column("meta", sa.Text, nullable=False),
    _ts("created"),
    sa.Index("index_job_event_job_created", "job_id", "created"),
)

# Idempotency keys of ``POST /v0/run`` (docs/decisions/submission.md): the unique pair (owner, key)
# makes
# concurrent submissions with one key create one report. ``owner`` is ``user:<id>``, or
# ``ip:<address>`` for an anonymous run; ``report_id`` is set before the submission commits.
idempotency_key = sa.Table(
    "idempotency_key",
    metadata,
    _id(),
    sa.Column("owner", sa.String(64), nullable=False),
    sa.Column("key", sa.String(255), nullable=False),
    sa.Column("payload_hash", sa.String(64), nullable=False),
    _fk("report_id", "report.id", "CASCADE", nullable=True),
    _ts("created"),
    sa.UniqueConstraint("owner", "key", name="uq_idempotency_key_owner_key"),
    sa.Index("index_idempotency_key_created", "created"),
)


# A running job's live log: chunks in order of arrival (``id``), each covering ``size`` bytes of
# its stream from ``stream_offset``; ``data`` NULL marks bytes the runner could not deliver (a
# gap) or that were over the size limit (``truncated``). The job's stored output stays the record.
job_log = sa.Table(
    "job_log",
    metadata,
    _id(),
    _fk("job_id", "job.id", "CASCADE"),
    sa.Column("stream", sa.String(8), nullable=False),
    sa.Column("stream_offset", sa.BigInteger, nullable=False),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("data", sa.Text, nullable=True),
    sa.UniqueConstraint("job_id", "stream", "stream_offset", name="uq_job_log_job_stream_offset"),
    sa.Index("index_job_log_job_id", "job_id", "id"),
)

# A finished job's output when it is small (at most ``INLINE_OUTPUT_BYTES``): kept in the row,
# written in the transaction that records the job's end, so it is as durable as that status
# change at no extra flush. Larger outputs live in the blob store.
job_output = sa.Table(
    "job_output",
    metadata,
    sa.Column("job_id", sa.Integer, sa.ForeignKey("job.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("data", sa.LargeBinary, nullable=False),
)

# The OCI registry (one repository per project). Blob bytes live in the blob store, addressed by
# digest; a row here says which project may read them. Manifests are small (<= 4 MiB) and kept
# in the row so a read needs no second store.
oci_blob = sa.Table(
    "oci_blob",
    metadata,
    _id(),
    _fk("project_id", "project.id", "CASCADE"),
    sa.Column("digest", sa.String(128), nullable=False),
    sa.Column("size", sa.BigInteger, nullable=False),
    _ts("created"),
    sa.UniqueConstraint("project_id", "digest", name="uq_oci_blob_project_digest"),
)

oci_manifest = sa.Table(
    "oci_manifest",
    metadata,
    _id(),
    _fk("project_id", "project.id", "CASCADE"),
    sa.Column("digest", sa.String(128), nullable=False),
    sa.Column("media_type", sa.String(255), nullable=False),
    sa.Column("artifact_type", sa.String(255), nullable=True),
    sa.Column("subject", sa.String(128), nullable=True),
    sa.Column("annotations", sa.Text, nullable=True),
    sa.Column("content", sa.LargeBinary, nullable=False),
    _ts("created"),
    sa.UniqueConstraint("project_id", "digest", name="uq_oci_manifest_project_digest"),
    sa.Index("index_oci_manifest_subject", "project_id", "subject"),
)

oci_tag = sa.Table(
    "oci_tag",
    metadata,
    _id(),
    _fk("project_id", "project.id", "CASCADE"),
    sa.Column("name", sa.String(128), nullable=False),
    _fk("manifest_id", "oci_manifest.id", "CASCADE"),
    _ts("modified"),
    sa.UniqueConstraint("project_id", "name", name="uq_oci_tag_project_name"),
)

# A runner release (docs/decisions/runner-releases.md): a wheel of benchrunner that runners on its
# channel update to. The
# wheel itself is a blob under ``runner_release_key(checksum)``; the newest row of a channel is
# the one offered.
runner_release = sa.Table(
    "runner_release",
    metadata,
    _id(),
    _uuid(),
    sa.Column("channel", sa.String(16), nullable=False),
    sa.Column("version", sa.String(64), nullable=False),
    sa.Column("checksum", sa.String(64), nullable=False),
    sa.Column("filename", sa.String(255), nullable=False),
    sa.Column("size", sa.BigInteger, nullable=False),
    _ts("created"),
    sa.UniqueConstraint("channel", "version", name="uq_runner_release_channel_version"),
)

# What every replica on the database must agree on, one row each: the signing key
# (``server.secret_key``) and the blob store's identity (``server.blobs.identity``), set by
# the first server to start and read by the others, which share nothing else but the blob store.
server_state = sa.Table(
    "server_state",
    metadata,
    sa.Column("name", sa.String(32), primary_key=True),
    sa.Column("value", sa.String(255), nullable=False),
    _ts("created"),
)

# A project's webhooks (docs/how-to/thresholds-alerts.md): where its alert events are POSTed.
# ``events`` is a comma-separated list of event names; ``secret`` signs each body and is never
# shown after creation; ``format`` is ``json`` or ``slack``.
webhook = sa.Table(
    "webhook",
    metadata,
    _id(),
    _uuid(),
    _fk("project_id", "project.id", "CASCADE"),
    sa.Column("url", sa.String(2048), nullable=False),
    sa.Column("events", sa.String(255), nullable=False),
    sa.Column("format", sa.String(8), nullable=False),
    sa.Column("secret", sa.String(255), nullable=False),
    _ts("created"),
    sa.Index("index_webhook_project", "project_id"),
)

# The outbox: one row per event and webhook, written in the transaction that made the event, so
# that a committed event is delivered (after a restart too) and a rolled back one never is.
# ``status``: pending, delivered or failed (attempts or age exhausted); a pending row is due at
# ``next_attempt``, which a claim moves past the delivery's timeout
# (``server.processing.webhooks``).
webhook_delivery = sa.Table(
    "webhook_delivery",
    metadata,
    _id(),
    _uuid(),
    _fk("webhook_id", "webhook.id", "CASCADE"),
    sa.Column("event", sa.String(32), nullable=False),
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    _ts("next_attempt"),
    _ts("created"),
    _ts("finished", nullable=True),
    sa.Index("index_webhook_delivery_due", "status", "next_attempt"),
    sa.Index("index_webhook_delivery_webhook", "webhook_id"),
)

# Each POST of a delivery: its answer's status code or the error, and how long it took.
webhook_attempt = sa.Table(
    "webhook_attempt",
    metadata,
    _id(),
    _fk("delivery_id", "webhook_delivery.id", "CASCADE"),
    _ts("attempted"),
    sa.Column("status_code", sa.Integer, nullable=True),
    sa.Column("error", sa.String(500), nullable=True),
    sa.Column("duration_ms", sa.Float, nullable=False),
    sa.Index("index_webhook_attempt_delivery", "delivery_id"),
)

# A calibration (docs/how-to/thresholds-alerts.md): one job run ``runs`` times on one spec with
# no change between runs (an A/A run), on a branch of its own so that its reports never enter
# the target branch's history; its result, a proposed threshold per benchmark and measure, is
# computed from those reports when read.
calibration = sa.Table(
    "calibration",
    metadata,
    _id(),
    _uuid(),
    _fk("project_id", "project.id", "CASCADE"),
    _fk("spec_id", "spec.id", "CASCADE"),
    _fk("user_id", "user.id", "SET NULL", nullable=True),
    _fk("branch_id", "branch.id", "CASCADE"),
    _fk("target_branch_id", "branch.id", "CASCADE"),
    _fk("testbed_id", "testbed.id", "CASCADE"),
    sa.Column("runs", sa.Integer, nullable=False),
    sa.Column("false_alarm_rate", sa.Float, nullable=False),
    _ts("created"),
    _ts("applied", nullable=True),
    sa.Index("index_calibration_project", "project_id"),
)

calibration_report = sa.Table(
    "calibration_report",
    metadata,
    _fk("calibration_id", "calibration.id", "CASCADE"),
    _fk("report_id", "report.id", "CASCADE"),
    sa.PrimaryKeyConstraint("calibration_id", "report_id"),
)

# A bisection (docs/how-to/bisect.md): which commit between a good and a bad version changed a
# benchmark, found by duets of candidates against the good version. ``state``: running, done
# or canceled; ``alert_id`` the alert it was started from, if any; a done one names its
# ``culprit`` (with the ratio and interval of its duet against its parent) or says in
# ``reason`` why it names none. ``followed`` is the benchmark whose ratio ``bad_ratio`` the
# search places candidates by. ``benchmarks`` and ``args`` are JSON; ``args`` (template
# bisections) hold ``{commit}`` placeholders, as ``image`` does.
bisection = sa.Table(
    "bisection",
    metadata,
    _id(),
    _uuid(),
    _fk("project_id", "project.id", "CASCADE"),
    _fk("spec_id", "spec.id", "RESTRICT"),
    _fk("user_id", "user.id", "SET NULL", nullable=True),
    _fk("branch_id", "branch.id", "CASCADE"),
    _fk("testbed_id", "testbed.id", "CASCADE"),
    _fk("alert_id", "alert.id", "SET NULL", nullable=True),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("measure", sa.String(255), nullable=False),
    sa.Column("benchmarks", sa.Text, nullable=False),
    sa.Column("adapter", sa.String(32), nullable=False),
    sa.Column("good", sa.String(64), nullable=False),
    sa.Column("bad", sa.String(64), nullable=False),
    sa.Column("image", sa.String(512), nullable=True),
    sa.Column("template", sa.String(255), nullable=True),
    sa.Column("args", sa.Text, nullable=True),
    sa.Column("timeout", sa.Integer, nullable=False),
    sa.Column("rounds", sa.Integer, nullable=False),
    sa.Column("margin", sa.Float, nullable=False),
    sa.Column("confidence", sa.Float, nullable=False),
    sa.Column("job_budget", sa.Integer, nullable=False),
    sa.Column("jobs_used", sa.Integer, nullable=False),
    sa.Column("followed", sa.String(1024), nullable=True),
    sa.Column("bad_ratio", sa.Float, nullable=True),
    sa.Column("culprit", sa.String(64), nullable=True),
    sa.Column("culprit_parent", sa.String(64), nullable=True),
    sa.Column("culprit_ratio", sa.Float, nullable=True),
    sa.Column("culprit_lower", sa.Float, nullable=True),
    sa.Column("culprit_upper", sa.Float, nullable=True),
    sa.Column("reason", sa.Text, nullable=True),
    sa.Column("source_ip", sa.String(45), nullable=False),
    sa.Column("actor", sa.String(320), nullable=False),
    _ts("created"),
    _ts("modified"),
    _ts("finished", nullable=True),
    sa.Index("index_bisection_project_created", "project_id", "created"),
    sa.Index("index_bisection_state", "state"),
    sa.Index("index_bisection_alert", "alert_id"),
)

# A bisection's versions in order: the good one at position -1, then its candidates (the bad
# one last), each with the image digest its tag named at submission (image bisections; NULL:
# no image, the commit is skipped).
bisection_commit = sa.Table(
    "bisection_commit",
    metadata,
    _id(),
    _fk("bisection_id", "bisection.id", "CASCADE"),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("commit", sa.String(64), nullable=False),
    sa.Column("digest", sa.String(128), nullable=True),
    sa.UniqueConstraint("bisection_id", "position", name="uq_bisection_commit_position"),
)

# One duet question of a bisection: ``check`` (bad against good), ``search`` (a candidate
# against good) or ``confirm`` (the first bad commit against its parent). ``status``: running,
# done or skipped; a done step's ``verdict`` (same, different or unknown) and the ratio of its
# latest duet (the first benchmark's) with its interval.
bisection_step = sa.Table(
    "bisection_step",
    metadata,
    _id(),
    _fk("bisection_id", "bisection.id", "CASCADE"),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("commit", sa.String(64), nullable=False),
    sa.Column("baseline", sa.String(64), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("verdict", sa.String(16), nullable=True),
    sa.Column("rounds", sa.Integer, nullable=False),
    sa.Column("ratio", sa.Float, nullable=True),
    sa.Column("lower_value", sa.Float, nullable=True),
    sa.Column("upper_value", sa.Float, nullable=True),
    sa.Column("reason", sa.Text, nullable=True),
    _ts("created"),
    _ts("modified"),
    sa.UniqueConstraint("bisection_id", "kind", "position", name="uq_bisection_step_kind"),
)

# The duet jobs a step ran, oldest first (one more each time its verdict stayed unknown).
bisection_job = sa.Table(
    "bisection_job",
    metadata,
    _id(),
    _fk("step_id", "bisection_step.id", "CASCADE"),
    _fk("job_id", "job.id", "CASCADE"),
    sa.UniqueConstraint("job_id", name="uq_bisection_job_job"),
    sa.Index("index_bisection_job_step", "step_id"),
)

# A runner job's report whose metric crossed a threshold with ``confirm`` runs: the re-runs it
# queues (their reports name it in ``confirms_report_id``) and, once they are all finished, the
# decision on its pending alerts. ``state``: waiting (runs not yet queued), running, decided.
confirmation = sa.Table(
    "confirmation",
    metadata,
    _id(),
    _fk("report_id", "report.id", "CASCADE"),
    _fk("job_id", "job.id", "CASCADE"),
    sa.Column("runs", sa.Integer, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    _ts("created"),
    _ts("decided", nullable=True),
    sa.UniqueConstraint("report_id", name="uq_confirmation_report_id"),
    sa.Index("index_confirmation_state", "state"),
)
