"""The noise guard's "before": taken while the runner waits for work, never on a job's way.

A calibration in front of every job would put its milliseconds into every pickup (docs/results.md
measures enqueue -> job start). So the agent calibrates the idle job cores just before it
sends ``ready``, and again whenever the latest one has grown older than ``max_age`` while it
waits; a job that arrives takes the latest one, which is then at most ``max_age`` (plus one
calibration) old. A refresh gives way between two rounds as soon as anything happens (a job,
a cancel, a lost channel): the one before it stays valid.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from benchrunner.protocol import NoiseCalibration
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.noise_guard import CalibrationError, NoiseProbe
from benchrunner.runner.options import DEFAULT_MAX_AGE

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TakenCalibration:
    calibration: NoiseCalibration
    taken_at: float
    """``time.monotonic()`` when it ended."""


class IdleCalibration:
    """The latest calibration of the idle job cores. Used by the agent's thread only."""

    def __init__(
        self,
        probe: NoiseProbe,
        cores: CorePlan,
        *,
        max_age: float = DEFAULT_MAX_AGE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.probe = probe
        self._cores = cores
        self._max_age = max_age
        self._clock = clock
        self._latest: TakenCalibration | None = None
        self._failed_at: float | None = None

    def due(self, now: float) -> bool:
        """Whether there is none, or the latest is older than ``max_age``."""
        if self._failed_at is not None and now - self._failed_at < self._max_age:
            return False
        return self._latest is None or now - self._latest.taken_at >= self._max_age

    def deadline(self) -> float | None:
        """When the latest grows too old (None: there is none)."""
        return None if self._latest is None else self._latest.taken_at + self._max_age

    def refresh(self, stop: Callable[[], bool]) -> bool:
        """Calibrate now; False, keeping the latest, when ``stop()`` interrupted it."""
        try:
            calibration = self.probe.calibrate_unless(self._cores, stop)
        except CalibrationError as exc:
            # Not again before max_age: the job that comes takes none and calibrates itself.
            log.warning("idle calibration failed: %s", exc)
            self._latest = None
            self._failed_at = self._clock()
            return False
        if calibration is None:
            return False
        self._latest = TakenCalibration(calibration, self._clock())
        self._failed_at = None
        return True

    def take(self) -> TakenCalibration | None:
        """The latest, for the job that just arrived; the next job needs a newer one."""
        latest, self._latest = self._latest, None
        return latest
