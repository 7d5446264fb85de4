"""The README's front door, run as written (docs/getting-started.md includes it): ``benchrunner up``
then the tour's commands."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import httpx

from benchrunner.client import BenchrunnerClient
from tests.benchrunner_up import benchrunner_up
from tests.harness import REPO, free_port

TOUR_HEADING = "A five-minute tour"


def tour_section(text: str) -> str:
    """The README's tour: from its heading (at any level) to the next heading of that level or
    higher, wherever in the file it moved."""
    found = re.search(rf"^(#+) {re.escape(TOUR_HEADING)}\s*$", text, re.M)
    assert found is not None, f"README has no heading {TOUR_HEADING!r}"
    level = len(found.group(1))
    rest = text[found.end() :]
    after = re.search(rf"^#{{1,{level}}} ", rest, re.M)
    return rest if after is None else rest[: after.start()]


def tour_blocks(section: str) -> list[tuple[str, str]]:
    """Each ``console`` and ``sh`` block of the tour, in order, as (language, script): a
    console block's ``$ `` lines are its commands; an ``sh`` block runs as it is printed."""
    blocks = []
    for language, body in re.findall(r"```(console|sh)\n(.*?)```", section, re.S):
        if language == "console":
            body = "".join(line[2:] + "\n" for line in body.splitlines() if line.startswith("$ "))
        blocks.append((language, body))
    assert blocks, "the tour has no commands"
    return blocks


def readme_tour() -> list[list[str]]:
    """The ``$ benchrunner ...`` lines of the tour's console blocks."""
    section = tour_section((REPO / "README.md").read_text())
    return [
        shlex.split(line)
        for language, script in tour_blocks(section)
        if language == "console"
        for line in script.splitlines()
    ]


def test_readme_set_up_commands_are_the_makefile_targets() -> None:
    readme = (REPO / "README.md").read_text()
    makefile = (REPO / "Makefile").read_text()
    assert "make up" in readme and "make test" in readme
    assert re.search(r"^up: .*\n\t\$\(BIN\)/benchrunner up$", makefile, re.M)
    assert "make test" in (REPO / ".ci" / "run").read_text()


def test_readme_names_every_package_make_test_installs() -> None:
    """The README's list of the Debian packages ``make test`` installs is the script's."""
    script = (REPO / "tools" / "system-packages.sh").read_text()
    installed = set(re.findall(r"\]=([\w.+-]+)", script))
    assert "runc" in installed, "the script's tables changed shape"
    listed = re.search(r"with `apt-get`: (.*?);", (REPO / "README.md").read_text(), re.S)
    assert listed is not None, "the README no longer lists the packages"
    assert {name.strip() for name in listed.group(1).split(",")} == installed


def _run_block(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A block as a reader pastes it into bash, in the checkout; fails on any failing command."""
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, f"{script}\nexited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def reset_paths(readme: str) -> list[str]:
    """The home-relative paths the README's ``rm`` commands remove (``~/`` stripped)."""
    return re.findall(r"`rm (?:-rf )?~/([^`\s]+)`", readme)


def _banner_commands(up_log: str) -> set[str]:
    """The ``benchrunner run ...`` commands ``up``'s banner suggests."""
    return {m.strip() for m in re.findall(r"(benchrunner run [^│\n]*?--wait)", up_log)}


def test_benchrunner_up_and_the_tour(tmp_path: Path) -> None:
    """``benchrunner up``, then every command block of the README's tour exactly as printed,
    in order, as a new user pastes them (the tour's curl finds host and token itself)."""
    port = free_port()
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "BENCHRUNNER_PORT": str(port),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    for name in ("BENCHRUNNER_CONFIG", "BENCHRUNNER_HOST", "BENCHRUNNER_TOKEN", "TOKEN"):
        env.pop(name, None)
    with benchrunner_up(
        [sys.executable, "-m", "benchrunner", "up"], env, tmp_path, timeout=60, cwd=REPO
    ) as up:
        settings = up.settings
        assert settings["host"] == f"http://127.0.0.1:{port}"
        config = tmp_path / ".config" / "benchrunner" / "config.toml"
        assert oct(config.stat().st_mode & 0o777) == "0o600"
        assert httpx.get(f"{settings['host']}/docs").status_code == 200

        section = tour_section((REPO / "README.md").read_text())
        tour_commands = {line for _, script in tour_blocks(section) for line in script.splitlines()}
        banner = _banner_commands(up.log.read_text())
        assert banner and banner <= tour_commands, (banner, tour_commands)

        outputs = [_run_block(script, env).stdout for _, script in tour_blocks(section)]
        printed = "\n".join(outputs)
        assert printed.count("processed") >= 2, printed
        # The sleep's latency in nanoseconds: about 20,000,000 ns, never "20 ns".
        slept = re.search(r"sleep\s*│\s*Latency\s*│\s*([\d,]+) ns", printed)
        assert slept is not None, printed
        assert 20_000_000 <= int(slept.group(1).replace(",", "")) < 2_000_000_000
        # The curl block ends with the job the POST created, read back by its uuid.
        job = json.loads(next(o for o in outputs if o.lstrip().startswith("{")))
        assert job["kind"] == "template" and job["status"] in (
            "pending",
            "claimed",
            "running",
            "completed",
            "processed",
        ), job
        with BenchrunnerClient(settings["host"], settings["token"]) as client:
            testbeds = {t.name for t in client.list_dimensions("demo", "testbeds")}
        assert testbeds == {"localhost"}, "the CLI's runs and the curl run: one testbed"
        assert not (REPO / "results.json").exists()
    # The README's reset removes everything ``up`` and the tour wrote in the home directory.
    removed = reset_paths((REPO / "README.md").read_text())
    assert removed, "the README no longer says how to reset a local install"
    written = [
        path.relative_to(tmp_path).as_posix()
        for path in tmp_path.rglob("*")
        if path.is_file() and path.name != "up.log"  # the test's own log of ``up``
    ]
    left = [p for p in written if not any(p == r or p.startswith(f"{r}/") for r in removed)]
    assert not left, f"the README's reset leaves {left} behind"
