"""The threshold form: text fields read into the API's checked model, or a message beside the
field that is wrong."""

from __future__ import annotations

import pytest

from benchrunner.detection.models import TestKind
from benchrunner.server.console.threshold_form import (
    MODEL_FIELDS,
    checked_model,
    error_field,
    form_values,
    model_values,
)


def _form(**values: str) -> dict[str, object]:
    return {name: values.get(name, "") for name in MODEL_FIELDS}


def test_a_valid_form_gives_the_model() -> None:
    form = form_values(_form(test="t", max_sample_size="64", upper_boundary=" 0.99 "), MODEL_FIELDS)
    model = checked_model(form)
    assert form.valid, form.errors
    assert model is not None
    assert (model.test, model.max_sample_size, model.upper_boundary) == (
        TestKind.T_TEST,
        64,
        0.99,
    )
    assert model.lower_boundary is None


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        ({}, "test", "choose a test"),
        ({"test": "nope", "upper_boundary": "1"}, "test", "is not one of"),
        ({"test": "percentage", "upper_boundary": "ten"}, "upper_boundary", "must be a number"),
        ({"test": "percentage", "upper_boundary": "inf"}, "upper_boundary", "finite"),
        ({"test": "percentage", "window": "1.5", "upper_boundary": "1"}, "window", "whole"),
        (
            {"test": "percentage", "window": "-1", "upper_boundary": "1"},
            "window",
            "[0, 4294967295]",
        ),
        ({"test": "percentage"}, "lower_boundary", "needs a lower_boundary"),
        ({"test": "t_test", "upper_boundary": "1.5"}, "upper_boundary", "[0.5, 1.0)"),
        (
            {
                "test": "z_score",
                "min_sample_size": "9",
                "max_sample_size": "3",
                "upper_boundary": "0.9",
            },
            "max_sample_size",
            "greater than or equal to min_sample_size",
        ),
        ({"test": "static", "window": "5", "upper_boundary": "1"}, "window", "takes no window"),
        ({"test": "change_point", "upper_boundary": "1"}, "upper_boundary", "takes no"),
        ({"test": "change_point", "max_pvalue": "2"}, "max_pvalue", "(0, 1]"),
        (
            {"test": "iqr", "min_magnitude": "0.1", "upper_boundary": "1"},
            "min_magnitude",
            "change_point and samples only",
        ),
    ],
)
def test_a_wrong_value_gets_its_message_beside_its_field(
    values: dict[str, str], field: str, message: str
) -> None:
    form = form_values(_form(**values), MODEL_FIELDS)
    assert checked_model(form) is None
    assert message in form.errors[field], form.errors
    assert form.values["test"] == values.get("test", "")  # what was typed is shown again


def test_an_over_long_field_is_an_error_not_a_crash() -> None:
    form = form_values(_form(test="x" * 5000), MODEL_FIELDS)
    assert "at most 1024" in form.errors["test"]
    assert checked_model(form) is None


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ("the t_test test needs a lower_boundary, an upper_boundary or both", "lower_boundary"),
        ("test 'x' is not one of: static", "test"),
        (
            "max_sample_size (3) must be greater than or equal to min_sample_size (5)",
            "max_sample_size",
        ),
    ],
)
def test_error_field_is_the_first_parameter_named(message: str, field: str) -> None:
    assert error_field(message) == field


class _Stored:
    test = "percentage"
    min_sample_size = None
    max_sample_size = 10
    window_seconds = 3600
    lower_boundary = None
    upper_boundary = 0.1
    max_pvalue = None
    min_magnitude = None


def test_model_values_shows_a_stored_model_as_the_form_does() -> None:
    values = model_values(_Stored())
    assert values["window"] == "3600"
    assert values["upper_boundary"] == "0.1"
    assert values["lower_boundary"] == ""
    assert model_values(None) == dict.fromkeys(MODEL_FIELDS, "")
