"""A report's noise verdict under its spec's limits, and how the CLI words it."""

from __future__ import annotations

import json

import pytest

from benchrunner.api.reports import ReportNoise
from benchrunner.cli.noise_format import job_noise_line, report_noise_lines
from benchrunner.protocol import NoiseCalibration, NoiseGuard
from benchrunner.server.processing.noise import DEFAULT_CV_LIMIT, DEFAULT_DRIFT_LIMIT, verdict


def guard(before: float, after: float | None, drift: float | None = None) -> NoiseGuard:
    return NoiseGuard(
        before=NoiseCalibration(rounds=32, median_ns=40_000, cv=before),
        after=None if after is None else NoiseCalibration(rounds=32, median_ns=40_000, cv=after),
        drift=drift,
        before_age_ms=12.5,
    )


@pytest.mark.parametrize(
    ("noise", "cv_limit", "drift_limit", "withheld"),
    [
        (guard(0.01, 0.01, 0.0), 0.02, 0.05, None),
        (guard(0.02, 0.01, 0.0), 0.02, 0.05, None),  # at the limit is not over it
        (guard(0.041, 0.01, 0.0), 0.02, 0.05, "not judged: noisy (cv 4.1% > limit 2.0%)"),
        (guard(0.01, 0.041, 0.0), 0.02, 0.05, "not judged: noisy (cv 4.1% > limit 2.0%)"),
        (guard(0.01, 0.01, -0.06), 0.02, 0.05, "not judged: noisy (drift -6.0% > limit 5.0%)"),
        (
            guard(0.03, 0.01, 0.06),
            0.02,
            0.05,
            "not judged: noisy (cv 3.0% > limit 2.0%; drift +6.0% > limit 5.0%)",
        ),
        (guard(0.01, None), 0.02, 0.05, None),  # stopped early: no after, no drift
    ],
)
def test_verdict(
    noise: NoiseGuard, cv_limit: float, drift_limit: float, withheld: str | None
) -> None:
    found = verdict(noise, cv_limit, drift_limit)
    assert found is not None
    assert found.withheld() == withheld
    assert found.noisy == (withheld is not None)
    stored = json.loads(found.stored())
    assert stored["verdict"] == ("noisy" if withheld else "quiet")
    assert stored["alerts"] == withheld
    assert (stored["cv_limit"], stored["drift_limit"]) == (cv_limit, drift_limit)
    assert stored["before"]["cv"] == noise.before.cv and stored["before_age_ms"] == 12.5


def spread_guard(before: float, after: float, cv: float = 3.46) -> NoiseGuard:
    return NoiseGuard(
        before=NoiseCalibration(rounds=512, median_ns=40_000, cv=cv, spread=before),
        after=NoiseCalibration(rounds=512, median_ns=40_000, cv=cv, spread=after),
        drift=0.0,
    )


@pytest.mark.parametrize(
    ("noise", "withheld"),
    [
        # An idle machine: CV 346 % from a few ticked rounds, speed steady: judged, quiet.
        (spread_guard(0.004, 0.006), None),
        (spread_guard(0.06, 0.01, cv=0.02), "not judged: noisy (spread 6.0% > limit 5.0%)"),
        (spread_guard(0.01, 0.07, cv=0.02), "not judged: noisy (spread 7.0% > limit 5.0%)"),
    ],
)
def test_the_spread_is_judged_when_the_runner_sends_it(
    noise: NoiseGuard, withheld: str | None
) -> None:
    found = verdict(noise, 0.05, 0.05)
    assert found is not None and found.withheld() == withheld
    stored = json.loads(found.stored())
    assert (stored["judged"], stored["spread"]) == ("spread", found.spread)
    first = report_noise_lines(ReportNoise.model_validate(stored))[0]
    assert (
        first.startswith("noise: ") and "(spread before" in first and "limits spread 5.0%" in first
    )


def test_no_figures_no_verdict_and_unset_limits_are_the_servers() -> None:
    assert verdict(None, 0.02, 0.05) is None
    found = verdict(guard(0.01, 0.01), None, None)
    assert found is not None
    assert (found.cv_limit, found.drift_limit) == (DEFAULT_CV_LIMIT, DEFAULT_DRIFT_LIMIT)


def test_the_cli_words_the_figures_and_the_withheld_alerts() -> None:
    found = verdict(guard(0.041, 0.01, 0.012), 0.02, 0.05)
    assert found is not None
    stored = ReportNoise.model_validate_json(found.stored())
    line = job_noise_line(guard(0.041, 0.01, 0.012))
    assert line == (
        "noise guard: cv before 4.1%, after 1.0%, drift +1.2%, before taken 12 ms earlier"
    )
    first, second, advice = report_noise_lines(stored)
    assert first.startswith("noise: noisy (cv before 4.1%") and "limits cv 2.0%" in first
    assert second.startswith("alerts not judged: noisy (cv 4.1% > limit 2.0%)")
    assert "benchrunner runner preflight" in advice and "--alert-when-noisy" in advice
    assert report_noise_lines(ReportNoise(verdict="quiet")) == [
        "noise: quiet (cv before —, after —, drift —; limits cv —, drift ±—)"
    ]
