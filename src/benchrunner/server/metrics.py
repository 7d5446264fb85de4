"""The server's Prometheus metrics, one registry per server process.

Counters and histograms are incremented in memory where things happen (claims, transitions,
requests, retention, registry garbage collection): no database round trip on a hot path. Gauges
that describe shared state (queue depth, heartbeat lag) are read from the database when
``/metrics`` is scraped, never kept up to date in between.

Every sample carries a ``replica`` label (``--replica-name``), added at scrape time, so that the
series of several replicas behind one load balancer never merge, even when a scraper does not
add its own ``instance`` label.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from benchrunner.core.states import JobStatus
from benchrunner.core.tiers import Tier

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
QUEUE_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 24 * 3600)
REQUEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
QUEUED_STATUSES = (JobStatus.PENDING, JobStatus.CLAIMED, JobStatus.RUNNING, JobStatus.COMPLETED)


class _WithReplica(Collector):
    """The metrics of ``inner``, each sample labelled with the replica's name."""

    def __init__(self, inner: CollectorRegistry, replica: str) -> None:
        self._inner = inner
        self._replica = replica

    def collect(self) -> Iterator[Metric]:
        for metric in self._inner.collect():
            metric.samples = [
                sample._replace(labels={**sample.labels, "replica": self._replica})
                for sample in metric.samples
            ]
            yield metric


class _Commits(Collector):
    """The database's counts of grouped commits and of the WAL flushes made for them."""

    def __init__(self) -> None:
        self.grouped_commits: Callable[[], int] = lambda: 0
        self.wal_flushes: Callable[[], int] = lambda: 0

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily(
            "benchrunner_db_grouped_commits",
            "PostgreSQL commits made without waiting for the disk and made durable before their"
            " acknowledgement by a flush they shared or a durable commit after them",
            value=self.grouped_commits(),
        )
        yield CounterMetricFamily(
            "benchrunner_db_wal_flushes",
            "Durable commits made only to flush the WAL past commits that did not wait",
            value=self.wal_flushes(),
        )


class ServerMetrics:
    def __init__(self, replica: str) -> None:
        self.replica = replica
        self.registry = CollectorRegistry(auto_describe=True)
        self._exposed = CollectorRegistry(auto_describe=False)
        self._exposed.register(_WithReplica(self.registry, replica))
        r = self.registry
        self.jobs = Gauge(
            "benchrunner_jobs",
            "Jobs waiting or in flight by status and tier, read at scrape time",
            ["status", "tier"],
            registry=r,
        )
        self.queue_duration = Histogram(
            "benchrunner_job_queue_duration_seconds",
            "Seconds from a job's creation to its claim, by tier",
            ["tier"],
            buckets=QUEUE_BUCKETS,
            registry=r,
        )
        self.claims = Counter(
            "benchrunner_job_claims",
            "Jobs claimed by runners of this replica",
            ["tier"],
            registry=r,
        )
        self.transitions = Counter(
            "benchrunner_job_transitions",
            "Job status changes made by this replica",
            ["status_from", "status_to"],
            registry=r,
        )
        self.starts = Counter(
            "benchrunner_job_starts", "Jobs whose runner started them", registry=r
        )
        self.failures = Counter("benchrunner_job_failures", "Jobs that failed", registry=r)
        self.timeouts = Counter(
            "benchrunner_job_timeouts",
            "Jobs ended by the hard job timeout or the heartbeat timeout",
            ["kind"],
            registry=r,
        )
        self.cancellations = Counter(
            "benchrunner_job_cancellations",
            "Jobs canceled, by a user, a runner or a timeout",
            registry=r,
        )
        self.database_up = Gauge(
            "benchrunner_database_up",
            "1 when the last scrape reached the database, else 0",
            registry=r,
        )
        self.connected_runners = Gauge(
            "benchrunner_connected_runners", "Runner channels open on this replica", registry=r
        )
        self.heartbeat_lag = Gauge(
            "benchrunner_heartbeat_lag_seconds",
            "Age of the oldest stored heartbeat among jobs in flight (0 when none)",
            registry=r,
        )
        self.sweeper_leader = Gauge(
            "benchrunner_sweeper_leader",
            "1 when this replica leads the sweeper, retention and registry garbage collection",
            registry=r,
        )
        self.requests = Histogram(
            "benchrunner_http_request_duration_seconds",
            "HTTP request latency by route template",
            ["method", "route", "status"],
            buckets=REQUEST_BUCKETS,
            registry=r,
        )
        self.housekeeping_rounds = Counter(
            "benchrunner_housekeeping_rounds",
            "Rounds of retention and registry garbage collection this replica ran",
            registry=r,
        )
        self.retention_jobs = Counter(
            "benchrunner_retention_purged_jobs",
            "Terminal jobs whose stored outputs retention deleted",
            registry=r,
        )
        self.retention_bytes = Counter(
            "benchrunner_retention_purged_bytes",
            "Bytes of job outputs retention deleted",
            registry=r,
        )
        self.registry_links = Counter(
            "benchrunner_registry_gc_blob_links_removed",
            "Repository links to blobs no manifest references, removed",
            registry=r,
        )
        self.registry_blobs = Counter(
            "benchrunner_registry_gc_blobs_removed",
            "Blobs no repository holds, whose bytes were removed",
            registry=r,
        )
        self.registry_bytes = Counter(
            "benchrunner_registry_gc_bytes_removed", "Bytes of registry blobs removed", registry=r
        )
        self._commits = _Commits()
        r.register(self._commits)
        # Children by label value, looked up once: ``labels()`` costs more than the increment,
        # and every job moves four times. Every tier's series exists from the start, at 0.
        self.queue_duration_of = {
            tier: self.queue_duration.labels(tier=tier.value) for tier in Tier
        }
        self.claims_of = {tier: self.claims.labels(tier=tier.value) for tier in Tier}
        self._transitions_of: dict[tuple[JobStatus, JobStatus], Counter] = {}

    def watch(self, grouped_commits: Callable[[], int], wal_flushes: Callable[[], int]) -> None:
        """Read the database's commit counts at each scrape (``Database.grouped_commits`` and
        ``wal_flushes``)."""
        self._commits.grouped_commits = grouped_commits
        self._commits.wal_flushes = wal_flushes

    def transition(self, source: JobStatus, to: JobStatus) -> Counter:
        """The ``benchrunner_job_transitions`` series of a move from ``source`` to ``to``."""
        child = self._transitions_of.get((source, to))
        if child is None:
            child = self.transitions.labels(status_from=source.wire, status_to=to.wire)
            self._transitions_of[source, to] = child
        return child

    def set_queue_depth(self, depth: Mapping[tuple[JobStatus, Tier], int]) -> None:
        for status in QUEUED_STATUSES:
            for tier in Tier:
                self.jobs.labels(status=status.wire, tier=tier.value).set(
                    depth.get((status, tier), 0)
                )

    def exposition(self) -> bytes:
        return generate_latest(self._exposed)
