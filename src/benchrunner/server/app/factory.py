"""The FastAPI application and the process that serves it."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import socket
from collections.abc import AsyncIterator, Awaitable

import uvicorn
from fastapi import FastAPI

from benchrunner import __version__
from benchrunner.core.clock import Clock, MonotonicClock, SystemClock, SystemMonotonicClock
from benchrunner.core.templates import TemplateRegistry
from benchrunner.server import console
from benchrunner.server.app import api_docs, openapi, wiring
from benchrunner.server.app.connections import (
    ConnectionLimits,
    default_max_connections,
    protocol_class,
)
from benchrunner.server.app.request_metrics import RequestMetrics
from benchrunner.server.app.websocket_protocol import LingeringCloseProtocol
from benchrunner.server.blobs.identity import check_blob_store
from benchrunner.server.blobs.location import open_blob_store
from benchrunner.server.channel.runner_channel import ChannelHub
from benchrunner.server.config import ServerSettings
from benchrunner.server.context import ServerContext
from benchrunner.server.http import errors
from benchrunner.server.http.limits import BodyLimit
from benchrunner.server.logs import server_log as logs
from benchrunner.server.metrics import ServerMetrics
from benchrunner.server.registry import (
    blob_routes,
    manifest_routes,
    token_routes,
    upload_routes,
)
from benchrunner.server.registry import errors as registry_errors
from benchrunner.server.routes import (
    alerts,
    baselines,
    benchmarks,
    bisections,
    branches,
    calibrations,
    channel,
    job_logs,
    jobs,
    measures,
    members,
    organization_runners,
    organizations,
    perf,
    releases,
    reports,
    run,
    runner_jobs,
    runners,
    server,
    specs,
    testbeds,
    thresholds,
    users,
    webhooks,
)
from benchrunner.server.routes.run_fast_path import RunFastPath
from benchrunner.server.routes.runner_jobs import claim_window
from benchrunner.server.secret_key import load_secret_key
from benchrunner.server.services import Services
from benchrunner.server.store.engine import Database, make_engine
from benchrunner.server.store.migrate import upgrade
from benchrunner.server.store.planner import refresh_statistics

log = logging.getLogger(__name__)


def build_context(
    settings: ServerSettings,
    clock: Clock | None = None,
    monotonic: MonotonicClock | None = None,
    metrics: ServerMetrics | None = None,
) -> ServerContext:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    db = Database(
        settings.database_url(),
        lookups_ttl=settings.lookups_cache_ttl,
        lookups_entries=settings.lookups_cache_entries,
    )
    upgrade(db.write_engine)
    with db.write_engine.begin() as conn:
        refresh_statistics(conn)
    templates = (
        TemplateRegistry.load(settings.templates)
        if settings.templates
        else TemplateRegistry.empty()
    )
    clock = clock or SystemClock()
    blobs = open_blob_store(settings.blob_store, settings.data_dir)
    check_blob_store(db.write_engine, blobs, clock.now())
    return ServerContext(
        settings=settings,
        db=db,
        blobs=blobs,
        templates=templates,
        clock=clock,
        secret_key=load_secret_key(
            db.write_engine, settings.data_dir, settings.secret_key, clock.now()
        ),
        monotonic=monotonic or SystemMonotonicClock(),
        metrics=metrics or ServerMetrics(settings.replica()),
    )


SHUTDOWN_STEP_TIMEOUT = 10.0


async def _shutdown_step(name: str, step: Awaitable[None]) -> None:
    try:
        async with asyncio.timeout(SHUTDOWN_STEP_TIMEOUT):
            await step
    except TimeoutError:
        log.error("shutdown: %s took over %.0f s; going on without it", name, SHUTDOWN_STEP_TIMEOUT)


def create_app(
    settings: ServerSettings, clock: Clock | None = None, monotonic: MonotonicClock | None = None
) -> FastAPI:
    """The application; ``clock`` and ``monotonic`` replace the system's time (tests)."""
    metrics = ServerMetrics(settings.replica())

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        ctx = build_context(settings, clock, monotonic, metrics)
        services = wiring.build(ctx)
        hub = ChannelHub()
        app.state.ctx, app.state.services, app.state.hub = ctx, services, hub
        app.state.lifecycle = services.lifecycle
        app.state.claim_window = claim_window(settings.runner_claims_per_minute)
        await wiring.start(services)
        log.info("benchrunner server %s ready on %s", __version__, settings.base_url())
        try:
            yield
        finally:
            # Each step is bounded: a stuck one is logged by name, and the server still exits.
            await _shutdown_step("closing runner channels", hub.close_all())
            await _shutdown_step("stopping background tasks", wiring.stop(services))
            ctx.db.close()

    app = FastAPI(
        title="benchrunner",
        version=__version__,
        lifespan=lifespan,
        description="Continuous benchmarking on dedicated runners. Bencher-compatible /v0 API.",
        docs_url=None,  # api_docs serves it from our own files
        redoc_url=None,
    )
    errors.install(app)
    registry_errors.install(app)
    api = [
        m.router
        for m in (
            organizations,
            members,
            users,
            specs,
            runners,
            releases,
            organization_runners,
            jobs,
            job_logs,
            reports,
            branches,
            testbeds,
            benchmarks,
            measures,
            thresholds,
            alerts,
            calibrations,
            webhooks,
            bisections,
            baselines,
            perf,
            run,
            server,
            channel,
            runner_jobs,
            token_routes,
        )
    ]
    # A request is matched against the included routers in order, each scanning its routes:
    # the hot submission route goes first (only its router has /v0/run, so no match moves;
    # the OpenAPI document keeps ``api``'s order).
    app.include_router(run.router)
    for router in api:
        if router is not run.router:
            app.include_router(router)
    for registry_module in (blob_routes, upload_routes, manifest_routes):
        app.include_router(registry_module.router)
    app.include_router(server.metrics_router)
    openapi.install(app, api)
    api_docs.install(app)
    console.install(app)
    app.add_middleware(RunFastPath)  # inside BodyLimit: the body it reads is bounded
    app.add_middleware(BodyLimit, max_bytes=settings.request_body_max_bytes, exempt=("/v2/",))
    app.add_middleware(RequestMetrics, metrics=metrics)  # outermost: its time covers the rest
    return app


