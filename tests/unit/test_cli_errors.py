"""The CLI fails with one red line and exit code 1 (2 for usage errors), never a traceback."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchrunner.cli.main import app


@pytest.fixture
def unreachable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """A host nothing listens on, and an environment that points nowhere else."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    for name in ("BENCHRUNNER_HOST", "BENCHRUNNER_TOKEN", "BENCHRUNNER_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("BENCHRUNNER_CONFIG", str(tmp_path / "config.toml"))
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize(
    "argv",
    [
        ["org", "list"],
        ["spec", "show", "local"],
        ["runner", "list", "--json"],
        ["job", "list", "--project", "demo"],
        ["run", "--project", "demo", "--spec", "local", "--template", "bench.noop"],
    ],
)
def test_an_unreachable_server_is_one_error_line(unreachable: str, argv: list[str]) -> None:
    result = CliRunner().invoke(app, [*argv, "--host", unreachable])
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: cannot reach server at {unreachable}: ")
    assert "Traceback" not in result.output


def test_a_missing_project_is_an_error_line(unreachable: str) -> None:
    result = CliRunner().invoke(app, ["job", "list", "--host", unreachable])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: no project given")
    assert len(result.stderr.splitlines()) == 1


def test_a_missing_results_file_is_an_error_line(unreachable: str, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    result = CliRunner().invoke(app, ["run", "--results", str(missing), "--host", unreachable])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ")
    assert str(missing) in result.stderr


def test_an_invalid_config_file_is_an_error_line(unreachable: str, tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("host = [\n")
    result = CliRunner().invoke(app, ["org", "list"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: config file ")


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--template", "bench.noop"],
        ["run", "--spec", "s", "--template", "t", "--arg", "novalue"],
        [
            "spec",
            "create",
            "x",
            "--arch",
            "x86_64",
            "--cpu",
            "1",
            "--memory",
            "lots",
            "--disk",
            "1G",
        ],
        ["org", "create", "x", "--plan", "platinum"],
        ["org", "frobnicate"],
    ],
)
def test_usage_errors_exit_2(unreachable: str, argv: list[str]) -> None:
    result = CliRunner().invoke(app, [*argv, "--host", unreachable])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output


def test_help_lists_every_noun() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    nouns = (
        *("up", "run", "job", "report", "template", "org", "project", "spec", "runner"),
        *("admin", "server"),
    )
    for noun in nouns:
        assert noun in result.stdout
