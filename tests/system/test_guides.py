"""The how-to guides run as written, against a real server: the CI files a user copies
(docs/how-to/ci/) step by step, and every code block a guide marks ``<!-- runnable -->``.

A guide that drifts from the CLI or the server fails here instead of failing its reader."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.harness import REPO, Deployment

pytestmark = pytest.mark.engine_independent

GUIDES = REPO / "docs" / "how-to"
RUNNABLE = "<!-- runnable -->"
BLOCK = re.compile(re.escape(RUNNABLE) + r"\n```(sh|console)\n(.*?)```", re.S)
STEP_TIMEOUT = 120

BENCHMARK = """\
import os
import time


def test_sort(benchmark):
    # Mostly a fixed sleep, so that a loaded machine's noise stays small beside it; the test
    # makes the code slower with BENCH_SLOW_MS, as a regression would.
    delay = (20 + float(os.environ.get("BENCH_SLOW_MS", "0"))) / 1000
    data = list(range(2000, 0, -1))

    def work():
        time.sleep(delay)
        return sorted(data)

    benchmark.pedantic(work, rounds=5, iterations=1)
"""


@dataclass
class Step:
    name: str
    script: str
    always: bool = False


def github_steps() -> tuple[dict[str, str], list[Step]]:
    """The benchmark job's literal environment and its ``run`` steps, but the install: the test
    has the CLI already (expressions such as ``${{ vars.X }}`` are set by the test)."""
    workflow = yaml.safe_load((GUIDES / "ci" / "github-actions.yml").read_text())
    job = workflow["jobs"]["benchmarks"]
    env = {k: str(v) for k, v in job["env"].items() if "${{" not in str(v)}
    steps = []
    for step in job["steps"]:
        if "run" not in step or step.get("id") == "install":
            continue
        assert "${{" not in step["run"], f"the test cannot evaluate {step['run']!r}"
        steps.append(Step(step.get("name", step["run"]), step["run"], step.get("if") == "always()"))
    return env, steps


def gitlab_steps() -> tuple[dict[str, str], list[Step]]:
    """The job's variables, its ``script`` (one shell, as GitLab runs it) and ``after_script``
    (a shell of its own, run whatever the script did); not the ``before_script``'s install."""
    pipeline = yaml.safe_load((GUIDES / "ci" / "gitlab-ci.yml").read_text())
    job = pipeline["benchmarks"]
    env = {k: str(v) for k, v in job.get("variables", {}).items()}
    steps = [Step("script", "\n".join(job["script"]))]
    steps.append(Step("after_script", "\n".join(job["after_script"]), always=True))
    return env, steps


def runnable_blocks() -> list[tuple[str, str]]:
    """(guide, script) of each block a guide marks runnable; console blocks give their ``$``
    lines."""
    blocks = []
    for guide in sorted(GUIDES.glob("*.md")):
        for kind, body in BLOCK.findall(guide.read_text()):
            if kind == "console":
                body = "\n".join(line[2:] for line in body.splitlines() if line.startswith("$ "))
            blocks.append((guide.name, body))
    return blocks


@dataclass
class Outcome:
    codes: dict[str, int]
    output: str


def run_steps(steps: list[Step], cwd: Path, env: dict[str, str]) -> Outcome:
    """Each step in bash with ``-eo pipefail`` (GitHub's and GitLab's default), skipping the
    steps after a failure but those that run always."""
    codes: dict[str, int] = {}
    output = []
    failed = False
    for step in steps:
        if failed and not step.always:
            continue
        done = subprocess.run(
            ["bash", "-eo", "pipefail", "-c", step.script],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT,
        )
        codes[step.name] = done.returncode
        output.append(f"--- {step.name}: exit {done.returncode}\n{done.stdout}{done.stderr}")
        failed = failed or done.returncode != 0
    return Outcome(codes, "\n".join(output))


@pytest.fixture(scope="module")
def server(shared_deployment: Deployment) -> Deployment:
    return shared_deployment


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A user's repository: a pytest-benchmark benchmark under ``benchmarks/``."""
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "test_sort.py").write_text(BENCHMARK)
    return tmp_path


def ci_env(server: Deployment, project: str, tmp: Path, **more: str) -> dict[str, str]:
    return {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp),
        "LANG": "C.UTF-8",
        "BENCHRUNNER_HOST": server.server.url,
        "BENCHRUNNER_TOKEN": server.server.token,
        "BENCHRUNNER_PROJECT": project,
        "BENCHRUNNER_CONFIG": str(tmp / "no-config.toml"),
        # A CI machine has pytest-benchmark alone; this environment has every plugin of the
        # suite, whose loading would only slow each benchmark step down.
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTEST_PLUGINS": "pytest_benchmark.plugin",
        **more,
    }


