"""``benchrunner server``: run the API server in the foreground."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from pydantic import ValidationError

    from benchrunner.server.config import ServerSettings


def settings_from(given: dict[str, Any]) -> ServerSettings:
    """ServerSettings from the flags that were given; the rest come from ``BENCHRUNNER_*`` or
    defaults. Raises ``ValueError`` with every invalid setting on one line.
    """
    from pydantic import ValidationError

    from benchrunner.server.config import ServerSettings

    try:
        return ServerSettings(**{k: v for k, v in given.items() if v is not None})
    except ValidationError as exc:
        raise ValueError(f"invalid server settings: {_describe(exc)}") from None


def _describe(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())


def server(
    host: Annotated[
        str | None,
        typer.Option(help="Interface to listen on [default: 127.0.0.1].", show_default=False),
    ] = None,
    port: Annotated[
        int | None, typer.Option(help="Port to listen on [default: 8080].", show_default=False)
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            help="SQLAlchemy URL (sqlite:///... or postgresql://...) "
            "[default: sqlite in the data dir].",
            show_default=False,
        ),
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            help="The default SQLite file and blob directory [default: .benchrunner].",
            show_default=False,
        ),
    ] = None,
    blob_store: Annotated[
        str | None,
        typer.Option(
            metavar="LOCATION",
            help="Where blobs live: s3://BUCKET/PREFIX (endpoint, region and credentials from "
            "the AWS_* variables or the AWS config files) or a directory "
            "[default: DATA_DIR/blobs].",
            show_default=False,
        ),
    ] = None,
    templates: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="TOML file of approved templates.", show_default=False),
    ] = None,
    heartbeat_timeout: Annotated[
        float | None,
        typer.Option(
            metavar="SECONDS",
            help="Fail a job whose runner is silent this long [default: 90].",
            show_default=False,
        ),
    ] = None,
    job_timeout_grace: Annotated[
        float | None,
        typer.Option(
            metavar="SECONDS",
            help="Cancel a job this long after its timeout [default: 60].",
            show_default=False,
        ),
    ] = None,
    sweep_interval: Annotated[
        float | None,
        typer.Option(
            metavar="SECONDS",
            help="How often the sweeper looks for jobs whose heartbeats stopped [default: 10].",
            show_default=False,
        ),
    ] = None,
    claim_poll_interval: Annotated[
        float | None,
        typer.Option(
            metavar="SECONDS",
            help="Safety net: waiting runners look for jobs this often even without a "
            "wake-up [default: 5].",
            show_default=False,
        ),
    ] = None,
    request_body_max_bytes: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            help="Largest request body or channel message [default: 16 MiB].",
            show_default=False,
        ),
    ] = None,
    request_read_timeout: Annotated[
        float | None,
        typer.Option(
            metavar="SECONDS",
            help="Answer 408 and close a connection whose request headers have not all arrived "
            "this long after it opened or the request began; a body may take longer only "
            "while it keeps coming [default: 30].",
            show_default=False,
        ),
    ] = None,
    max_connections: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            help="Open connections beyond which the one waiting longest for a request is "
            "closed [default: half of ulimit -n].",
            show_default=False,
        ),
    ] = None,
    public_url: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            help="URL runners and clients use to reach this server.",
            show_default=False,
        ),
    ] = None,
    max_queued_jobs: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            min=0,
            help="Refuse submissions (429) while N jobs are pending or in flight; 0: no cap "
            "[default: 10000].",
            show_default=False,
        ),
    ] = None,
    max_pending_per_organization: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            min=0,
            help="Refuse an organization's submissions (429) while N of its jobs are pending; "
            "0: no cap [default: 1000].",
            show_default=False,
        ),
    ] = None,
    retention_days: Annotated[
        float | None,
        typer.Option(
            metavar="DAYS",
            help="Delete the stored outputs of terminal jobs older than this; 0 deletes them "
            "at the next sweep [default: 30].",
            show_default=False,
        ),
    ] = None,
    retention_keep: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            help="Always keep the outputs of the newest N terminal jobs [default: 100].",
            show_default=False,
        ),
    ] = None,
    retention_interval: Annotated[
        float | None,
        typer.Option(
            metavar="SECONDS",
            help="How often retention and registry garbage collection run, on the sweeper's "
            "leader [default: 3600].",
            show_default=False,
        ),
    ] = None,
    registry_gc_grace: Annotated[
        float | None,
        typer.Option(
            metavar="SECONDS",
            help="Leave a registry blob pushed or linked this recently to garbage collection's "
            "next rounds, so a push in progress keeps it [default: 3600].",
            show_default=False,
        ),
    ] = None,
    replica_name: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="This replica's replica label in /metrics and the health answer "
            "[default: host:port].",
            show_default=False,
        ),
    ] = None,
    log_level: Annotated[
        str | None,
        typer.Option(
            metavar="LEVEL",
            help="debug, info, warning or error [default: info].",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run the server until SIGINT or SIGTERM.

    Every flag may also be set as `BENCHRUNNER_<FLAG>` (e.g. `BENCHRUNNER_DB`); flags win.
    `BENCHRUNNER_SECRET_KEY`, `BENCHRUNNER_OCI_TOKEN_TTL`, `BENCHRUNNER_ANONYMOUS_RUNS`,
    `BENCHRUNNER_REGISTRY_TOKEN_TTL`, `BENCHRUNNER_REGISTRY_MAX_BODY_BYTES` (largest blob
    upload, default 1 GiB), `BENCHRUNNER_REQUEST_BODY_MIN_RATE` (bytes a second a request
    body must keep up, default 16384), `BENCHRUNNER_BUSY_RETRY_AFTER` (the `Retry-After` of a
    submission refused by a cap, default 10 s) and `BENCHRUNNER_IDEMPOTENCY_WINDOW` (seconds
    an `Idempotency-Key` is kept, default 300) exist only as environment variables.
    """
    settings = settings_from(
        {
            "host": host,
            "port": port,
            "db": db,
            "data_dir": data_dir,
            "blob_store": blob_store,
            "templates": templates,
            "heartbeat_timeout": heartbeat_timeout,
            "job_timeout_grace": job_timeout_grace,
            "sweep_interval": sweep_interval,
            "claim_poll_interval": claim_poll_interval,
            "request_body_max_bytes": request_body_max_bytes,
            "request_read_timeout": request_read_timeout,
            "max_connections": max_connections,
            "public_url": public_url,
            "max_queued_jobs": max_queued_jobs,
            "max_pending_per_organization": max_pending_per_organization,
            "retention_days": retention_days,
            "retention_keep": retention_keep,
            "retention_interval": retention_interval,
            "registry_gc_grace": registry_gc_grace,
            "replica_name": replica_name,
            "log_level": log_level,
        }
    )
    from benchrunner.server.app.factory import serve
    from benchrunner.server.store.migrate import SchemaTooNew

    try:
        serve(settings)
    except SchemaTooNew as exc:  # an operator's error, told on one line without a traceback
        raise ValueError(str(exc)) from None
