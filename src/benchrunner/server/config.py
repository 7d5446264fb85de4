"""Server settings: flags of ``benchrunner server`` or ``BENCHRUNNER_*`` environment variables."""

from __future__ import annotations

import socket
from pathlib import Path

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class ServerSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="BENCHRUNNER_", extra="ignore", populate_by_name=True
    )

    # Not BENCHRUNNER_HOST: for every client command that names the server's URL.
    host: str = Field(
        default="127.0.0.1",
        validation_alias="BENCHRUNNER_LISTEN_HOST",
        description="interface the server listens on; 0.0.0.0 for every one",
    )
    port: int = Field(default=8080, ge=0, le=65535, description="TCP port it listens on")
    db: str = Field(default="", description="SQLAlchemy URL or SQLite file; default data-dir")
    data_dir: Path = Field(
        default=Path(".benchrunner"),
        description="directory of the default SQLite file and of blobs (outputs, image layers)",
    )
    blob_store: str | None = Field(
        default=None,
        description="s3://BUCKET/PREFIX (object storage) or a directory; default data-dir/blobs",
    )
    templates: Path | None = Field(default=None, description="the approved templates file (TOML)")
    public_url: str | None = Field(
        default=None, description="URL runners and clients use to reach this server"
    )
    heartbeat_timeout: float = Field(
        default=90.0, gt=0, description="silence (seconds) that fails an in-flight job"
    )
    job_timeout_grace: float = Field(
        default=60.0,
        ge=0,
        description="added to a job's timeout for its hard timeout (seconds)",
    )
    claim_poll_interval: float = Field(
        default=5.0, gt=0, description="safety-net poll of waiting claims, between wake-ups"
    )
    sweep_interval: float = Field(
        default=10.0, gt=0, description="seconds between the sweeper's checks of stale jobs"
    )
    request_body_max_bytes: int = Field(
        default=16 * 1024 * 1024, ge=1024, description="largest request body accepted (413 above)"
    )
    request_read_timeout: float = Field(
        default=30.0, gt=0, description="seconds to send a request's headers (and body, at least)"
    )
    request_body_min_rate: int = Field(
        default=16 * 1024, ge=1, description="bytes/s a body must keep up past the read timeout"
    )
    max_connections: int | None = Field(
        default=None, ge=1, description="open connections; default half of the open-file limit"
    )
    oci_token_ttl: int = Field(default=600, ge=60, description="runner OCI pull token TTL, s")
    registry_token_ttl: int = Field(
        default=300, ge=60, description="TTL of registry tokens issued to users, s"
    )
    processing_batch_bytes: int | None = Field(
        default=None,
        ge=1024,
        description="bytes of job outputs read and parsed together; a larger output is "
        "refused with an error on its report; default 4 x request_body_max_bytes",
    )
    registry_max_body_bytes: int = Field(
        default=1024 * 1024 * 1024, ge=1024, description="largest blob upload to /v2/"
    )
    registry_upload_ttl: int = Field(
        default=900, ge=1, description="idle seconds after which a blob upload session expires"
    )
    registry_uploads_per_repository: int = Field(
        default=64, ge=1, description="open blob upload sessions a repository may have"
    )
    registry_uploads_per_user: int = Field(
        default=16, ge=1, description="open blob upload sessions one user may have"
    )
    secret_key: str | None = Field(
        default=None,
        description="signing key of tokens and upload locations; if unset, generated once and "
        "kept in the database, which every replica reads it from",
    )
    anonymous_runs: bool = Field(
        default=True, description="let unauthenticated POST /v0/run create unclaimed projects"
    )
    anonymous_projects_per_hour: int = Field(
        default=20,
        ge=0,
        description="unclaimed projects anonymous runs from one source address may create per "
        "hour (each replica counts its own) before 429; 0: no limit",
    )
    max_queued_jobs: int = Field(
        default=10_000,
        ge=0,
        description="pending plus in-flight jobs of the whole server beyond which a submission "
        "is refused with 429; 0: no cap",
    )
    max_pending_per_organization: int = Field(
        default=1_000,
        ge=0,
        description="pending jobs of one organization beyond which its submissions are refused "
        "with 429; 0: no cap",
    )
    busy_retry_after: int = Field(
        default=10, ge=1, description="Retry-After seconds of a submission refused by a cap"
    )
    runner_claims_per_minute: int = Field(
        default=120,
        ge=0,
        description="claim requests (POST /v0/runners/{runner}/jobs) one runner may make per "
        "minute before 429; 0: no limit",
    )
    idempotency_window: float = Field(
        default=300.0,
        gt=0,
        description="seconds an Idempotency-Key of POST /v0/run stands for its first submission",
    )
    lookups_cache_ttl: float = Field(
        default=60.0,
        ge=0,
        description="seconds a cached lookup (token, project, spec...) is kept at most; "
        "0 caches nothing",
    )
    lookups_cache_entries: int = Field(
        default=10_000, ge=1, description="cached lookups kept, the least recently used dropped"
    )
    replica_name: str | None = Field(
        default=None,
        description="this replica's name in the replica label of /metrics; default host:port",
    )
    retention_days: float = Field(
        default=30.0, ge=0, description="days after which a terminal job's outputs are deleted"
    )
    retention_keep: int = Field(
        default=100, ge=0, description="newest terminal jobs whose outputs are always kept"
    )
    retention_interval: float = Field(
        default=3600.0,
        gt=0,
        description="seconds between retention sweeps (outputs, registry garbage collection)",
    )
    registry_gc_grace: float = Field(
        default=3600.0,
        ge=0,
        description="seconds a registry blob is safe from garbage collection after it was "
        "pushed or linked, so that a push in progress can still name it in its manifest",
    )
    job_log_max_bytes: int = Field(
        default=8 * 1024 * 1024,
        ge=65536,
        description="bytes of each stream (stdout, stderr) of a job's live log kept; "
        "the rest is dropped with a marker (the job's output is kept whole, as before)",
    )
    webhook_allow_private: bool = Field(
        default=False,
        description="let webhooks send to loopback, private and link-local addresses "
        "(off: a project member could make the server reach its own network)",
    )
    webhook_timeout: float = Field(default=10.0, gt=0, description="seconds of one webhook POST")
    webhook_poll_interval: float = Field(
        default=2.0, gt=0, description="seconds between polls of the webhook outbox"
    )
    webhook_backoff: float = Field(
        default=10.0,
        gt=0,
        description="seconds before a failed webhook delivery's first retry; doubled each "
        "attempt, with jitter",
    )
    webhook_backoff_max: float = Field(
        default=3600.0, gt=0, description="longest pause between a webhook delivery's attempts, s"
    )
    webhook_max_attempts: int = Field(
        default=12, ge=1, description="attempts of a webhook delivery before it is failed"
    )
    webhook_max_age: float = Field(
        default=86400.0, gt=0, description="seconds after its event a delivery is no longer retried"
    )
    log_level: str = Field(
        default="info", description="debug, info, warning or error: the least severe line logged"
    )

    @field_validator("blob_store")
    @classmethod
    def _blob_store_opens(cls, value: str | None) -> str | None:
        from benchrunner.server.blobs.location import check_location

        check_location(value)
        return value or None

    @model_validator(mode="after")
    def _outputs_fit_a_batch(self) -> ServerSettings:
        if self.processing_batch_bytes is not None and (
            self.processing_batch_bytes < self.request_body_max_bytes
        ):
            raise ValueError(
                "processing_batch_bytes must be at least request_body_max_bytes: "
                "a job output as large as the largest message must still be processed"
            )
        return self

    def processing_budget(self) -> int:
        """Bytes of job outputs one processing batch reads and parses at most."""
        return self.processing_batch_bytes or 4 * self.request_body_max_bytes

    def replica(self) -> str:
        return self.replica_name or f"{socket.gethostname()}:{self.port}"

    def database_url(self) -> str:
        return self.db or f"sqlite:///{(self.data_dir / 'benchrunner.db').resolve()}"

    def base_url(self) -> str:
        return self.public_url or f"http://{self.host}:{self.port}"
