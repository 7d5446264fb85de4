"""``benchrunner up``: a server, an admin, a spec and a runner on this machine, in one command.

Order of events: data dir and templates file; admin token (migrating the database); the server
as a child process, awaited through its health endpoint; the local resources through the API; the
runner's key in ``<data-dir>/runner.key`` (mode 0600: not the environment, not the command line,
both of which a job could read in ``/proc``); the runner as a child process; the config file; a
panel of what to try. Then it waits. SIGINT, SIGTERM
or SIGHUP stop the runner first (it drains) and then the server; another signal hurries them.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer
from rich.panel import Panel
from rich.table import Table

from benchrunner.cli import output
from benchrunner.cli.children import Child, describe_exit
from benchrunner.cli.config import config_path, save_config
from benchrunner.cli.local_setup import (
    LocalSetup,
    ensure_templates,
    provision,
    this_machine,
    write_runner_key,
)
from benchrunner.client import ApiError, BenchrunnerClient

ADMIN_EMAIL = "admin@localhost"
HEALTH_DEADLINE = 120.0
"""A first start migrates a new database: on a busy laptop that alone can take over 30 s."""
RUNNER_DRAIN_GRACE = 30.0  # a running demo job gets this long after Ctrl-C
RUNNER_STOP_TIMEOUT = RUNNER_DRAIN_GRACE + 30.0
SERVER_STOP_TIMEOUT = 15.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


class StopRequested(Exception):
    """A stop signal arrived before everything was running."""


class StopSignals:
    """Counts SIGINT/SIGTERM/SIGHUP instead of dying, so children are always stopped in order."""

    def __init__(self) -> None:
        self.count = 0
        self.event = threading.Event()
        self._previous: dict[signal.Signals, _Handler] = {}

    def __enter__(self) -> StopSignals:
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        self.event.set()

    def check(self) -> None:
        if self.count:
            raise StopRequested

    def hurry(self) -> bool:
        """True once per signal received after the first: the user wants it over sooner."""
        if self.count > 1:
            self.count = 1
            return True
        return False


def client_url(host: str, port: int) -> str:
    """Where clients reach a server bound to ``host``: a wildcard bind becomes loopback."""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def _port_taken(host: str, port: int) -> bool:
    connect_host = "127.0.0.1" if host in ("", "0.0.0.0") else ("::1" if host == "::" else host)
    try:
        with socket.create_connection((connect_host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _child_env() -> dict[str, str]:
    # up decides the children's whole configuration: none of the user's BENCHRUNNER_* leak in.
    return {k: v for k, v in os.environ.items() if not k.startswith("BENCHRUNNER_")}


def _wait_healthy(url: str, server: Child, signals: StopSignals, within: float) -> None:
    deadline = time.monotonic() + within
    with BenchrunnerClient(url, None, timeout=2) as client:
        while True:
            signals.check()
            code = server.exit_code()
            if code is not None:
                raise _died(server, code, "while starting")
            try:
                client.health()
                return
            except ApiError as exc:
                if exc.status != 0 or time.monotonic() > deadline:
                    raise ValueError(
                        f"server did not become healthy within {within:.0f} s: {exc} "
                        f"(log: {server.log_path})"
                    ) from None
            time.sleep(0.2)


def _died(child: Child, code: int, when: str) -> ValueError:
    tail = child.tail()
    if tail:
        output.err().print(tail, markup=False, highlight=False, style="dim", soft_wrap=True)
    return ValueError(f"{child.name} {describe_exit(code)} {when} (log: {child.log_path})")


def _panel(url: str, token: str, setup: LocalSetup, config: Path, data_dir: Path) -> Panel:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_row("console", f"{url}/console  (log in with the API token below)")
    grid.add_row("API docs", f"{url}/docs")
    grid.add_row("API token", token)
    grid.add_row("config", f"{config}  (host, token, project = {setup.project})")
    grid.add_row("runner", f"{setup.runner}, offering spec {setup.spec}")
    grid.add_row("logs", f"{data_dir / 'server.log'}, {data_dir / 'runner.log'}")
    grid.add_row("", "")
    grid.add_row(
        "try", f"benchrunner run --spec {setup.spec} --template bench.sleep --arg ms=20 --wait"
    )
    grid.add_row(
        "",
        f"benchrunner run --spec {setup.spec} --template bench.python-loop "
        "--arg n=200000 --iter 3 --wait",
    )
    grid.add_row("", "benchrunner job list")
    grid.add_row("", "")
    grid.add_row("", "Press Ctrl-C to stop (the runner drains first).")
    return Panel(grid, title=f"benchrunner is up at {url}", title_align="left", expand=False)


def up(
    data_dir: Annotated[
        Path,
        typer.Option(
            envvar="BENCHRUNNER_DATA_DIR",
            metavar="DIR",
            help="Database, blobs, templates, logs and spool.",
        ),
    ] = Path("~/.local/share/benchrunner"),
    port: Annotated[
        int,
        typer.Option(envvar="BENCHRUNNER_PORT", min=1, max=65535, help="Port of the server."),
    ] = 8080,
    # No BENCHRUNNER_HOST here: for every client command it means the server's URL.
    host: Annotated[str, typer.Option(help="Interface the server listens on.")] = "127.0.0.1",
    start_timeout: Annotated[
        float,
        typer.Option(
            envvar="BENCHRUNNER_START_TIMEOUT",
            metavar="SECONDS",
            min=1,
            help="How long the server may take to answer its first health check.",
        ),
    ] = HEALTH_DEADLINE,
) -> None:
    """Start a local server and runner with a demo project, and keep them running until Ctrl-C.

    Creates admin admin@localhost, organization local, project demo, a spec local matching this
    machine and runner local; writes their host, token and project to the CLI config file. Run it
    again to start the same setup again.
    """
    data_dir = data_dir.expanduser().resolve()
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # the database and keys live here
    url = client_url(host, port)
    if _port_taken(host, port):
        raise ValueError(f"port {port} is in use (is another benchrunner up running at {url}?)")
    templates = ensure_templates(data_dir)
    db_url = f"sqlite:///{data_dir / 'benchrunner.db'}"
    children: list[Child] = []
    with StopSignals() as signals:
        try:
            code = _run(
                url, host, port, db_url, data_dir, templates, signals, children, start_timeout
            )
        except StopRequested:
            code = 0
        finally:
            _stop_all(children, signals)
    raise typer.Exit(code)


def _run(
    url: str,
    host: str,
    port: int,
    db_url: str,
    data_dir: Path,
    templates: Path,
    signals: StopSignals,
    children: list[Child],
    start_timeout: float,
) -> int:
    from benchrunner.server.admin.bootstrap import bootstrap_admin

    output.note(f"preparing {data_dir} ...")
    token = bootstrap_admin(db_url, ADMIN_EMAIL)
    signals.check()
    me = [sys.executable, "-m", "benchrunner"]
    server = Child(
        "server",
        [
            *me,
            "server",
            "--host",
            host,
            "--port",
            str(port),
            "--db",
            db_url,
            "--data-dir",
            str(data_dir),
            "--templates",
            str(templates),
        ],
        data_dir / "server.log",
        _child_env(),
    )
    children.append(server)
    _wait_healthy(url, server, signals, start_timeout)
    with BenchrunnerClient(url, token) as client:
        setup = provision(client, this_machine(data_dir))
    signals.check()
    key_file = write_runner_key(data_dir, setup.runner_token)
    runner = Child(
        "runner",
        [
            *me,
            "runner",
            "up",
            "--host",
            url,
            "--runner",
            setup.runner,
            "--key-file",
            str(key_file),
            "--templates",
            str(templates),
            "--spool",
            str(data_dir / "spool"),
            "--drain-grace",
            str(RUNNER_DRAIN_GRACE),
        ],
        data_dir / "runner.log",
        _child_env(),
    )
    children.insert(0, runner)  # stopped first
    config = config_path()
    save_config(config, {"host": url, "token": token, "project": setup.project})
    output.out().print(_panel(url, token, setup, config, data_dir))
    for name in ("BENCHRUNNER_HOST", "BENCHRUNNER_TOKEN", "BENCHRUNNER_PROJECT"):
        if os.environ.get(name):
            output.warning(f"{name} is set in your environment and overrides the config file")
    while not signals.count:
        for child in children:
            code = child.exit_code()
            if code is not None:
                output.error(str(_died(child, code, "unexpectedly")))
                return 1
        signals.event.wait(0.5)
    return 0


def _stop_all(children: list[Child], signals: StopSignals) -> None:
    for child in children:
        if child.exit_code() is None:
            drain = (
                f"; a running job gets up to {RUNNER_DRAIN_GRACE:.0f} s, Ctrl-C again cancels it"
                if child.name == "runner"
                else ""
            )
            output.note(f"stopping {child.name} (pid {child.pid}){drain} ...")
        timeout = RUNNER_STOP_TIMEOUT if child.name == "runner" else SERVER_STOP_TIMEOUT
        child.stop(timeout, hurry=signals.hurry)
