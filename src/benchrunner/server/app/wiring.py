"""The wiring: every service of a server process built from its context, then started and
stopped, each in one order (``create_app``'s lifespan calls these). What each service owns is
its own module's docstring; docs/explanation/architecture.md draws how they connect.
"""

from __future__ import annotations

import datetime as dt

from benchrunner.core.tiers import UNLIMITED_MIN_PRIORITY
from benchrunner.server.bisection.driver import BisectionDriver
from benchrunner.server.channel.heartbeats import HeartbeatLedger, HeartbeatWriter, write_interval
from benchrunner.server.channel.lifecycle import Lifecycle, Parts
from benchrunner.server.context import ServerContext
from benchrunner.server.logs.live_logs import LiveLogs
from benchrunner.server.moves.move import Hooks, Moves
from benchrunner.server.processing.confirmation_driver import ConfirmationDriver
from benchrunner.server.processing.processor import Processor
from benchrunner.server.processing.webhooks import WebhookDelivery
from benchrunner.server.recovery.housekeeping import Housekeeping
from benchrunner.server.recovery.leadership import (
    AdvisoryLockLeadership,
    Leadership,
    SoleLeadership,
)
from benchrunner.server.recovery.sweeper import Sweeper
from benchrunner.server.recovery.watchdog import Watchdog
from benchrunner.server.runners.pull_tokens import PullTokens
from benchrunner.server.scheduling.dispatcher import Dispatcher
from benchrunner.server.scheduling.hand_off import HandOffs
from benchrunner.server.scheduling.wakeups import LocalWakeups, PostgresWakeups, Wakeups
from benchrunner.server.services import Services
from benchrunner.server.store.jobs import JobRow


def build(ctx: ServerContext) -> Services:
    """Every service, connected. The hooks below name services built after them: they are
    called only once the services run (``start``)."""
    life: Lifecycle
    wakeups: Wakeups
    bisections: BisectionDriver
    confirmations: ConfirmationDriver

    def batch_processed() -> None:
        """A processing batch committed: it may have given a bisection's duet its verdict or
        finished a confirmation run (one it opened calls ``on_confirming``)."""
        bisections.wake()
        confirmations.wake()

    def finished(job: JobRow) -> None:
        """A job left flight: stop its timer, free capacity if its tier is limited, and let
        the bisections and confirmations look (it may be one of their jobs)."""
        watchdog.forget(job.id)
        bisections.wake()
        confirmations.wake()
        heartbeats.forget(job.id)
        if job.priority < UNLIMITED_MIN_PRIORITY:
            wakeups.capacity_freed()

    processor = Processor(
        ctx,
        on_batch=lambda _ids: batch_processed(),
        on_confirming=lambda: confirmations.changed(),
    )
    heartbeats = HeartbeatLedger(write_interval(ctx.settings), ctx.job_timeout_grace)
    heartbeat_writer = HeartbeatWriter(ctx, heartbeats)
    live_logs = LiveLogs(ctx)
    pull_tokens = PullTokens(
        ctx.secret_key,
        issuer=ctx.settings.base_url(),
        ttl=dt.timedelta(seconds=ctx.settings.oci_token_ttl),
    )
    moves = Moves(
        ctx,
        Hooks(
            left_flight=finished,
            returned=lambda job: wakeups.job_created_here(job.spec_id),
            awaits_processing=processor.enqueue,
            broadcast=lambda spec_id: wakeups.job_broadcast(spec_id),
        ),
    )
    watchdog = Watchdog(ctx, moves=moves, on_completed=processor.enqueue, heartbeats=heartbeats)
    dispatcher = Dispatcher(
        lambda runner_id, slug, nonce, templates: life.claim(runner_id, slug, nonce, templates),
        on_abandoned=lambda claim: life.undelivered(claim.job),
        safety_interval=ctx.settings.claim_poll_interval,
    )
    leadership: Leadership
    if ctx.db.capabilities.notifies:
        wakeups = PostgresWakeups(dispatcher, ctx.db.url, ctx.db.lookups)
        leadership = AdvisoryLockLeadership(ctx.db.url)
    else:
        wakeups, leadership = LocalWakeups(dispatcher), SoleLeadership()
    hand_offs = HandOffs(moves, dispatcher, wakeups)
    sweeper = Sweeper(
        ctx,
        watchdog,
        leadership,
        ctx.settings.sweep_interval,
        on_completed=processor.enqueue,
        on_awaiting_judgment=processor.enqueue_awaiting,
    )
    housekeeping = Housekeeping(ctx, leads=lambda: sweeper.leader)
    webhooks = WebhookDelivery(ctx)
    bisections = BisectionDriver(
        ctx,
        leads=lambda: sweeper.leader,
        broadcast=wakeups.job_broadcast,
        job_created=wakeups.job_created_here,
        interval=ctx.settings.sweep_interval,
    )
    confirmations = ConfirmationDriver(
        ctx,
        leads=lambda: sweeper.leader,
        broadcast=wakeups.job_broadcast,
        job_created=wakeups.job_created_here,
        interval=ctx.settings.sweep_interval,
    )
    life = Lifecycle(
        ctx,
        Parts(
            moves=moves,
            watchdog=watchdog,
            heartbeats=heartbeats,
            live_logs=live_logs,
            dispatcher=dispatcher,
            pull_tokens=pull_tokens,
            confirming=confirmations.changed,
        ),
    )
    return Services(
        lifecycle=life,
        processor=processor,
        heartbeats=heartbeats,
        heartbeat_writer=heartbeat_writer,
        live_logs=live_logs,
        moves=moves,
        watchdog=watchdog,
        dispatcher=dispatcher,
        wakeups=wakeups,
        hand_offs=hand_offs,
        sweeper=sweeper,
        housekeeping=housekeeping,
        webhooks=webhooks,
        bisections=bisections,
        confirmations=confirmations,
    )


async def start(services: Services) -> None:
    services.processor.start()
    services.live_logs.start()
    services.heartbeat_writer.start()
    services.dispatcher.start()
    await services.wakeups.start()
    await services.watchdog.recover_at_startup()
    services.sweeper.start()
    services.housekeeping.start()
    services.webhooks.start()
    services.bisections.start()
    services.confirmations.start()


async def stop_claiming(services: Services) -> None:
    """Claim no more jobs (the server is shutting down); a claim under way finishes."""
    await services.dispatcher.stop()


async def stop(services: Services) -> None:
    # Claims first: one under way for a channel the shutdown closed ends in ``undelivered``,
    # and those jobs are back in the queue before the process goes.
    await stop_claiming(services)
    await services.lifecycle.settle()
    await services.confirmations.stop()
    await services.bisections.stop()
    await services.webhooks.stop()
    await services.housekeeping.stop()
    await services.sweeper.stop()
    services.watchdog.stop()
    await services.wakeups.stop()
    await services.live_logs.stop()
    await services.heartbeat_writer.stop()
    await services.processor.stop()
