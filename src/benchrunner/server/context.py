"""Everything a request handler or a channel session needs, built once per server process."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from benchrunner.core.clock import Clock, MonotonicClock, SystemMonotonicClock
from benchrunner.core.templates import TemplateRegistry
from benchrunner.server.blobs.blob_store import BlobStore
from benchrunner.server.config import ServerSettings
from benchrunner.server.logs.log_index import LogIndex
from benchrunner.server.logs.log_watch import LogWatch
from benchrunner.server.metrics import ServerMetrics
from benchrunner.server.store.engine import Database
from benchrunner.server.submission.creation_rate import CreationRate


@dataclass
class ServerContext:
    settings: ServerSettings
    db: Database
    blobs: BlobStore
    templates: TemplateRegistry
    clock: Clock
    secret_key: str
    monotonic: MonotonicClock = field(default_factory=SystemMonotonicClock)
    metrics: ServerMetrics = field(default_factory=lambda: ServerMetrics("local"))
    log_watch: LogWatch = field(default_factory=LogWatch)
    log_index: LogIndex = field(default_factory=LogIndex)
    anonymous_creations: CreationRate = field(init=False)

    def __post_init__(self) -> None:
        self.anonymous_creations = CreationRate(self.settings.anonymous_projects_per_hour)
        db = self.db
        self.metrics.watch(lambda: db.grouped_commits, lambda: db.wal_flushes)

    @property
    def heartbeat_timeout(self) -> dt.timedelta:
        return dt.timedelta(seconds=self.settings.heartbeat_timeout)

    @property
    def job_timeout_grace(self) -> dt.timedelta:
        return dt.timedelta(seconds=self.settings.job_timeout_grace)
