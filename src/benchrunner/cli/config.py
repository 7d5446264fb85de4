"""Where the CLI finds its server, token and default project.

Each setting is resolved in this order, first match wins:

1. the command's flag (``--host``, ``--token``, ``--project``)
2. the environment (``BENCHRUNNER_HOST``, ``BENCHRUNNER_TOKEN``, ``BENCHRUNNER_PROJECT``)
3. the config file: ``$BENCHRUNNER_CONFIG``, else ``~/.config/benchrunner/config.toml``
   (``host = "..."``, ``token = "..."``, ``project = "..."``)
4. for the host only, ``http://127.0.0.1:8080`` (where ``benchrunner up`` listens by default)
"""

from __future__ import annotations

import json
import os
import tempfile
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchrunner.client import BenchrunnerClient

DEFAULT_HOST = "http://127.0.0.1:8080"
CONFIG_ENV = "BENCHRUNNER_CONFIG"
SETTING_KEYS = ("host", "token", "project")


@dataclass(frozen=True)
class CliSettings:
    host: str
    token: str | None
    project: str | None

    def client(self, timeout: float = 30) -> BenchrunnerClient:
        return BenchrunnerClient(self.host, self.token, timeout=timeout)


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    explicit = environ.get(CONFIG_ENV)
    if explicit:
        return Path(explicit).expanduser()
    return Path.home() / ".config" / "benchrunner" / "config.toml"


def load_config(path: Path) -> dict[str, str]:
    """The string settings of a config file; a missing file is an empty config.

    Raises ``ValueError`` naming the file when it is not valid TOML or a setting is not a string.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"config file {path} is not valid TOML: {exc}") from None
    settings: dict[str, str] = {}
    for key, value in data.items():
        if not isinstance(value, str):
            raise ValueError(f"config file {path}: {key} must be a string")
        settings[key] = value
    return settings


def save_config(path: Path, updates: Mapping[str, str]) -> None:
    """Merge ``updates`` into the config file, readable by its owner only (it holds a token).

    The file is replaced atomically so a crash never leaves half a token behind.
    """
    settings = {**load_config(path), **updates}
    path.parent.mkdir(parents=True, exist_ok=True)
    # A JSON string literal is a valid TOML basic string (same escapes, \uXXXX included).
    text = "".join(f"{key} = {json.dumps(value)}\n" for key, value in sorted(settings.items()))
    fd, temp = tempfile.mkstemp(prefix=".config-", suffix=".toml", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        Path(temp).replace(path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def normalize_host(host: str) -> str:
    """``localhost:8080`` -> ``http://localhost:8080``; no trailing slash."""
    host = host.strip().rstrip("/")
    if not host:
        raise ValueError("the server host is empty")
    if "://" not in host:
        host = f"http://{host}"
    return host


def resolve(
    host: str | None = None,
    token: str | None = None,
    project: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> CliSettings:
    """Flags, then environment, then config file, then defaults (see the module docstring)."""
    environ = os.environ if environ is None else environ
    file = load_config(config_path(environ))

    def pick(flag: str | None, name: str) -> str | None:
        for candidate in (flag, environ.get(f"BENCHRUNNER_{name.upper()}"), file.get(name)):
            if candidate:
                return candidate
        return None

    return CliSettings(
        host=normalize_host(pick(host, "host") or DEFAULT_HOST),
        token=pick(token, "token"),
        project=pick(project, "project"),
    )


def require_project(settings: CliSettings) -> str:
    if settings.project is None:
        raise ValueError(
            "no project given: pass --project, set BENCHRUNNER_PROJECT, "
            f'or add project = "..." to {config_path()}'
        )
    return settings.project


@contextmanager
def project_client(
    host: str | None, token: str | None, project: str | None, *, timeout: float = 30
) -> Iterator[tuple[BenchrunnerClient, str]]:
    """A client of the resolved settings, and the project a command acts on (ValueError, as
    ``require_project``, when none is given anywhere)."""
    settings = resolve(host, token, project)
    with settings.client(timeout=timeout) as client:
        yield client, require_project(settings)
