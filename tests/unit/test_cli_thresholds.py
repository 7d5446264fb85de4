"""``--threshold-*`` flags -> ``thresholds`` {models, reset}, with Bencher's pairing and rules."""

from __future__ import annotations

from typing import Any

import pytest

from benchrunner.cli.thresholds import ThresholdFlags, ThresholdsError, thresholds_body
from benchrunner.client import request_json


def flags(**given: Any) -> ThresholdFlags:
    return ThresholdFlags(**given)


@pytest.mark.parametrize(
    ("given", "sent"),
    [
        ({}, None),
        ({"reset": True}, {"reset": True}),
        (
            {"measures": ["latency"], "tests": ["static"], "upper_boundaries": ["100"]},
            {"models": {"latency": {"test": "static", "upper_boundary": 100.0}}},
        ),
        (
            {
                "measures": ["latency"],
                "tests": ["percentage"],
                "min_sample_sizes": ["2"],
                "max_sample_sizes": ["30"],
                "windows": ["3600"],
                "lower_boundaries": ["0"],
                "upper_boundaries": ["0.1"],
            },
            {
                "models": {
                    "latency": {
                        "test": "percentage",
                        "min_sample_size": 2,
                        "max_sample_size": 30,
                        "window": 3600,
                        "lower_boundary": 0.0,
                        "upper_boundary": 0.1,
                    }
                }
            },
        ),
        (
            # the n-th option belongs to the n-th measure; _ leaves it out of that one
            {
                "measures": ["latency", "throughput", "instructions"],
                "tests": ["z_score", "iqr", "delta_iqr"],
                "lower_boundaries": ["_", "1.5"],
                "upper_boundaries": ["0.95", "_", "3"],
                "reset": True,
            },
            {
                "models": {
                    "latency": {"test": "z_score", "upper_boundary": 0.95},
                    "throughput": {"test": "iqr", "lower_boundary": 1.5},
                    "instructions": {"test": "delta_iqr", "upper_boundary": 3.0},
                },
                "reset": True,
            },
        ),
        (
            {"measures": ["x"], "tests": ["t_test"], "lower_boundaries": ["0.5"]},
            {"models": {"x": {"test": "t_test", "lower_boundary": 0.5}}},
        ),
        (
            {"measures": ["x"], "tests": ["static"], "lower_boundaries": ["-5"]},
            {"models": {"x": {"test": "static", "lower_boundary": -5.0}}},
        ),
        (
            {"measures": ["x", "y"], "tests": ["t", "z"], "upper_boundaries": ["0.9", "0.9"]},
            {
                "models": {
                    "x": {"test": "t_test", "upper_boundary": 0.9},
                    "y": {"test": "z_score", "upper_boundary": 0.9},
                }
            },
        ),
        (
            {
                "measures": ["latency", "throughput"],
                "tests": ["percentage", "change_point"],
                "max_sample_sizes": ["_", "100"],
                "upper_boundaries": ["0.1"],
                "max_pvalues": ["_", "0.01"],
                "min_magnitudes": ["_", "0.05"],
            },
            {
                "models": {
                    "latency": {"test": "percentage", "upper_boundary": 0.1},
                    "throughput": {
                        "test": "change_point",
                        "max_sample_size": 100,
                        "max_pvalue": 0.01,
                        "min_magnitude": 0.05,
                    },
                }
            },
        ),
        (
            {"measures": ["x"], "tests": ["change_point"]},
            {"models": {"x": {"test": "change_point"}}},
        ),
    ],
)
def test_thresholds_body(given: dict[str, Any], sent: dict[str, Any] | None) -> None:
    found = thresholds_body(flags(**given))
    assert (None if found is None else request_json(found)) == sent


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"tests": ["t_test"]}, "--threshold-test is given 1 times for 0 --threshold-measure"),
        (
            {"measures": ["a"], "tests": ["static"], "upper_boundaries": ["1", "2"]},
            "--threshold-upper-boundary is given 2 times for 1 --threshold-measure (extra: 2)",
        ),
        (
            {"windows": ["60"]},
            "--threshold-window is given 1 times for 0 --threshold-measure",
        ),
        ({"measures": ["latency"]}, "the threshold for measure 'latency' has no test"),
        (
            {"measures": ["a", "b"], "tests": ["static"], "upper_boundaries": ["1"]},
            "the threshold for measure 'b' has no test",
        ),
        (
            {"measures": ["a"], "tests": ["ttest"]},
            "--threshold-test (measure 'a'): test 'ttest' is not one of: static, percentage,",
        ),
        (
            {"measures": ["a"], "tests": ["t_test"]},
            "the t_test threshold (measure 'a'): the t_test test needs --threshold-lower-boundary, "
            "--threshold-upper-boundary or both",
        ),
        (
            {"measures": ["a", "a"], "tests": ["static", "static"]},
            "--threshold-measure 'a' is given twice",
        ),
        ({"measures": [" "], "tests": ["static"]}, "--threshold-measure cannot be empty"),
        (
            {
                "measures": ["a"],
                "tests": ["static"],
                "windows": ["60"],
                "upper_boundaries": ["1"],
            },
            "a static model takes no --threshold-window",
        ),
        (
            {
                "measures": ["a"],
                "tests": ["static"],
                "lower_boundaries": ["2"],
                "upper_boundaries": ["1"],
            },
            "--threshold-lower-boundary (2.0) of a static model must not be greater than "
            "--threshold-upper-boundary (1.0)",
        ),
        (
            {
                "measures": ["a"],
                "tests": ["percentage"],
                "min_sample_sizes": ["10"],
                "max_sample_sizes": ["5"],
                "upper_boundaries": ["0.1"],
            },
            "--threshold-max-sample-size (5) must be greater than or equal to "
            "--threshold-min-sample-size (10)",
        ),
        (
            {"measures": ["a"], "tests": ["t_test"], "upper_boundaries": ["0.4"]},
            "--threshold-upper-boundary of t_test must be a cumulative probability in [0.5, 1.0)",
        ),
        (
            {"measures": ["a"], "tests": ["z_score"], "upper_boundaries": ["1"]},
            "the z_score threshold (measure 'a'): --threshold-upper-boundary of z_score must be",
        ),
        (
            {"measures": ["a"], "tests": ["percentage"], "lower_boundaries": ["-0.1"]},
            "--threshold-lower-boundary of percentage must be a fraction >= 0",
        ),
        (
            {"measures": ["a"], "tests": ["iqr"], "upper_boundaries": ["nan"]},
            "--threshold-upper-boundary 'nan' (measure 'a') must be a finite number",
        ),
        (
            {"measures": ["a"], "tests": ["iqr"], "upper_boundaries": ["lots"]},
            "--threshold-upper-boundary 'lots' (measure 'a') is not a number",
        ),
        (
            {
                "measures": ["a"],
                "tests": ["iqr"],
                "min_sample_sizes": ["1"],
                "upper_boundaries": ["2"],
            },
            "--threshold-min-sample-size must be an integer from 2 to 4294967295, got 1",
        ),
        (
            {"measures": ["a"], "tests": ["iqr"], "windows": ["0"], "upper_boundaries": ["2"]},
            "--threshold-window must be an integer from 1 to 4294967295 seconds, got 0",
        ),
        (
            {
                "measures": ["a"],
                "tests": ["iqr"],
                "max_sample_sizes": ["2.5"],
                "upper_boundaries": ["2"],
            },
            "--threshold-max-sample-size '2.5' (measure 'a') is not a whole number",
        ),
        (
            {"measures": ["a"], "tests": ["change_point"], "upper_boundaries": ["0.1"]},
            "a change_point model takes no --threshold-upper-boundary",
        ),
        (
            {"measures": ["a"], "tests": ["change_point"], "max_pvalues": ["0"]},
            "(measure 'a'): --threshold-max-pvalue must be in (0, 1], got 0.0",
        ),
        (
            {"measures": ["a"], "tests": ["change_point"], "min_magnitudes": ["-1"]},
            "--threshold-min-magnitude must be a relative change >= 0",
        ),
        (
            {
                "measures": ["a"],
                "tests": ["percentage"],
                "upper_boundaries": ["0.1"],
                "max_pvalues": ["0.01"],
            },
            "the percentage threshold (measure 'a'): --threshold-max-pvalue is a parameter of "
            "change_point and samples only",
        ),
        (
            {
                "measures": ["a"],
                "tests": ["change_point"],
                "min_sample_sizes": ["9"],
                "max_sample_sizes": ["3"],
            },
            "--threshold-max-sample-size (3) must be greater than or equal to "
            "--threshold-min-sample-size (9)",
        ),
    ],
)
def test_invalid_thresholds_name_the_flag(given: dict[str, Any], message: str) -> None:
    with pytest.raises(ThresholdsError) as raised:
        thresholds_body(flags(**given))
    assert message in str(raised.value)


def test_a_misplaced_option_names_the_pairing() -> None:
    """Bencher's pairing by position: the first lower boundary is the first measure's."""
    misplaced = flags(
        measures=["latency", "throughput"],
        tests=["t_test", "percentage"],
        upper_boundaries=["0.99"],
        lower_boundaries=["0.1"],
    )
    with pytest.raises(ThresholdsError, match="write _ where a measure takes none"):
        thresholds_body(misplaced)
