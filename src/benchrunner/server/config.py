"""Server settings: flags of ``benchrunner server`` or ``BENCHRUNNER_*`` environment variables."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ServerSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="BENCHRUNNER_", extra="ignore", populate_by_name=True
    )

    # Not BENCHRUNNER_HOST: for every client command that names the server's URL.
    host: str = Field(default="127.0.0.1", validation_alias="BENCHRUNNER_LISTEN_HOST")
    port: int = Field(default=8080, ge=0, le=65535)
    db: str = Field(default="", description="SQLAlchemy URL or SQLite file; default data-dir")
    data_dir: Path = Path(".benchrunner")
    templates: Path | None = None
    public_url: str | None = Field(
        default=None, description="URL runners and clients use to reach this server"
    )
    heartbeat_timeout: float = Field(default=90.0, gt=0)
    job_timeout_grace: float = Field(default=60.0, ge=0)
    claim_poll_interval: float = Field(
        default=5.0, gt=0, description="safety-net poll of waiting claims, between wake-ups"
    )
    sweep_interval: float = Field(
        default=10.0, gt=0, description="seconds between the sweeper's checks of stale jobs"
    )
    request_body_max_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
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
    registry_max_body_bytes: int = Field(
        default=1024 * 1024 * 1024, ge=1024, description="largest blob upload to /v2/"
    )
    secret_key: str | None = Field(
        default=None, description="JWT signing key; generated into data-dir if unset"
    )
    anonymous_runs: bool = Field(
        default=True, description="let unauthenticated POST /v0/run create unclaimed projects"
    )
    log_level: str = "info"

    def database_url(self) -> str:
        return self.db or f"sqlite:///{(self.data_dir / 'benchrunner.db').resolve()}"

    def base_url(self) -> str:
        return self.public_url or f"http://{self.host}:{self.port}"
