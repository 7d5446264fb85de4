"""The noise guard's figures as a line people read: a job's raw calibrations, or a report's
verdict with why its thresholds raised no alert."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _percent(value: object, *, signed: bool = False) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "—"
    return f"{value * 100:+.1f}%" if signed else f"{value * 100:.1f}%"


def _cv(calibration: object) -> str:
    return _percent(calibration.get("cv")) if isinstance(calibration, Mapping) else "—"


def figures(noise: Mapping[str, Any]) -> str:
    """``cv before 0.4%, after 0.6%, drift +1.2%, before taken 310 ms earlier``."""
    parts = [f"cv before {_cv(noise.get('before'))}", f"after {_cv(noise.get('after'))}"]
    parts.append(f"drift {_percent(noise.get('drift'), signed=True)}")
    age = noise.get("before_age_ms")
    if isinstance(age, int | float) and not isinstance(age, bool):
        parts.append(f"before taken {age:.0f} ms earlier")
    return ", ".join(parts)


def job_noise_line(noise: Mapping[str, Any]) -> str:
    return f"noise guard: {figures(noise)}"


def report_noise_lines(noise: Mapping[str, Any]) -> list[str]:
    """The verdict and its figures; on a noisy report, why its thresholds raised no alert."""
    limits = (
        f"limits cv {_percent(noise.get('cv_limit'))}, drift ±{_percent(noise.get('drift_limit'))}"
    )
    lines = [f"noise: {noise.get('verdict', '?')} ({figures(noise)}; {limits})"]
    if noise.get("alerts"):
        lines.append(f"alerts {noise['alerts']}: only thresholds with alert_when_noisy were judged")
    return lines
