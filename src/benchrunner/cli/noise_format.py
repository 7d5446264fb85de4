"""The noise guard's figures as a line people read: a job's raw calibrations, or a report's
verdict with why its thresholds raised no alert."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _percent(value: object, *, signed: bool = False) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "—"
    return f"{value * 100:+.1f}%" if signed else f"{value * 100:.1f}%"


def _figure(calibration: object, name: str) -> str:
    return _percent(calibration.get(name)) if isinstance(calibration, Mapping) else "—"


def _judged(noise: Mapping[str, Any]) -> str:
    """``spread`` when the calibrations carry one (what the verdict judges), else ``cv``."""
    before = noise.get("before")
    return "spread" if isinstance(before, Mapping) and before.get("spread") is not None else "cv"


def figures(noise: Mapping[str, Any]) -> str:
    """``spread before 0.4%, after 0.6%, drift +1.2%, before taken 310 ms earlier`` (``cv`` for
    a runner that sends no spread)."""
    name = _judged(noise)
    before, after = _figure(noise.get("before"), name), _figure(noise.get("after"), name)
    parts = [f"{name} before {before}", f"after {after}"]
    parts.append(f"drift {_percent(noise.get('drift'), signed=True)}")
    age = noise.get("before_age_ms")
    if isinstance(age, int | float) and not isinstance(age, bool):
        parts.append(f"before taken {age:.0f} ms earlier")
    return ", ".join(parts)


def job_noise_line(noise: Mapping[str, Any]) -> str:
    return f"noise guard: {figures(noise)}"


def report_noise_lines(noise: Mapping[str, Any]) -> list[str]:
    """The verdict and its figures; on a noisy report, why its thresholds raised no alert."""
    limit, drift = _percent(noise.get("cv_limit")), _percent(noise.get("drift_limit"))
    limits = f"limits {_judged(noise)} {limit}, drift ±{drift}"
    lines = [f"noise: {noise.get('verdict', '?')} ({figures(noise)}; {limits})"]
    if noise.get("alerts"):
        lines.append(f"alerts {noise['alerts']}: only thresholds with alert_when_noisy were judged")
        lines.append(NOISY_ADVICE)
    return lines


NOISY_ADVICE = (
    "to judge them: run on quiet cores (`benchrunner runner preflight` lists what perturbs "
    "this machine, `runner up --tune` fixes what it can), or let a threshold judge noisy "
    "reports (`threshold create ... --alert-when-noisy`)"
)
