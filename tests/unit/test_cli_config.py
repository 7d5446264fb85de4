"""Where the CLI finds host, token and project: flag, then environment, then config file."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from benchrunner.cli.config import (
    DEFAULT_HOST,
    config_path,
    load_config,
    normalize_host,
    require_project,
    resolve,
    save_config,
)

FILE_TOKEN = "benchrunner_api_" + "f" * 64
ENV_TOKEN = "benchrunner_api_" + "e" * 64
FLAG_TOKEN = "benchrunner_api_" + "1" * 64


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(f'host = "http://file:1"\ntoken = "{FILE_TOKEN}"\nproject = "file-project"\n')
    return path


def test_the_config_file_is_used_when_nothing_else_is_given(config_file: Path) -> None:
    settings = resolve(environ={"BENCHRUNNER_CONFIG": str(config_file)})
    assert (settings.host, settings.token, settings.project) == (
        "http://file:1",
        FILE_TOKEN,
        "file-project",
    )


def test_environment_beats_the_config_file(config_file: Path) -> None:
    environ = {
        "BENCHRUNNER_CONFIG": str(config_file),
        "BENCHRUNNER_HOST": "http://env:2",
        "BENCHRUNNER_TOKEN": ENV_TOKEN,
        "BENCHRUNNER_PROJECT": "env-project",
    }
    settings = resolve(environ=environ)
    assert (settings.host, settings.token, settings.project) == (
        "http://env:2",
        ENV_TOKEN,
        "env-project",
    )


def test_flags_beat_the_environment(config_file: Path) -> None:
    environ = {
        "BENCHRUNNER_CONFIG": str(config_file),
        "BENCHRUNNER_HOST": "http://env:2",
        "BENCHRUNNER_TOKEN": ENV_TOKEN,
    }
    settings = resolve("http://flag:3/", FLAG_TOKEN, "flag-project", environ=environ)
    assert (settings.host, settings.token, settings.project) == (
        "http://flag:3",
        FLAG_TOKEN,
        "flag-project",
    )


def test_each_setting_falls_back_on_its_own(config_file: Path) -> None:
    environ = {"BENCHRUNNER_CONFIG": str(config_file), "BENCHRUNNER_TOKEN": ENV_TOKEN}
    settings = resolve(project="flag-project", environ=environ)
    assert (settings.host, settings.token, settings.project) == (
        "http://file:1",
        ENV_TOKEN,
        "flag-project",
    )


def test_empty_environment_values_do_not_count(config_file: Path) -> None:
    environ = {"BENCHRUNNER_CONFIG": str(config_file), "BENCHRUNNER_HOST": ""}
    assert resolve(environ=environ).host == "http://file:1"


def test_defaults_without_a_config_file(tmp_path: Path) -> None:
    settings = resolve(environ={"BENCHRUNNER_CONFIG": str(tmp_path / "missing.toml")})
    assert (settings.host, settings.token, settings.project) == (DEFAULT_HOST, None, None)
    with pytest.raises(ValueError, match="no project given"):
        require_project(settings)


def test_the_default_config_file_is_in_the_home_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config_path({}) == tmp_path / ".config" / "benchrunner" / "config.toml"


@pytest.mark.parametrize(
    ("given", "host"),
    [
        ("localhost:8080", "http://localhost:8080"),
        ("https://bench.example.org/", "https://bench.example.org"),
        (" http://h:1 ", "http://h:1"),
    ],
)
def test_normalize_host(given: str, host: str) -> None:
    assert normalize_host(given) == host


def test_invalid_config_files_are_named(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text("host = \n")
    with pytest.raises(ValueError, match="not valid TOML"):
        load_config(broken)
    typed = tmp_path / "typed.toml"
    typed.write_text("host = 8080\n")
    with pytest.raises(ValueError, match="host must be a string"):
        load_config(typed)


def test_save_config_merges_and_is_private(tmp_path: Path) -> None:
    path = tmp_path / "dir" / "config.toml"
    save_config(path, {"host": "http://a:1", "project": "p"})
    save_config(path, {"token": 'quote " and \\ and ünïcode', "project": "q"})
    assert load_config(path) == {
        "host": "http://a:1",
        "project": "q",
        "token": 'quote " and \\ and ünïcode',
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["config.toml"]
