"""The noise guard's figures as a line people read: a job's raw calibrations, or a report's
verdict with why its thresholds raised no alert."""

from __future__ import annotations

from benchrunner.api.reports import ReportNoise
from benchrunner.protocol import NoiseCalibration, NoiseGuard


def _percent(value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value * 100:+.1f}%" if signed else f"{value * 100:.1f}%"


def _figure(calibration: NoiseCalibration | None, name: str) -> str:
    if calibration is None:
        return "—"
    return _percent(calibration.spread if name == "spread" else calibration.cv)


def _judged(noise: NoiseGuard | ReportNoise) -> str:
    """``spread`` when the calibrations carry one (what the verdict judges), else ``cv``."""
    return "spread" if noise.before is not None and noise.before.spread is not None else "cv"


def figures(noise: NoiseGuard | ReportNoise) -> str:
    """``spread before 0.4%, after 0.6%, drift +1.2%, before taken 310 ms earlier`` (``cv`` for
    a runner that sends no spread)."""
    name = _judged(noise)
    before, after = _figure(noise.before, name), _figure(noise.after, name)
    parts = [f"{name} before {before}", f"after {after}"]
    parts.append(f"drift {_percent(noise.drift, signed=True)}")
    if noise.before_age_ms is not None:
        parts.append(f"before taken {noise.before_age_ms:.0f} ms earlier")
    return ", ".join(parts)


def job_noise_line(noise: NoiseGuard) -> str:
    return f"noise guard: {figures(noise)}"


def report_noise_lines(noise: ReportNoise) -> list[str]:
    """The verdict and its figures; on a noisy report, why its thresholds raised no alert."""
    limit, drift = _percent(noise.cv_limit), _percent(noise.drift_limit)
    limits = f"limits {_judged(noise)} {limit}, drift ±{drift}"
    lines = [f"noise: {noise.verdict or '?'} ({figures(noise)}; {limits})"]
    if noise.alerts:
        lines.append(f"alerts {noise.alerts}: only thresholds with alert_when_noisy were judged")
        lines.append(NOISY_ADVICE)
    return lines


NOISY_ADVICE = (
    "to judge them: run on quiet cores (`benchrunner runner preflight` lists what perturbs "
    "this machine, `runner up --tune` fixes what it can), or let a threshold judge noisy "
    "reports (`threshold create ... --alert-when-noisy`)"
)
