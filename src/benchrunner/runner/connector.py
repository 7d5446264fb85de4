"""Keeps the agent's transport (the channel, or the per-job transport): connects when due, drops
it on loss, and spaces reconnects with jittered exponential backoff, reset once the server
accepted the runner (the channel's handshake; the per-job transport's first answer). Given
several server replicas, each new attempt after a failure or a lost connection goes to the next
one in turn."""

from __future__ import annotations

import logging
import queue
import random
from collections.abc import Sequence

from benchrunner.core.clock import SystemThreadClock, ThreadClock
from benchrunner.protocol import OUR_EXTENSIONS
from benchrunner.runner.backoff import Backoff
from benchrunner.runner.channel import Channel, ChannelUnavailableError, channel_url
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.events import AgentEvent
from benchrunner.runner.per_job import PerJobTransport
from benchrunner.runner.transport import Transport, TransportName

log = logging.getLogger(__name__)


class Connector:
    def __init__(
        self,
        hosts: Sequence[str],
        runner: str,
        key: str,
        *,
        events: queue.SimpleQueue[AgentEvent],
        cores: CorePlan,
        user_agent: str,
        extensions: Sequence[str] = OUR_EXTENSIONS,
        transport: TransportName = "channel",
        rng: random.Random | None = None,
        clock: ThreadClock | None = None,
    ) -> None:
        """``clock``: when a reconnect is due, and how long the per-job transport's refused
        claim waits (the agent's)."""
        if not hosts:
            raise ValueError("no server URL to connect to")
        self._hosts = list(hosts)
        self._urls = [channel_url(host, runner) for host in hosts]
        self._current = 0
        self._runner = runner
        self._transport = transport
        self._key = key
        self._events = events
        self._cores = cores
        self._user_agent = user_agent
        self._extensions = extensions
        self._backoff = Backoff(rng=rng)
        self._clock = clock or SystemThreadClock()
        self._generation = 0
        self._next_attempt = 0.0
        self.channel: Transport | None = None

    @property
    def url(self) -> str:
        """The channel URL of the server this connector is on (or tries next)."""
        return self._urls[self._current]

    @property
    def host(self) -> str:
        """The http(s) URL of that server: where its registry is too."""
        return self._hosts[self._current]

    def is_current(self, generation: int) -> bool:
        return self.channel is not None and self.channel.generation == generation

    def due(self, now: float) -> bool:
        return self.channel is None and now >= self._next_attempt

    def deadline(self) -> float | None:
        """When the next connection attempt is due, while disconnected."""
        return self._next_attempt if self.channel is None else None

    def connect(self) -> Transport | None:
        """One attempt; None (next attempt scheduled) if the server is unreachable.

        Raises ChannelRefusedError when retrying cannot help (401/403/404).
        """
        self._generation += 1
        try:
            channel = self._open()
        except ChannelUnavailableError as exc:
            failed = self.url
            delay = self._schedule()
            log.warning("cannot connect to %s: %s; retrying in %.2f s", failed, exc, delay)
            return None
        if channel.verified:
            self._backoff.reset()
        self.channel = channel
        log.info("connected to %s (%s)", self.host, self._transport)
        return channel

    def _open(self) -> Transport:
        if self._transport == "per-job":
            return PerJobTransport(
                self.host,
                self._runner,
                self._key,
                generation=self._generation,
                events=self._events,
                cores=self._cores,
                user_agent=self._user_agent,
                extensions=self._extensions,
                clock=self._clock,
            )
        return Channel.open(
            self.url,
            self._key,
            generation=self._generation,
            events=self._events,
            cores=self._cores,
            user_agent=self._user_agent,
            extensions=self._extensions,
        )

    def heard_from(self) -> None:
        """The server answered on the current connection: the next loss starts backoff anew."""
        self._backoff.reset()

    def drop(self) -> None:
        """Close the current channel (if any) and schedule a reconnect."""
        channel, self.channel = self.channel, None
        if channel is None:
            return
        channel.close()
        log.info("reconnecting in %.2f s", self._schedule())

    def close(self) -> None:
        """Final close: the runner is stopping."""
        channel, self.channel = self.channel, None
        if channel is not None:
            channel.close(1001, "runner stopping")

    def _schedule(self) -> float:
        self._current = (self._current + 1) % len(self._urls)
        delay = self._backoff.next_delay()
        self._next_attempt = self._clock.monotonic() + delay
        return delay
