from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from benchrunner.core.templates import TemplateError, TemplateRegistry

ISSUE_EXAMPLE = (Path(__file__).parents[1] / "issue_templates.toml").read_text()

TYPES = {
    "templates": {
        "t": {
            "command": ["prog", "{n}", "{x}", "{flag}", "{mode}", "{label}", "--literal={n}"],
            "args": {
                "n": {"type": "int", "min": 1, "max": 10},
                "x": {"type": "float", "min": 0.5, "max": 2.5, "default": 1.0},
                "flag": {"type": "bool", "default": False},
                "mode": {"type": "choice", "choices": ["fast", "slow"], "default": "fast"},
                "label": {"type": "string", "default": "a b; rm -rf /"},
            },
        }
    }
}


def test_the_issue_example_is_accepted_verbatim(tmp_path: Path) -> None:
    path = tmp_path / "templates.toml"
    path.write_text(ISSUE_EXAMPLE)
    registry = TemplateRegistry.load(path)
    template = registry.get("bench.sleep")
    assert template.timeout == 60
    assert template.argv({})[-1] == "10"
    assert template.argv({"ms": 250})[-1] == "250"
    assert template.argv({"ms": "7"})[:2] == ["python3", "-c"]


def test_placeholders_replace_whole_items_only() -> None:
    template = TemplateRegistry.parse(TYPES).get("t")
    argv = template.argv({"n": 3, "label": "$(whoami)"})
    assert argv == ["prog", "3", "1.0", "false", "fast", "$(whoami)", "--literal={n}"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"n": 0}, "must be >= 1"),
        ({"n": 11}, "must be <= 10"),
        ({"n": "three"}, "must be an int"),
        ({"n": 2.5}, "must be an int"),
        ({"n": True}, "must be an int"),
        ({"n": 1, "x": 3}, "must be <= 2.5"),
        ({"n": 1, "x": "nan"}, "must be a number"),
        ({"n": 1, "flag": "yes"}, "must be a bool"),
        ({"n": 1, "mode": "medium"}, "must be one of"),
        ({"n": 1, "label": 5}, "must be a string"),
        ({"n": 1, "extra": 1}, "has no argument"),
        ({}, "requires argument 'n'"),
    ],
)
def test_bad_arguments_are_refused_with_a_reason(args: dict[str, object], message: str) -> None:
    template = TemplateRegistry.parse(TYPES).get("t")
    with pytest.raises(TemplateError, match=message):
        template.resolve_args(args)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"command": "echo hi"}, "non-empty list of strings"),
        ({"command": []}, "non-empty list of strings"),
        ({"command": ["x", "{y}"]}, "no such argument"),
        ({"command": ["x"], "args": {"a": {"type": "list"}}}, "type must be one of"),
        ({"command": ["x"], "args": {"a": {"type": "choice"}}}, "choice needs"),
        ({"command": ["x"], "args": {"a": {"type": "int", "max": 3, "default": 5}}}, "default"),
        ({"command": ["x"], "timeout": 0}, "timeout must be"),
    ],
)
def test_bad_template_files_are_refused(body: dict[str, object], message: str) -> None:
    with pytest.raises(TemplateError, match=message):
        TemplateRegistry.parse({"templates": {"bad": body}})


def test_unknown_template_names_the_known_ones() -> None:
    registry = TemplateRegistry.parse(tomllib.loads(ISSUE_EXAMPLE))
    with pytest.raises(TemplateError, match=r"unknown template 'nope' \(known: bench.sleep\)"):
        registry.get("nope")


def test_unreadable_file_is_a_template_error(tmp_path: Path) -> None:
    bad = tmp_path / "t.toml"
    bad.write_text("[templates\n")
    with pytest.raises(TemplateError, match="cannot read templates file"):
        TemplateRegistry.load(bad)
