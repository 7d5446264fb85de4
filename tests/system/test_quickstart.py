"""The README's front door, run as written (docs/getting-started.md includes it): ``benchrunner up``
then the tour's commands."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx

from tests.harness import REPO, cli, free_port, wait_until


def readme_tour() -> list[list[str]]:
    """The ``$ benchrunner ...`` lines of the README's first console block."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"```console\n(.*?)```", text, re.S)
    assert block is not None, "README has no ```console block"
    lines = [line[2:] for line in block.group(1).splitlines() if line.startswith("$ ")]
    assert lines, "the console block has no commands"
    return [shlex.split(line) for line in lines]


def test_readme_set_up_commands_are_the_makefile_targets() -> None:
    readme = (REPO / "README.md").read_text()
    makefile = (REPO / "Makefile").read_text()
    assert "make up" in readme and "make test" in readme
    assert re.search(r"^up: .*\n\t\$\(BIN\)/benchrunner up$", makefile, re.M)
    assert "make test" in (REPO / ".ci" / "run").read_text()


def test_benchrunner_up_and_the_tour(tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "BENCHRUNNER_PORT": str(port),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    env.pop("BENCHRUNNER_CONFIG", None)
    log = (tmp_path / "up.log").open("wb")
    up = subprocess.Popen(
        [sys.executable, "-m", "benchrunner", "up"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    config = tmp_path / ".config" / "benchrunner" / "config.toml"
    try:

        def up_and_running() -> bool:
            assert up.poll() is None, (tmp_path / "up.log").read_text()
            return config.exists() and "token" in config.read_text()

        wait_until(up_and_running, timeout=60, message="benchrunner up to write its config")
        settings = tomllib.loads(config.read_text())
        assert settings["host"] == f"http://127.0.0.1:{port}"
        assert oct(config.stat().st_mode & 0o777) == "0o600"
        assert httpx.get(f"{settings['host']}/docs").status_code == 200

        for argv in readme_tour():
            assert argv[0] == "benchrunner"
            result = cli(*argv[1:], env=env, timeout=120)
            if "--wait" in argv:
                assert "processed" in result.stdout, result.stdout
        waited = cli(
            "run",
            "--spec",
            "local",
            "--template",
            "bench.sleep",
            "--arg",
            "ms=5",
            "--wait",
            "--json",
            env=env,
        )
        assert '"processed"' in waited.stdout
    finally:
        up.send_signal(signal.SIGINT)
        code = up.wait(timeout=60)
        log.close()
    assert code == 0, (tmp_path / "up.log").read_text()
