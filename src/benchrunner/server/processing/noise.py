"""A report's noise verdict: the runner's calibrations around the job (``NoiseGuard``) against
its spec's limits (docs/decisions/noise.md).

A report is *noisy* when the machine's noise would hide a change of the size its thresholds
look for: when a calibration's speed spread (before or after the job, whichever is larger; the
interquartile range of its blocks' medians, ``NoiseCalibration.spread``) exceeds the spec's noise
limit (``noise_cv_limit``, the smallest change the reports should show: 5 % by default), or
when the machine's speed drifted between the two calibrations by more than the drift limit.
A calibration from a runner that sends no spread is judged by its coefficient of variation, as
before. The CV is kept and shown, but not judged when a spread is there: a few rounds that met a
scheduler tick make it hundreds of percent on an idle machine, which says nothing of whether a
change would show.

Its thresholds then raise no alert unless they ask to (``alert_when_noisy``): a regression seen
on a noisy machine is as likely the machine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from benchrunner.protocol import NoiseGuard

DEFAULT_CV_LIMIT = 0.05
"""The server's noise limit for a spec that sets none: a machine whose speed wanders by more
than 5 % would hide a 5 % change. benchmarks/RESULTS.md has the spreads measured here."""
DEFAULT_DRIFT_LIMIT = 0.05


@dataclass(frozen=True)
class NoiseVerdict:
    noise: NoiseGuard
    cv_limit: float
    drift_limit: float

    @property
    def cv(self) -> float:
        """The larger of the two calibrations' coefficients of variation."""
        after = self.noise.after.cv if self.noise.after is not None else 0.0
        return max(self.noise.before.cv, after)

    @property
    def spread(self) -> float | None:
        """The larger of the two calibrations' speed spreads; None unless both carry one."""
        taken = [c for c in (self.noise.before, self.noise.after) if c is not None]
        spreads = [c.spread for c in taken if c.spread is not None]
        return max(spreads) if len(spreads) == len(taken) else None

    @property
    def judged(self) -> tuple[str, float]:
        """The figure held against the noise limit, and its name: the spread, else the CV."""
        spread = self.spread
        return ("cv", self.cv) if spread is None else ("spread", spread)

    @property
    def reasons(self) -> list[str]:
        """Why the report is noisy; empty when it is quiet."""
        found = []
        name, value = self.judged
        if value > self.cv_limit:
            found.append(f"{name} {_percent(value)} > limit {_percent(self.cv_limit)}")
        drift = self.noise.drift
        if drift is not None and abs(drift) > self.drift_limit:
            found.append(f"drift {drift * 100:+.1f}% > limit {_percent(self.drift_limit)}")
        return found

    @property
    def noisy(self) -> bool:
        return bool(self.reasons)

    def withheld(self) -> str | None:
        """What the report says of the alerts its noise kept back; None when quiet."""
        reasons = self.reasons
        if not reasons:
            return None
        return f"not judged: noisy ({'; '.join(reasons)})"

    def stored(self) -> str:
        """The JSON kept on the report, as its view shows it."""
        return json.dumps(
            {
                **self.noise.model_dump(mode="json", exclude_none=True),
                "cv": self.cv,
                "spread": self.spread,
                "judged": self.judged[0],
                "cv_limit": self.cv_limit,
                "drift_limit": self.drift_limit,
                "verdict": "noisy" if self.noisy else "quiet",
                "alerts": self.withheld(),
            },
            separators=(",", ":"),
        )


def verdict(
    noise: NoiseGuard | None, cv_limit: float | None, drift_limit: float | None
) -> NoiseVerdict | None:
    """The verdict on a job's noise under its spec's limits (None: the server's defaults);
    None when the job has no noise figures (guard off, or an older runner)."""
    if noise is None:
        return None
    return NoiseVerdict(
        noise,
        DEFAULT_CV_LIMIT if cv_limit is None else cv_limit,
        DEFAULT_DRIFT_LIMIT if drift_limit is None else drift_limit,
    )


def noise_view(stored: str | None) -> dict[str, Any] | None:
    """A report's stored noise JSON for its view (None when it has none)."""
    if stored is None:
        return None
    found = json.loads(stored)
    return found if isinstance(found, dict) else None


def stored_verdict(view: dict[str, Any] | None) -> NoiseVerdict | None:
    """The verdict a report's stored noise JSON (``noise_view``) holds, under the limits it was
    judged by; None for a report without one or JSON this server did not write."""
    if view is None:
        return None
    try:
        return NoiseVerdict(
            NoiseGuard.model_validate(view), float(view["cv_limit"]), float(view["drift_limit"])
        )
    except (ValidationError, KeyError, TypeError, ValueError):
        return None


def _percent(value: float) -> str:
    return f"{value * 100:.1f}%"
