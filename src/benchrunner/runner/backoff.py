"""Reconnect delays: exponential with full jitter, so a fleet of runners does not reconnect in
lockstep after a server restart."""

from __future__ import annotations

import random


class Backoff:
    """``next_delay()`` is uniform in ``[0, min(cap, initial * 2**attempt))``; ``reset()`` after a
    successful connect starts over."""

    def __init__(
        self,
        initial: float = 0.1,
        cap: float = 5.0,
        rng: random.Random | None = None,
    ) -> None:
        self._initial = initial
        self._cap = cap
        self._rng = rng or random.Random()
        self._attempt = 0

    def next_delay(self) -> float:
        ceiling = min(self._cap, self._initial * 2.0 ** min(self._attempt, 32))
        self._attempt += 1
        return self._rng.uniform(0.0, ceiling)

    def reset(self) -> None:
        self._attempt = 0