class BenchrunnerServer(uvicorn.Server):
    """uvicorn's server, which stops claiming jobs before it closes the connections: a claim
    under way then reaches its runner over a channel still open (the runner reports it through
    another replica), and no claim lands for a channel that the shutdown already closed.

    Its main loop wakes once a second (the ``Date`` header's resolution) and when asked to
    exit, not ten times a second to look whether it was: an idle server's loop sleeps."""

    _exiting = False
    _exit_asked: asyncio.Event | None = None
    _loop: asyncio.AbstractEventLoop | None = None

    @property
    def should_exit(self) -> bool:
        return self._exiting

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        """Set by a signal handler, or by another thread (tests): wakes the main loop."""
        self._exiting = value
        if value and self._loop is not None and self._exit_asked is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nothing to wake
                self._loop.call_soon_threadsafe(self._exit_asked.set)

    async def main_loop(self) -> None:
        self._loop, self._exit_asked = asyncio.get_running_loop(), asyncio.Event()
        while not await self.on_tick(0):  # counter 0: the Date header is refreshed
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(DATE_HEADER_PERIOD):
                    await self._exit_asked.wait()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        app = self.config.app
        services: Services | None = getattr(getattr(app, "state", None), "services", None)
        if services is not None:
            await _shutdown_step("stopping claims", wiring.stop_claiming(services))
        await super().shutdown(sockets)


DATE_HEADER_PERIOD = 1.0
"""Seconds between the main loop's ticks: the ``Date`` header's resolution, as in uvicorn."""


def migrate_before_listening(settings: ServerSettings) -> None:
    """Bring the database to this version's schema before the server binds its port, so that a
    refusal (``SchemaTooNew``: a newer benchrunner migrated it) ends the process with its reason
    rather than as a failed application startup with a traceback. The lifespan's own migration
    then finds nothing to do."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    engine = make_engine(settings.database_url(), pool_size=1)
    try:
        upgrade(engine)
    finally:
        engine.dispose()


def serve(settings: ServerSettings) -> None:
    """Run the server until SIGINT/SIGTERM; channels are closed with 1012 on the way out.
    ``SchemaTooNew`` when the database's schema is newer than this version knows."""
    logs.configure(settings.log_level)
    migrate_before_listening(settings)
    limits = ConnectionLimits(
        read_timeout=settings.request_read_timeout,
        body_min_rate=settings.request_body_min_rate,
        max_connections=settings.max_connections or default_max_connections(),
    )
    config = uvicorn.Config(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        http=protocol_class(limits),
        # No use queueing more handshakes than the connections we would keep open.
        backlog=min(2048, limits.max_connections),
        ws=LingeringCloseProtocol,
        ws_max_size=settings.request_body_max_bytes,
        ws_per_message_deflate=False,  # small JSON messages: deflate costs more than it saves
        ws_ping_interval=20.0,
        ws_ping_timeout=20.0,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=5,
    )
    freeze_startup_heap()
    BenchrunnerServer(config).run()


def freeze_startup_heap() -> None:
    """Put everything that exists now (modules, the app, its routes and models), which lives as
    long as the process, out of the collector's sight: a full collection walks only what
    requests allocate. Unfrozen, those objects made each full collection of a report's
    processing take 130-180 ms on the benchmarks' machine (benchmarks/RESULTS.md, "Reports at
    scale"). The judgment's statistics are frozen when it first loads them
    (``processing.statistics_heap``)."""
    gc.collect()  # start-up's garbage, frozen otherwise for the life of the process
    gc.freeze()
