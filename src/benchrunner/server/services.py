"""The services one server process runs, as the app factory wires them (``app/wiring.py``):
what a route, a console page or another service reaches them through."""

from __future__ import annotations

import dataclasses

from benchrunner.server.bisection.driver import BisectionDriver
from benchrunner.server.channel.heartbeats import HeartbeatLedger, HeartbeatWriter
from benchrunner.server.channel.lifecycle import Lifecycle
from benchrunner.server.logs.live_logs import LiveLogs
from benchrunner.server.moves.move import Moves
from benchrunner.server.processing.confirmation_driver import ConfirmationDriver
from benchrunner.server.processing.processor import Processor
from benchrunner.server.processing.webhooks import WebhookDelivery
from benchrunner.server.recovery.housekeeping import Housekeeping
from benchrunner.server.recovery.sweeper import Sweeper
from benchrunner.server.recovery.watchdog import Watchdog
from benchrunner.server.scheduling.dispatcher import Dispatcher
from benchrunner.server.scheduling.hand_off import HandOffs
from benchrunner.server.scheduling.wakeups import Wakeups


@dataclasses.dataclass(frozen=True)
class Services:
    """Each service once, as ``app/wiring.py`` connected them; a route or page gets them as
    ``Svc`` (``http/deps.py``), a service as an argument."""

    lifecycle: Lifecycle
    """The runner protocols' handlers: claim, running, heartbeat, results, cancel."""
    processor: Processor
    heartbeats: HeartbeatLedger
    heartbeat_writer: HeartbeatWriter
    live_logs: LiveLogs
    moves: Moves
    watchdog: Watchdog
    dispatcher: Dispatcher
    wakeups: Wakeups
    hand_offs: HandOffs
    sweeper: Sweeper
    housekeeping: Housekeeping
    webhooks: WebhookDelivery
    bisections: BisectionDriver
    confirmations: ConfirmationDriver