def new_project(server: Deployment) -> str:
    slug = f"guide-{secrets.token_hex(4)}"
    with server.admin() as client:
        client.create_project(server.org, slug, "public")
    return slug


def names(server: Deployment, project: str, kind: str) -> set[str]:
    """The names of the project's branches or testbeds."""
    answer = httpx.get(
        f"{server.server.url}/v0/projects/{project}/{kind}",
        headers={"Authorization": f"Bearer {server.server.token}"},
        params={"per_page": 255},
    )
    answer.raise_for_status()
    return {item["name"] for item in answer.json()}


def sha() -> str:
    return secrets.token_hex(20)


def test_github_actions_workflow_passes_then_fails_a_regression(
    server: Deployment, checkout: Path
) -> None:
    """main's pushes build a history and pass; a pull request that made the code slower fails
    its step, and the summary step still writes the alert to the run's page."""
    literal, steps = github_steps()
    project = new_project(server)
    summary = checkout / "summary.md"

    def workflow(branch: str, **more: str) -> Outcome:
        env = ci_env(
            server,
            project,
            checkout,
            **literal,
            BENCHRUNNER_BRANCH=branch,
            GITHUB_SHA=sha(),
            GITHUB_STEP_SUMMARY=str(summary),
            **more,
        )
        return run_steps(steps, checkout, env)

    for _ in range(3):
        pushed = workflow("main")
        assert set(pushed.codes.values()) == {0}, pushed.output
    assert not summary.exists() or not summary.read_text().strip(), "no alert, no summary"

    slow = workflow("feature-slow", BENCH_SLOW_MS="200")
    codes = list(slow.codes.values())
    assert codes == [0, 1, 0], slow.output  # benchmarks ran, the send failed, the summary ran
    assert "1 alert" in summary.read_text(), slow.output

    assert names(server, project, "branches") == {"main", "feature-slow"}
    assert names(server, project, "testbeds") == {"ci-ubuntu"}


def test_gitlab_ci_job_on_the_default_branch_and_a_merge_request(
    server: Deployment, checkout: Path
) -> None:
    literal, steps = gitlab_steps()
    project = new_project(server)

    def pipeline(**ci: str) -> Outcome:
        env = ci_env(server, project, checkout, **literal, CI_COMMIT_SHA=sha(), **ci)
        return run_steps(steps, checkout, env)

    default = pipeline(CI_COMMIT_REF_NAME="main")
    assert set(default.codes.values()) == {0}, default.output
    merge = pipeline(CI_COMMIT_REF_NAME="main", CI_MERGE_REQUEST_SOURCE_BRANCH_NAME="topic")
    assert set(merge.codes.values()) == {0}, merge.output
    assert "test_sort" in (checkout / "benchrunner-report.md").read_text()
    assert names(server, project, "branches") == {"main", "topic"}
    assert names(server, project, "testbeds") == {"ci-gitlab"}


def guide_blocks() -> Iterator[Any]:
    for guide, script in runnable_blocks():
        yield pytest.param(script, id=guide)


@pytest.mark.parametrize("script", list(guide_blocks()))
def test_runnable_guide_block(server: Deployment, tmp_path: Path, script: str) -> None:
    project = new_project(server)
    env = ci_env(server, project, tmp_path)
    outcome = run_steps([Step("block", script)], tmp_path, env)
    assert outcome.codes == {"block": 0}, f"{script}\n{outcome.output}"


def test_every_command_block_of_a_guide_is_run_or_says_why_not() -> None:
    """A guide's shell block is run by the test above, or says why it cannot be: none is left
    out silently."""
    unaccounted = []
    for guide in sorted(GUIDES.glob("*.md")):
        lines = guide.read_text().splitlines()
        for number, line in enumerate(lines, 1):
            if line in ("```sh", "```console"):
                before = lines[number - 2] if number > 1 else ""
                if before != RUNNABLE and not before.startswith("<!-- not run: "):
                    unaccounted.append(f"{guide.name}:{number}")
    assert not unaccounted, f"mark {RUNNABLE} or <!-- not run: why -->: {unaccounted}"
    assert len(runnable_blocks()) >= 2, "the guides' runnable blocks are no longer found"
