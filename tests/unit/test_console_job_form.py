"""The new-job form: inputs generated from a template's typed arguments, and a submitted form
checked into a run body with each problem beside its field."""

from __future__ import annotations

import pytest

from benchrunner.core.templates import TemplateRegistry
from benchrunner.server.console.job_form import (
    ImageRef,
    check_image_form,
    check_template_form,
    image_form,
    template_form,
)

TEMPLATES = TemplateRegistry.parse(
    {
        "templates": {
            "bench.typed": {
                "command": ["run", "{count}", "{ratio}", "{fast}", "{mode}", "{label}"],
                "timeout": 120,
                "args": {
                    "count": {"type": "int", "min": 1, "max": 10, "description": "how many"},
                    "ratio": {"type": "float", "min": 0, "max": 1, "default": 0.5},
                    "fast": {"type": "bool", "default": False},
                    "mode": {"type": "choice", "choices": ["a", "b"]},
                    "label": {"type": "string", "default": "x"},
                },
            }
        }
    }
)
TYPED = TEMPLATES.get("bench.typed")
SPECS = ["small", "large"]
GOOD = {
    "template": "bench.typed",
    "arg.count": "3",
    "arg.ratio": "0.25",
    "arg.fast": "true",
    "arg.mode": "b",
    "arg.label": "hello world",
    "spec": "small",
    "adapter": "json",
    "iter": "2",
    "timeout": "",
    "branch": "",
    "testbed": "",
}


def test_each_argument_type_gets_its_input_with_bounds_and_defaults() -> None:
    form = template_form(TYPED, SPECS)
    count, ratio, fast, mode, label = form.arg_fields
    assert (count.widget, count.step, count.minimum, count.maximum) == ("number", "1", 1, 10)
    assert (count.required, count.value, count.hint) == (True, "", "how many")
    assert count.bounds == "1 to 10"
    assert (ratio.widget, ratio.step, ratio.value) == ("number", "any", "0.5")
    assert ratio.required is False
    assert (fast.widget, fast.choices, fast.value) == ("select", ("true", "false"), "false")
    assert (mode.widget, mode.choices, mode.required) == ("select", ("a", "b"), True)
    assert (label.widget, label.value) == ("text", "x")
    options = {f.name: f for f in form.option_fields}
    assert options["spec"].choices == ("small", "large") and options["spec"].value == "small"
    assert (options["timeout"].minimum, options["timeout"].maximum) == (1, 120)
    assert options["iter"].value == "1"


def test_a_good_form_becomes_the_run_body_the_api_takes() -> None:
    checked = check_template_form("bench", TYPED, GOOD)
    assert checked.errors == {}
    assert checked.body is not None
    body = checked.body.model_dump(exclude_none=True)
    assert body["project"] == "bench" and body["template"] == "bench.typed"
    assert body["args"] == {
        "count": 3,
        "ratio": 0.25,
        "fast": True,
        "mode": "b",
        "label": "hello world",
    }
    assert body["spec"] == "small" and body["settings"]["adapter"] == "json"
    assert body["job"] == {"iter": 2}
    assert "branch" not in body and "testbed" not in body


BAD_FIELDS: list[tuple[dict[str, str], str, str]] = [
    ({"arg.count": "11"}, "arg.count", "argument 'count' must be <= 10, got 11"),
    ({"arg.count": "0"}, "arg.count", "argument 'count' must be >= 1, got 0"),
    ({"arg.count": "2.5"}, "arg.count", "argument 'count' must be an int, got '2.5'"),
    ({"arg.count": ""}, "arg.count", "argument 'count' is required"),
    ({"arg.ratio": "1.5"}, "arg.ratio", "argument 'ratio' must be <= 1, got 1.5"),
    ({"arg.fast": "maybe"}, "arg.fast", "argument 'fast' must be a bool"),
    ({"arg.mode": "c"}, "arg.mode", "argument 'mode' must be one of ['a', 'b']"),
    ({"iter": "0"}, "iter", "greater than or equal to 1"),
    ({"iter": "many"}, "iter", "valid integer"),
    ({"timeout": "0"}, "timeout", "greater than or equal to 1"),
    ({"branch": "b" * 257}, "branch", "at most 256 characters"),
]


@pytest.mark.parametrize(("change", "field", "message"), BAD_FIELDS)
def test_each_problem_is_reported_beside_its_field(
    change: dict[str, str], field: str, message: str
) -> None:
    checked = check_template_form("bench", TYPED, {**GOOD, **change})
    assert checked.body is None
    assert list(checked.errors) == [field]
    assert message in checked.errors[field]


def test_every_problem_at_once_and_the_entered_values_kept() -> None:
    entered = {**GOOD, "arg.count": "99", "arg.mode": "z", "iter": "0"}
    checked = check_template_form("bench", TYPED, entered)
    assert set(checked.errors) == {"arg.count", "arg.mode", "iter"}
    form = template_form(TYPED, SPECS, entered).with_errors(checked.errors)
    assert form.get("arg.count").value == "99" and form.get("arg.count").error
    assert form.get("arg.label").value == "hello world" and form.get("arg.label").error is None
    assert form.has_errors and form.error is None


def test_a_problem_naming_no_field_goes_above_the_form() -> None:
    form = template_form(TYPED, SPECS).with_errors({"form": "body contains a NUL"}, "too busy")
    assert form.error == "too busy; body contains a NUL"
    assert not any(f.error for f in form.fields)


def test_the_image_form_needs_a_resolved_image() -> None:
    entered = {"image": "v1", "spec": "small", "adapter": "magic", "iter": "1"}
    missing = check_image_form("bench", entered, ImageRef(None, "no image tagged 'v1'"))
    assert missing.body is None and missing.errors == {"image": "no image tagged 'v1'"}
    digest = "sha256:" + "a" * 64
    found = check_image_form("bench", entered, ImageRef(digest))
    assert found.errors == {} and found.body is not None
    assert found.body.image == digest and found.body.template is None
    assert [f.name for f in image_form(SPECS).fields][:2] == ["image", "spec"]
