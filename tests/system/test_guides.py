"""The how-to guides run as written, against a real server: the CI files a user copies
(docs/how-to/ci/) step by step, and every code block a page of docs/ marks ``<!-- runnable -->``
(the guides', and the few other pages' that show commands).

A block may name what it needs after the colon, ``<!-- runnable: runner alert -->``: the test
provides each need for real before the block runs (see ``NEEDS``), and a guide's placeholders
are the shell variables a need sets (``$ALERT``), as its reader sets them.

A guide that drifts from the CLI or the server fails here instead of failing its reader."""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import os
import re
import resource
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from benchrunner.api.reports import RunAnswer
from benchrunner.api.thresholds import ThresholdModelBody
from tests import acme_ca, systemd_container
from tests.databases import postgres_database
from tests.harness import (
    REPO,
    Deployment,
    RunnerProcess,
    ServerProcess,
    cli,
    deploy,
    wait_until,
)
from tests.object_store import s3_server
from tests.oci_layout import busybox_image, write_layout, write_oci_archive
from tests.registry_support import registry_token, v2
from tests.snapshot_mirror import snapshot_mirror
from tests.system import test_tuned_runner_real_host as real_host
from tests.system.test_images import IMAGE_KINDS, SOURCE_DATE_EPOCH, built_image, image_cache
from tests.system.test_webhooks import Receiver, receiving

pytestmark = pytest.mark.engine_independent

DOCS = REPO / "docs"
GUIDES = DOCS / "how-to"
GENERATED = DOCS / "reference"
"""Pages written from the code (make docs-reference), with no shell block of their own."""
RUNNABLE = "<!-- runnable -->"
MARKER = re.compile(r"<!-- runnable(?:: ([a-z0-9=. -]+?))? -->")
BLOCK = re.compile(MARKER.pattern + r"\n```(sh|console|python)\n(.*?)```", re.S)
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


@dataclass
class Block:
    """A runnable block of a guide: its language, what it needs, and its script (a console
    block's ``$`` lines)."""

    guide: str
    line: int
    kind: str
    needs: tuple[str, ...]
    script: str

    @property
    def name(self) -> str:
        return f"{self.guide}:{self.line}"


def pages() -> list[Path]:
    """Every page of docs/ that may show commands: all but the generated reference."""
    return [page for page in sorted(DOCS.rglob("*.md")) if GENERATED not in page.parents]


def runnable_blocks() -> list[Block]:
    """The runnable blocks of every page, named by the page's path under docs/."""
    blocks = []
    for page in pages():
        text = page.read_text()
        guide = page.relative_to(DOCS).as_posix()
        for found in BLOCK.finditer(text):
            needs, kind, body = found.groups()
            if kind == "console":
                body = "\n".join(line[2:] for line in body.splitlines() if line.startswith("$ "))
            line = text.count("\n", 0, found.start()) + 1
            blocks.append(Block(guide, line, kind, tuple((needs or "").split()), body))
    return blocks


@dataclass
class Outcome:
    codes: dict[str, int]
    output: str


def run_steps(
    steps: list[Step],
    cwd: Path,
    env: dict[str, str],
    timeout: float = STEP_TIMEOUT,
    within: tuple[str, ...] = (),
) -> Outcome:
    """Each step in bash with ``-eo pipefail`` (GitHub's and GitLab's default), skipping the
    steps after a failure but those that run always; ``within`` is a command that runs bash."""
    codes: dict[str, int] = {}
    output = []
    failed = False
    for step in steps:
        if failed and not step.always:
            continue
        done = subprocess.run(
            [*within, "bash", "-eo", "pipefail", "-c", step.script],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        codes[step.name] = done.returncode
        output.append(f"--- {step.name}: exit {done.returncode}\n{done.stdout}{done.stderr}")
        failed = failed or done.returncode != 0
    return Outcome(codes, "\n".join(output))


GUIDE_TEMPLATES = """
[templates."my.bench"]
description = "The GitHub Actions guide's template: sort n numbers, the time it took (ns) as a latency"
command = ["python3", "-c", "import json,sys,time; n=int(sys.argv[1]); t=time.perf_counter_ns(); sorted(range(n, 0, -1)); print(json.dumps({'sort': {'latency': {'value': time.perf_counter_ns() - t}}}))", "{n}"]
timeout = 60

[templates."my.bench".args.n]
type = "int"
min = 1
max = 10000000

[templates."my.sleep"]
description = "The duets guide's template: sleep ms milliseconds, the time it took (ns) as a latency"
command = ["python3", "-c", "import json,sys,time; t=time.perf_counter_ns(); time.sleep(int(sys.argv[1])/1000); print(json.dumps({'sleep': {'latency': {'value': time.perf_counter_ns() - t}}}))", "{ms}"]
timeout = 60

[templates."my.sleep".args.ms]
type = "int"
min = 0
max = 1000

[templates."sortlib.bench"]
description = "The bisect guide's template: the result a commit of the guides' repository keeps in result.json, steady, so that each duet decides at once"
command = ["sh", "-c", "git -C \\"$1\\" show \\"$2:result.json\\"", "sh", "{repo}", "{commit}"]
timeout = 60

[templates."sortlib.bench".args.commit]
type = "string"
"""  # noqa: E501
"""Templates the guides name: ``{repo}`` is the bisect guide's repository, built per module."""

SLOWER_AT = 4
"""The commit of the bisect guide's repository that doubles ``sort``'s latency."""


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def sortlib(path: Path) -> list[str]:
    """The bisect guide's repository: v1.4.0, then six commits on main; from the fourth on,
    ``sort`` takes twice as long."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    commits = []
    for index in range(7):
        value = 200 if index >= SLOWER_AT else 100
        (path / "result.json").write_text(json.dumps({"sort": {"latency": {"value": value}}}))
        (path / "notes.txt").write_text(f"commit {index}\n")
        git(path, "add", "result.json", "notes.txt")
        git(path, "commit", "-q", "-m", f"commit {index}")
        commits.append(git(path, "rev-parse", "HEAD"))
        if index == 0:
            git(path, "tag", "v1.4.0")
    return commits


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with receiving() as found:
        yield found


@dataclass
class Guides:
    """The module's server with what the guides' blocks need, made once and shared."""

    server: Deployment
    repo: Path
    commits: list[str]
    receiver: Receiver
    host: Path
    """Upper and work directories of the overlays (``HOST_OVERLAID``) host blocks write."""
    runner: RunnerProcess | None = None
    host_ran: set[str] = field(default_factory=set)

    def podman_limits(self) -> Path:
        """A ``containers.conf`` whose containers get this machine's own limits of open files
        and processes (at most ``pid_max``), which root here cannot raise."""
        conf = self.host.parent / "containers.conf"
        if not conf.exists():
            _, files = resource.getrlimit(resource.RLIMIT_NOFILE)
            _, processes = resource.getrlimit(resource.RLIMIT_NPROC)
            pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
            if processes == resource.RLIM_INFINITY or processes > pid_max:
                processes = pid_max
            limits = [f"nofile={files}:{files}", f"nproc={processes}:{processes}"]
            conf.write_text(f"[containers]\ndefault_ulimits = {json.dumps(limits)}\n")
        return conf

    def podman_storage(self) -> Path:
        """A ``storage.conf`` of the module's own: podman's images and containers under the
        module's directory, not the machine's ``/var/lib/containers``."""
        storage = self.host.parent / "containers"
        conf = storage / "storage.conf"
        if not conf.exists():
            storage.mkdir(exist_ok=True)
            conf.write_text(
                f'[storage]\ndriver = "vfs"\ngraphroot = "{storage / "graph"}"\n'
                f'runroot = "{storage / "run"}"\n'
            )
        return conf

    def start_runner(self) -> None:
        """One runner process of the specs the guides name, started by the first block that
        needs it."""
        if self.runner is None:
            self.runner = self.server.runner_process("guides", specs=["small", "bench-box"])
            self.runner.start()


@pytest.fixture(scope="module")
def guides(tmp_path_factory: pytest.TempPathFactory, receiver: Receiver) -> Iterator[Guides]:
    with guides_server(tmp_path_factory.mktemp("guides"), receiver) as found:
        yield found


@contextlib.contextmanager
def guides_server(tmp: Path, receiver: Receiver) -> Iterator[Guides]:
    """A server (SQLite) with the guides' templates and the spec ``bench-box``, the bisect
    guide's repository, and a scratch directory for the host blocks' overlays."""
    repo = tmp / "sortlib"
    commits = sortlib(repo)
    templates = GUIDE_TEMPLATES.replace("{repo}", str(repo))
    env = {
        "BENCHRUNNER_WEBHOOK_ALLOW_PRIVATE": "true",  # the receiver is on loopback
        "BENCHRUNNER_WEBHOOK_POLL_INTERVAL": "0.5",
    }
    db = f"sqlite:///{tmp / 'benchrunner.db'}"
    with deploy(tmp, db, extra_templates=templates, env=env) as deployment:
        with deployment.admin() as client:
            for spec in ("bench-box", "tuned"):  # "tuned": the tuning blocks' runner's alone
                client.create_spec(
                    name=spec, architecture="x86_64", cpu=1, memory=1 << 30, disk=1 << 30,
                    network=False,
                )  # fmt: skip
        yield Guides(deployment, repo, commits, receiver, tmp / "host")


@pytest.fixture(scope="module")
def server(guides: Guides) -> Deployment:
    return guides.server


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
        # The session's own temporary directory (tests/conftest.py): what a step leaves there
        # is found, and a pytest step cleans up no other session's directories.
        "TMPDIR": tempfile.gettempdir(),
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


@dataclass
class Setting:
    """What a block runs with: its environment and working directory."""

    guides: Guides
    env: dict[str, str]
    cwd: Path
    script: str = ""
    """The block's own text, for what a need reads in it."""
    output: str = ""
    """What the block printed, once it ran."""
    exit_codes: frozenset[int] = frozenset({0})
    """The exit statuses that say the block did what its guide says (its last command's)."""
    expected: list[str] = field(default_factory=list)
    """What the block's output says when it did what its guide says it does."""
    within: tuple[str, ...] = ()
    checks: list[Callable[[], None]] = field(default_factory=list)
    """What must hold once the block ran (it exited with one of ``exit_codes``)."""
    cleanups: list[Callable[[], None]] = field(default_factory=list)
    """What undoes, after the block whatever it did, what it made outside the test's files."""
    machine: systemd_container.Machine | None = None
    """The systemd machine the block runs in (``need_systemd``)."""

    def cli(self, *args: str) -> str:
        return cli(*args, env=self.env).stdout

    def cli_json(self, *args: str) -> Any:
        return json.loads(self.cli(*args, "--json"))


def need_runner(setting: Setting) -> None:
    """A runner process serving the specs (``small``, ``bench-box``) and templates named."""
    setting.guides.start_runner()


def need_job(setting: Setting) -> None:
    """A job that the runner takes and that writes a numbered line to stderr every 0.2 s until,
    a few seconds into the block, its gate file appears: sets ``$JOB``; the block must show its
    first line, as it was written, and the job must have ended."""
    setting.guides.start_runner()
    text = f"guide-{secrets.token_hex(4)}"
    gate = setting.cwd / "gate"
    args = {"gate": str(gate), "ms": 200, "text": text, "stream": "stderr"}
    project = setting.env["BENCHRUNNER_PROJECT"]
    setting.env["JOB"] = setting.guides.server.submit("bench.ticker", args, project=project)
    opened = threading.Timer(5, gate.touch)
    opened.start()
    setting.cleanups.append(gate.touch)
    setting.cleanups.append(opened.cancel)
    setting.expected.append(f"tick 0 {text}")


def need_preflight(setting: Setting) -> None:
    """The block ends with ``runner preflight``'s verdict of this machine, whatever it is: 0
    fit, 1 not fit (a VM: a hypervisor), 3 some checks unreadable, never 2 (usage); its last
    line gives the same exit status."""
    setting.exit_codes = frozenset({0, 1, 3})

    def the_verdict_is_the_exit_status() -> None:
        verdicts = re.findall(r"^verdict: .+ \(exit (\d)\)$", setting.output, re.M)
        assert len(verdicts) == 1, setting.output
        assert f"--- block: exit {verdicts[0]}\n" in setting.output, setting.output

    setting.checks.append(the_verdict_is_the_exit_status)


def need_duet_alert(setting: Setting) -> None:
    """The block's duet must raise one duet alert, its contender slower (limit ``upper``),
    and fail on it as ``--err`` asks (exit 1)."""
    setting.exit_codes = frozenset({1})
    setting.expected.append("1 alert detected in report")
    project = setting.env["BENCHRUNNER_PROJECT"]

    def raised_a_duet_alert() -> None:
        with setting.guides.server.admin() as client:
            alerts = client.list_alerts(project)
        assert [(a.kind, a.limit) for a in alerts] == [("duet", "upper")], alerts

    setting.checks.append(raised_a_duet_alert)


def need_tuning(setting: Setting) -> None:
    """The block tunes this machine's real host (``runner up --tune``, ``runner restore``), so
    it runs alone, in ``test_runnable_tuning_block`` (host_wide), as root; the templates are in
    ``templates.toml``, and a ``runner up --once`` finds a job of ``my.bench`` queued for the
    spec ``tuned``, which no other runner serves, and must process it, saying for each setting
    that it tuned it or could not. Afterwards every setting tuning may change reads as before
    and no tuning state is left; ``runner restore`` runs whatever happened."""
    assert not real_host.STATE.exists(), f"{real_host.STATE} is left: `runner restore`"
    before = real_host.host_settings()
    setting.cleanups.append(real_host.restore_host)
    shutil.copy(setting.guides.server.server.templates, setting.cwd / "templates.toml")
    if "runner up" in setting.script:
        project = setting.env["BENCHRUNNER_PROJECT"]
        with setting.guides.server.admin() as client:
            body = {"project": project, "spec": "tuned", "template": "my.bench",
                    "args": {"n": 100000}, "settings": {"adapter": "json"}}  # fmt: skip
            job = str(client.run(body).job)

        def processed_tuned() -> None:
            found = setting.guides.server.job(job, project)
            assert found.status == "processed", found
            applied, refused = real_host.outcomes(setting.output)
            assert applied.keys() | refused == real_host.SETTINGS, setting.output

        setting.checks.append(processed_tuned)

    def put_back() -> None:
        assert real_host.host_settings() == before
        assert not real_host.STATE.exists()

    setting.checks.append(put_back)


def need_console_users(setting: Setting) -> None:
    """A server of its own, its database named by ``$BENCHRUNNER_DB`` as on the server's
    machine, and the password files ``ops.password`` and ``ada.password``: the block must leave
    ops@example.com a server admin and Ada a user who is not, each with a console password."""
    home = setting.cwd / "console-server"
    home.mkdir()
    (home / "templates.toml").write_text("")
    db = f"sqlite:///{home / 'benchrunner.db'}"
    server = ServerProcess(home / "data", home / "templates.toml", db)
    server.data_dir.mkdir()
    setting.cleanups.append(server.kill)
    server.start()
    setting.env.update(BENCHRUNNER_HOST=server.url, BENCHRUNNER_DB=db)
    del setting.env["BENCHRUNNER_TOKEN"]  # the block's own, from its bootstrap
    for name in ("ops", "ada"):
        (setting.cwd / f"{name}.password").write_text(f"{name}-{secrets.token_urlsafe(12)}\n")

    def made() -> None:
        with server.client() as client:
            users = {u.email: u for u in client.list_users(per_page=100)}
        assert users["ops@example.com"].admin is True, users
        assert (users["ada@example.com"].name, users["ada@example.com"].admin) == (
            "Ada",
            False,
        ), users

    setting.checks.append(made)


def need_ci(setting: Setting) -> None:
    """What a CI job's environment has: the commit, the pull request's and the run's branch."""
    setting.env.update(GITHUB_SHA=sha(), GITHUB_HEAD_REF="topic", BENCHRUNNER_BRANCH="main")


def need_benchmarks(setting: Setting) -> None:
    """pytest-benchmark's results of a real benchmark in ``.benchmarks/results.json``."""
    (setting.cwd / "benchmarks").mkdir()
    (setting.cwd / "benchmarks" / "test_sort.py").write_text(BENCHMARK)
    command = [sys.executable, "-m", "pytest", "benchmarks", "--benchmark-only", "-q", "-p",
               "no:cacheprovider", "--benchmark-json", ".benchmarks/results.json"]  # fmt: skip
    done = subprocess.run(
        command, cwd=setting.cwd, env=setting.env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def need_alert(setting: Setting) -> None:
    """A history on main and ci, a threshold, and a report that raised an alert: sets
    ``$THRESHOLD``, ``$REPORT`` and ``$ALERT``."""
    project = setting.env["BENCHRUNNER_PROJECT"]
    with setting.guides.server.admin() as client:

        def run(value: int) -> RunAnswer:
            now = dt.datetime.now(dt.UTC).isoformat()
            result = {"sort": {"latency": {"value": value}}}
            body = {"project": project, "branch": "main", "testbed": "ci", "start_time": now,
                    "end_time": now, "settings": {"adapter": "json"},
                    "results": [json.dumps(result)]}  # fmt: skip
            return client.run(body)

        run(100)
        run(102)
        model = ThresholdModelBody(test="percentage", upper_boundary=0.1, min_sample_size=2)
        threshold = client.create_threshold(
            project, branch="main", testbed="ci", measure="latency", model=model
        )
        report = run(150)
        (alert,) = client.list_alerts(project, report=report.uuid)
    setting.env.update(THRESHOLD=threshold.uuid, REPORT=report.uuid, ALERT=alert.uuid)


def need_webhook(setting: Setting) -> None:
    """A webhook of the project, to the test's receiver: sets ``$WEBHOOK``."""
    hook = setting.cli_json("webhook", "create", setting.guides.receiver.url)
    setting.env["WEBHOOK"] = hook["uuid"]


def need_image(setting: Setting) -> None:
    """An image ``./my-bench-oci`` (an OCI layout) and ``./image.tar`` (an OCI archive), each
    tagged v1."""
    layout = write_layout(setting.cwd / "my-bench-oci", [busybox_image()], tag="v1")
    write_oci_archive(layout, setting.cwd / "image.tar")


def need_registry(setting: Setting) -> None:
    """``$REGISTRY``: the server's host and port, as registry clients name it."""
    setting.env["REGISTRY"] = setting.guides.server.server.url.removeprefix("http://")


def need_repo(setting: Setting) -> None:
    """The block runs in the bisect guide's repository (see ``sortlib``)."""
    setting.cwd = setting.guides.repo


def need_culprit(setting: Setting) -> None:
    """The block's output names the commit of the bisect guide's repository that made
    ``sort`` slower."""
    setting.expected.append(f"first bad commit {setting.guides.commits[SLOWER_AT]}")


HOST_OVERLAID = ("etc", "opt", "root")
"""The directories a ``host`` block changes through an overlay (the configuration and units,
the virtual environment in ``/opt/benchrunner``, the admin's password and token)."""

HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""root's ``PATH`` on Debian: the system's ``python3``, not the test's environment's."""


def need_host(setting: Setting) -> None:
    """The block changes the machine it runs on, as root, from a checkout: it runs in a mount
    namespace of its own where ``/etc``, ``/opt`` and ``/root`` are overlays whose changes go to the
    module's directory and ``/tmp`` is its own, so the test machine's files are left as they
    were. Its ``PATH`` and ``HOME`` are root's (pip's cache is root's); ``$EDITOR`` keeps the
    example files as they are."""
    for directory in HOST_OVERLAID:
        (setting.guides.host / directory / "upper").mkdir(parents=True, exist_ok=True)
        (setting.guides.host / directory / "work").mkdir(exist_ok=True)
    overlay = (
        'mount -t overlay overlay -o "lowerdir=/$d,upperdir=$1/$d/upper,workdir=$1/$d/work" /$d'
    )
    # A checkout under /tmp (a CI clone) is bound back over the private /tmp, through the
    # overlaid /root, so that the block's relative paths ("pip wheel .") still find it.
    keep_checkout = (
        'case "$PWD" in /tmp/*) mkdir -p /root/.checkout && mount --bind "$PWD" /root/.checkout '
        '&& mount -t tmpfs tmpfs /tmp && mkdir -p "$PWD" && mount --move /root/.checkout "$PWD" '
        '&& cd "$PWD" ;; *) mount -t tmpfs tmpfs /tmp ;; esac'
    )
    script = (
        f"for d in {' '.join(HOST_OVERLAID)}; do {overlay} || exit; done; "
        f'{{ {keep_checkout}; }} && shift && exec "$@"'
    )
    namespace = ("unshare", "--mount", "--propagation", "private")
    setting.within = (*namespace, "sh", "-c", script, "sh", str(setting.guides.host))
    setting.cwd = REPO
    # The session's TMPDIR lies under the /tmp that the block's own replaces.
    setting.env.update(EDITOR="true", PATH=HOST_PATH, HOME="/root", TMPDIR="/tmp")


def need_previous_report(setting: Setting) -> None:
    """Reports on main of the bisect guide's repository up to ``HEAD~3`` (the guide's
    ``$PREV``), and a threshold of ``sort`` whose alerts start a bisection by themselves: the
    block's run at ``HEAD`` alerts, and its bisection must name the commit that did it."""
    project = setting.env["BENCHRUNNER_PROJECT"]
    commits = setting.guides.commits
    with setting.guides.server.admin() as client:
        for commit in commits[-5:-3]:
            now = dt.datetime.now(dt.UTC).isoformat()
            result = git(setting.guides.repo, "show", f"{commit}:result.json")
            body = {"project": project, "branch": "main", "testbed": "localhost",
                    "hash": commit, "start_time": now, "end_time": now,
                    "settings": {"adapter": "json"}, "results": [result]}  # fmt: skip
            client.run(body)
        model = ThresholdModelBody(test="percentage", upper_boundary=0.1, min_sample_size=2)
        client.create_threshold(  # the bisection under test, not confirmations or noise
            project, branch="main", testbed="localhost", measure="latency", model=model,
            bisect=True, confirm=0, alert_when_noisy=True,
        )  # fmt: skip

    def bisected() -> Any:
        """The bisection of the threshold's alert, once it ended (the bisection's own duets
        may raise duet alerts besides)."""
        with setting.guides.server.admin() as client:
            (alert,) = [a for a in client.list_alerts(project) if a.kind != "duet"]
            found = client.get_alert(project, alert.uuid)
        bisection = {} if found.bisection is None else found.bisection.model_dump(mode="json")
        return bisection if bisection.get("state") not in (None, "pending", "running") else None

    def named_the_culprit() -> None:
        bisection = wait_until(bisected, timeout=120, interval=0.5, message="the bisection")
        assert bisection["state"] == "done", bisection
        assert bisection["result"]["culprit"]["commit"] == commits[SLOWER_AT], bisection

    setting.checks.append(named_the_culprit)


def postgres(*args: str, query: str | None = None) -> str:
    """A PostgreSQL client program run as the ``postgres`` OS user, as the deploy guide does;
    ``query`` goes to its standard input (where psql substitutes ``:'name'``)."""
    done = subprocess.run(
        ["sudo", "-u", "postgres", *args], input=query, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


DEPLOY_DATABASE = "benchrunner"
"""The role and database the deploy guide creates."""


def absent_from_the_cluster() -> None:
    query = "SELECT rolname FROM pg_roles WHERE rolname = :'name'"
    existing = postgres("psql", "-XAt", "-v", f"name={DEPLOY_DATABASE}", query=query)
    assert not existing, f"the role {DEPLOY_DATABASE} exists already on this machine's cluster"


def dropped() -> None:
    postgres("dropdb", "--if-exists", DEPLOY_DATABASE)
    postgres("dropuser", "--if-exists", DEPLOY_DATABASE)


def need_postgres(setting: Setting) -> None:
    """The distribution's PostgreSQL cluster on this machine, its ``postgres`` OS user and its
    Unix socket, where the deploy guide's role and database do not exist yet; the block must
    make the database owned by the role, and both are dropped afterwards."""
    absent_from_the_cluster()

    def owned_by_the_role() -> None:
        query = "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = :'name'"
        owner = postgres("psql", "-XAt", "-v", f"name={DEPLOY_DATABASE}", query=query)
        assert owner == DEPLOY_DATABASE, owner

    setting.cleanups.append(dropped)
    setting.checks.append(owned_by_the_role)


def deploy_database(setting: Setting) -> None:
    """The role and database the deploy guide's step 2 creates, made as it does on the
    machine's cluster (``server.env`` names them) and dropped afterwards."""
    absent_from_the_cluster()
    setting.cleanups.append(dropped)
    postgres("createuser", DEPLOY_DATABASE)
    postgres("createdb", "--owner", DEPLOY_DATABASE, DEPLOY_DATABASE)


def need_deploy_database(setting: Setting) -> None:
    """The deploy guide's database (``deploy_database``); the block must leave the admin
    ``ops@example.com`` in it and its token in ``/root/ops.token``."""
    deploy_database(setting)

    def bootstrapped() -> None:
        query = "SELECT count(*) FROM \"user\" WHERE email = :'email'"
        email = "email=ops@example.com"
        admins = postgres("psql", "-XAt", "-d", DEPLOY_DATABASE, "-v", email, query=query)
        assert admins == "1", admins
        token = setting.guides.host / "root" / "upper" / "ops.token"
        assert token.read_text().strip(), "no token in /root/ops.token"
        copy = setting.guides.host / "etc" / "upper" / "benchrunner" / "ops.password"
        assert not copy.exists(), "the password's copy for the server's user is left behind"

    setting.checks.append(bootstrapped)


def need_fresh_server(setting: Setting) -> None:
    """A server of its own with nothing but its admin, as the deploy guide's is before its
    first spec: ``BENCHRUNNER_HOST`` and ``BENCHRUNNER_TOKEN`` are its, as the guide's reader
    sets them; the block must register the runner ``bench-01`` of the spec ``small``."""
    home = setting.cwd / "fresh-server"
    home.mkdir()
    templates = home / "templates.toml"
    templates.write_text("")
    server = ServerProcess(home / "data", templates, f"sqlite:///{home / 'benchrunner.db'}")
    server.data_dir.mkdir()
    setting.cleanups.append(server.kill)
    server.start()
    setting.env.update(BENCHRUNNER_HOST=server.url, BENCHRUNNER_TOKEN=server.token)

    def registered() -> None:
        with server.client() as client:
            runners = client.list_runners()
        assert [(r.name, [s.name for s in r.specs]) for r in runners] == [
            ("bench-01", ["small"])
        ], runners

    setting.checks.append(registered)


def manifest_digest(layout: Path) -> str:
    return str(json.loads((layout / "index.json").read_text())["manifests"][0]["digest"])


def need_image_build(setting: Setting) -> None:
    """``make images`` in the checkout, with the build cache that tests/system/test_images.py
    fills (built first when it is empty) as the reader's ``~/.cache/benchrunner-images``, and its
    ``SOURCE_DATE_EPOCH``: the block rebuilds only the layer of the code. It must leave both
    layouts in ``images/``, made of the same bytes as the test's own builds."""
    images = REPO / "images"
    assert not images.exists(), f"{images} exists already: the block would replace it"
    expected = {kind: built_image(kind, setting.cwd / f"wheel-{kind}") for kind in IMAGE_KINDS}
    cache = setting.cwd / "cache"
    cache.mkdir()
    (cache / "benchrunner-images").symlink_to(image_cache() / "stages")
    setting.env.update(XDG_CACHE_HOME=str(cache), SOURCE_DATE_EPOCH=SOURCE_DATE_EPOCH)
    setting.cwd = REPO
    setting.cleanups.append(lambda: shutil.rmtree(images, ignore_errors=True))

    def built_as_the_test_builds() -> None:
        for kind, layout in expected.items():
            assert manifest_digest(images / kind) == manifest_digest(layout), kind

    setting.checks.append(built_as_the_test_builds)


SNAPSHOT_NAME = "snapshot.debian.org"
SNAPSHOT_ADDRESS = "127.0.0.9"
"""The stand-in's loopback address: one of its own, port 80 as the block's URL has it."""

SNAPSHOT_URL = re.compile(r"DEBIAN_MIRROR=http://snapshot\.debian\.org/archive/debian/(\w+)")


def need_snapshot_mirror(setting: Setting) -> None:
    """``make images`` from a snapshot of Debian, as the guide's reader builds it: the block runs
    in a mount namespace of its own whose ``/etc/hosts`` (a copy, bound over the machine's) gives
    snapshot.debian.org the address of a stand-in (tests/snapshot_mirror.py: today's archive
    under the snapshot's paths; the test machine cannot reach the real one). The Debian layers
    are made anew, through the stand-in, in a stages directory of the block's own; the
    dependency layer tests/system/test_images.py keeps (its tar and its compressed form) is
    reused when what it is made of (deploy/images/venv_key.sh: Python's version, its venv and
    ensurepip modules, the pip and setuptools wheels) is the same in the snapshot, whatever the
    packages' Debian revisions. Both layouts must be in ``images/``, and the stand-in must have
    served the build's Release and packages under the block's timestamp."""
    (timestamp,) = SNAPSHOT_URL.findall(setting.script)
    images = REPO / "images"
    assert not images.exists(), f"{images} exists already: the block would replace it"
    assert not bound(SNAPSHOT_ADDRESS, 80), f"port 80 is taken on {SNAPSHOT_ADDRESS}"
    stack = contextlib.ExitStack()
    setting.cleanups.append(stack.close)
    mirror = stack.enter_context(snapshot_mirror(SNAPSHOT_ADDRESS))
    # Beside the test's cache (one file system), so that its dependency layer (the tar and its
    # compressed form) is a hard link.
    stages = image_cache() / f".snapshot-stages-{secrets.token_hex(4)}"
    stages.mkdir(parents=True)
    stack.callback(shutil.rmtree, stages, ignore_errors=True)
    for layer in (image_cache() / "stages").glob("venv-*.tar"):
        os.link(layer, stages / layer.name)
    for layout in (image_cache() / "stages").glob("layout-venv-*"):
        shutil.copytree(layout, stages / layout.name, copy_function=os.link)
    cache = setting.cwd / "cache"
    cache.mkdir()
    (cache / "benchrunner-images").symlink_to(stages)
    hosts = setting.cwd / "hosts"
    hosts.write_text(f"{Path('/etc/hosts').read_text()}\n{SNAPSHOT_ADDRESS} {SNAPSHOT_NAME}\n")
    bind = 'mount --bind "$1" /etc/hosts && shift && exec "$@"'
    namespace = ("unshare", "--mount", "--propagation", "private", "sh", "-c", bind, "sh")
    setting.within = (*namespace, str(hosts), *setting.within)
    setting.env.update(XDG_CACHE_HOME=str(cache), SOURCE_DATE_EPOCH=SOURCE_DATE_EPOCH)
    setting.cwd = REPO
    setting.cleanups.append(lambda: shutil.rmtree(images, ignore_errors=True))

    def built_from_the_snapshot() -> None:
        for kind in IMAGE_KINDS:
            assert manifest_digest(images / kind).startswith("sha256:"), kind
        paths = [path for (at, path) in mirror.served if at == timestamp]
        assert "dists/bookworm/InRelease" in paths, mirror.served[:20]
        assert any(path.startswith("dists/bookworm-updates/") for path in paths), paths[:20]
        assert any(path.endswith(".deb") for path in paths), paths[:20]
        others = {at for (at, _) in mirror.served} - {timestamp}
        assert not others, f"asked for other snapshots: {others}"

    setting.checks.append(built_from_the_snapshot)


def need_images(setting: Setting) -> None:
    """``images/server`` as ``make images`` leaves it (the layout tests/system/test_images.py
    builds), and podman's storage of the module (``CONTAINERS_STORAGE_CONF``), in which the
    block must leave the server's image."""
    (setting.cwd / "images").mkdir()
    for kind in IMAGE_KINDS:
        layout = built_image(kind, setting.cwd / f"wheel-{kind}")
        (setting.cwd / "images" / kind).symlink_to(layout)
    setting.env["CONTAINERS_STORAGE_CONF"] = str(setting.guides.podman_storage())

    def in_podmans_storage() -> None:
        for kind in IMAGE_KINDS:
            labels = inspect(setting.env, f"localhost/benchrunner-{kind}:0.1.0")["Labels"]
            assert labels["org.opencontainers.image.title"] == f"benchrunner-{kind}", labels

    setting.checks.append(in_podmans_storage)


def inspect(env: dict[str, str], name: str) -> Any:
    """skopeo's view of an image of podman's storage, or None when it is not there."""
    done = subprocess.run(
        ["skopeo", "inspect", f"containers-storage:{name}"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return json.loads(done.stdout) if done.returncode == 0 else None


def podman(env: dict[str, str], *args: str) -> None:
    """Run podman; a failure fails the test with podman's own words (a container left running
    would hold its port and its server past the test)."""
    done = subprocess.run(["podman", *args], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"podman {' '.join(args)}: {done.stderr.strip()}"


def need_podman(setting: Setting, kind: str) -> None:
    """Podman with the module's storage, where the block's image ``kind`` is (copied there as
    the guide's skopeo block does), and a ``containers.conf`` whose ``default_ulimits`` are the
    machine's own limits: Debian 12's podman would otherwise ask runc for more open files and
    processes than this machine allows."""
    setting.env.update(
        CONTAINERS_STORAGE_CONF=str(setting.guides.podman_storage()),
        CONTAINERS_CONF=str(setting.guides.podman_limits()),
    )
    name = f"localhost/benchrunner-{kind}:0.1.0"
    if inspect(setting.env, name) is None:
        layout = built_image(kind, setting.cwd / "wheel")
        command = ["skopeo", "copy", f"oci:{layout}:{kind}", f"containers-storage:{name}"]
        subprocess.run(command, env=setting.env, capture_output=True, timeout=600, check=True)


MADE_BY_TESTS = ".made-by-benchrunner-tests"
"""A file in each machine directory a test makes: one an interrupted run left is removed."""


def machine_directory(setting: Setting, path: Path) -> None:
    """A directory of this machine the block reads or writes, which must not exist yet unless
    an interrupted test run left it: made now, removed afterwards."""
    if (path / MADE_BY_TESTS).exists():
        shutil.rmtree(path)
    assert not path.exists(), f"{path} exists already on this machine"
    path.mkdir(parents=True)
    (path / MADE_BY_TESTS).touch()
    setting.cleanups.append(lambda: shutil.rmtree(path, ignore_errors=True))


PODMAN_PORT = 8080
"""The port the podman server block publishes on loopback."""


def need_podman_server(setting: Setting) -> None:
    """The server image in podman's storage and ``/etc/benchrunner/server.env`` as its reader
    writes it for a container (SQLite in the volume); the block's server must answer on
    ``127.0.0.1:8080`` with the admin the block bootstrapped. The container and the volume are
    removed afterwards."""
    need_podman(setting, "server")
    assert not bound("127.0.0.1", PODMAN_PORT), f"port {PODMAN_PORT} is taken on loopback"
    machine_directory(setting, Path("/etc/benchrunner"))
    Path("/etc/benchrunner/server.env").write_text(
        f"BENCHRUNNER_PUBLIC_URL=http://127.0.0.1:{PODMAN_PORT}\n"
    )
    setting.cleanups.append(lambda: podman(setting.env, "volume", "prune", "-f"))
    setting.cleanups.append(lambda: podman(setting.env, "rm", "-f", "-i", "benchrunner-server"))
    url = f"http://127.0.0.1:{PODMAN_PORT}"

    def healthy() -> bool:
        with contextlib.suppress(httpx.HTTPError):
            health: dict[str, Any] = httpx.get(f"{url}/v0/server/health", timeout=5).json()
            return bool(health["status"] == "ok")
        return False

    def served_to_the_admin() -> None:
        wait_until(healthy, timeout=120, interval=0.5, message="the server's container")
        token = setting.output.splitlines()[1]  # the first line the block printed
        users = httpx.get(f"{url}/v0/users", headers={"Authorization": f"Bearer {token}"})
        assert users.status_code == 200, users.text  # only a server admin lists the users
        assert [user["email"] for user in users.json()] == ["ops@example.com"], users.text

    setting.checks.append(served_to_the_admin)


def need_podman_runner(setting: Setting) -> None:
    """The runner image in podman's storage, and a runner of the module's server: its key in
    ``/etc/benchrunner/runner.key`` and ``runner.env`` as the deploy guide's reader writes them,
    and the runner's state directory ``/var/lib/benchrunner-runner``. The block's runner must
    connect; the container is removed afterwards."""
    need_podman(setting, "runner")
    machine_directory(setting, Path("/etc/benchrunner"))
    machine_directory(setting, Path("/var/lib/benchrunner-runner"))
    server = setting.guides.server
    slug, key = server.new_runner(f"podman-{secrets.token_hex(3)}", ["small"])
    key_file = Path("/etc/benchrunner/runner.key")
    key_file.write_text(key)
    key_file.chmod(0o600)
    Path("/etc/benchrunner/runner.env").write_text(
        f"BENCHRUNNER_HOST={server.server.url}\nBENCHRUNNER_RUNNER={slug}\n"
        f"BENCHRUNNER_RUNNER_KEY_FILE={key_file}\nBENCHRUNNER_EXECUTOR=process\n"
    )
    setting.cleanups.append(lambda: podman(setting.env, "rm", "-f", "-i", "benchrunner-runner"))

    def seen() -> bool:
        with server.admin() as client:
            (runner,) = [r for r in client.list_runners() if r.slug == slug]
        return runner.last_seen_at is not None

    setting.checks.append(
        lambda: wait_until(seen, timeout=120, interval=0.5, message="the runner's container")
    )


SYSTEM_REGISTRIES_CONF = Path("/etc/containers/registries.conf")


def need_registry_login(setting: Setting) -> None:
    """``$REGISTRY``, the server's registry, logged in to (``REGISTRY_AUTH_FILE``) and marked
    insecure in ``/etc/containers/registries.conf``, as a reader's plain-HTTP registry is: the
    block runs in a mount namespace of its own where that file is the machine's with the entry
    added (Debian's skopeo reads no other; podman also reads ``CONTAINERS_REGISTRIES_CONF``).
    Every tag the block pushes to ``$REGISTRY`` must be there."""
    need_registry(setting)
    registry = setting.env["REGISTRY"]
    conf = setting.cwd / "registries.conf"
    system = SYSTEM_REGISTRIES_CONF.read_text() if SYSTEM_REGISTRIES_CONF.exists() else ""
    conf.write_text(f'{system}\n[[registry]]\nlocation = "{registry}"\ninsecure = true\n')
    setting.env.update(
        REGISTRY_AUTH_FILE=str(setting.cwd / "auth.json"), CONTAINERS_REGISTRIES_CONF=str(conf)
    )
    assert SYSTEM_REGISTRIES_CONF.exists(), f"{SYSTEM_REGISTRIES_CONF} is missing (skopeo's)"
    bind = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
    namespace = ("unshare", "--mount", "--propagation", "private", "sh", "-c", bind, "sh")
    setting.within = (*namespace, str(conf), str(SYSTEM_REGISTRIES_CONF), *setting.within)
    # skopeo's login does not read registries.conf's insecure flag (its copy does).
    login = ["skopeo", "login", "--tls-verify=false", "-u", "me", "--password-stdin", registry]
    done = subprocess.run(
        login, input=setting.env["BENCHRUNNER_TOKEN"], env=setting.env, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    pushed = re.findall(r"docker://\$REGISTRY/([a-z0-9-]+):([\w.-]+)", setting.script)

    def tagged() -> None:
        assert pushed, "the block pushes nothing to $REGISTRY"
        for repository, tag in pushed:
            server = setting.guides.server.server
            token = registry_token(server, server.token, f"repository:{repository}:pull")
            with v2(server, token) as registry:
                found = registry.get(f"/{repository}/tags/list")
            assert found.status_code == 200, found.text
            assert tag in found.json()["tags"], found.text

    setting.checks.append(tagged)


DOCKER_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
"""Where the ``docker`` of Debian's podman-docker is, without ``/usr/local/bin``: a Docker client
installed there (this machine has one) would come first and find no daemon."""


def need_docker(setting: Setting) -> None:
    """A ``docker`` command as Debian's podman-docker gives it (podman under Docker's name),
    ``$REGISTRY`` (the server's registry) marked insecure in a ``registries.conf`` of the test's
    (``CONTAINERS_REGISTRIES_CONF``), the credentials file the login writes
    (``REGISTRY_AUTH_FILE``) in the test's directory, and in podman's storage of the module the
    image the block pushes, built by the test with a configuration of its own. After the block,
    each tag it pushes must name, in the server's registry, a manifest of that configuration."""
    need_registry(setting)
    registry = setting.env["REGISTRY"]
    path = f"{Path(sys.executable).parent}{os.pathsep}{DOCKER_PATH}"
    docker = shutil.which("docker", path=path)
    assert docker is not None, "no docker command: podman-docker (tools/system-packages.sh)"
    assert "exec /usr/bin/podman" in Path(docker).read_text(), f"{docker} is not podman-docker"
    conf = setting.cwd / "registries.conf"
    conf.write_text(f'[[registry]]\nlocation = "{registry}"\ninsecure = true\n')
    setting.env.update(
        PATH=path,
        CONTAINERS_STORAGE_CONF=str(setting.guides.podman_storage()),
        CONTAINERS_REGISTRIES_CONF=str(conf),
        REGISTRY_AUTH_FILE=str(setting.cwd / "auth.json"),
    )
    pushed = re.findall(r'docker push "\$REGISTRY/([a-z0-9-]+):([\w.-]+)"', setting.script)
    configs = {}
    for repository, tag in pushed:
        label = {"org.opencontainers.image.title": f"{repository}-{secrets.token_hex(4)}"}
        image = busybox_image(config={"Cmd": ["/bin/sh"], "Labels": label})
        layout = write_layout(setting.cwd / f"{repository}-{tag}", [image], tag=tag)
        manifest = json.loads(layout.blobs[layout.digest])
        configs[repository, tag] = manifest["config"]["digest"]
        name = f"containers-storage:{registry}/{repository}:{tag}"
        copy = ["skopeo", "copy", "--quiet", f"oci:{layout.path}:{tag}", name]
        subprocess.run(copy, env=setting.env, capture_output=True, timeout=120, check=True)
        image_name = f"{registry}/{repository}:{tag}"
        setting.cleanups.append(functools.partial(podman, setting.env, "rmi", "-i", image_name))

    def pushed_to_the_registry() -> None:
        assert pushed, 'the block pushes nothing as "$REGISTRY/NAME:TAG"'
        server = setting.guides.server.server
        accept = ", ".join(MANIFEST_TYPES)
        for (repository, tag), config in configs.items():
            token = registry_token(server, server.token, f"repository:{repository}:pull")
            with v2(server, token) as client:
                found = client.get(f"/{repository}/manifests/{tag}", headers={"Accept": accept})
            assert found.status_code == 200, found.text
            assert found.json()["config"]["digest"] == config, found.text

    setting.checks.append(pushed_to_the_registry)


MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
"""The manifests a client may push an image as: podman keeps OCI, Docker converts."""


SYSTEMD_ACCOUNTS = ("passwd", "group", "shadow", "gshadow")
"""The files of ``/etc`` whose ``benchrunner`` entries, which the guide's ``useradd`` made, go
into the systemd machine."""


def need_systemd(setting: Setting) -> None:
    """The block runs on a Debian machine whose init is systemd (tests/systemd_container.py,
    a privileged podman container on this machine's network) with what the guide's earlier
    ``host`` blocks left: ``/opt/benchrunner``, ``/etc/benchrunner``, the units in
    ``/etc/systemd/system`` and the ``benchrunner`` user. Its ``PATH`` has
    ``/opt/benchrunner/bin``, and ``BENCHRUNNER_HOST`` and ``BENCHRUNNER_TOKEN`` are the module
    server's admin's, as the guide's reader exports them on the admin's machine (here the same
    one). The unit the block enables must be active afterwards, and do what ``SYSTEMD_UNITS``
    says; the machine is removed afterwards."""
    host = setting.guides.host
    venv = host / "opt" / "upper" / "benchrunner"
    assert (venv / "bin" / "benchrunner").exists(), "the guide's host blocks installed nothing"
    units = re.findall(r"systemctl enable --now (\S+)", setting.script)
    etc = host / "etc" / "upper"
    found = [
        *sorted((etc / "benchrunner").rglob("*")),
        (etc / "benchrunner"),
        *sorted((etc / "systemd" / "system").glob("benchrunner-*.service")),
    ]
    files = {  # an overlay's whiteouts (what a block removed) are neither files nor directories
        f"/etc/{path.relative_to(etc)}": path
        for path in found
        if not path.is_symlink() and (path.is_file() or path.is_dir())
    }
    accounts = {
        name: [
            line
            for line in (etc / name).read_text().splitlines()
            if line.split(":")[0] == DEPLOY_DATABASE
        ]
        for name in SYSTEMD_ACCOUNTS
    }
    setting.env.update(
        CONTAINERS_STORAGE_CONF=str(setting.guides.podman_storage()),
        CONTAINERS_CONF=str(setting.guides.podman_limits()),
    )
    for unit in units:
        SYSTEMD_UNITS[unit](setting, files)
    machine = systemd_container.boot(
        f"benchrunner-systemd-{secrets.token_hex(4)}", setting.env, {venv: "/opt/benchrunner:ro"}
    )
    setting.cleanups.append(machine.remove)
    setting.machine = machine
    for name, lines in accounts.items():
        machine.append(f"/etc/{name}", lines)
    machine.add_files(files)
    setting.within = (
        "podman",
        "exec",
        "-e",
        f"PATH=/opt/benchrunner/bin:{HOST_PATH}",
        "-e",
        "BENCHRUNNER_HOST",
        "-e",
        "BENCHRUNNER_TOKEN",
        machine.name,
    )

    def active() -> None:
        for unit in units:
            assert_active(machine, unit)

    setting.checks.insert(0, active)


def assert_active(machine: systemd_container.Machine, unit: str) -> None:
    state = subprocess.run(
        ["podman", "exec", machine.name, "systemctl", "is-active", unit],
        env=machine.env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert state.stdout.strip() == "active", machine.run("journalctl", "-u", unit, "-o", "cat")


def systemd_server(setting: Setting, files: dict[str, Path]) -> None:
    """The server's unit: the guide's database (``deploy_database``), and port 8080 of loopback,
    where the unit's server must answer ``ok`` with the database reachable, as the block's
    ``curl`` printed."""
    assert not bound("127.0.0.1", PODMAN_PORT), f"port {PODMAN_PORT} is taken on loopback"
    deploy_database(setting)

    def serving() -> None:
        found = wait_until(unit_health, timeout=60, interval=0.5, message="the server's unit")
        assert found["status"] == "ok" and found["database_reachable"] is True, found
        assert printed_health(setting.output)["status"] == "ok", setting.output

    setting.checks.append(serving)


def unit_health() -> Any:
    """The health answer of the server the machine's unit runs, or None while it is not up."""
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(f"http://127.0.0.1:{PODMAN_PORT}/v0/server/health", timeout=5).json()
    return None


def printed_health(output: str) -> Any:
    """The health answer a block's ``curl`` printed (with no newline after it)."""
    start = output.find('{"status"')
    assert start >= 0, output
    return json.JSONDecoder().raw_decode(output, start)[0]


ACME_NAME = "bench.example.com"
"""The deploy guide's public name, which resolves to this machine in the systemd machine."""

ACME_PORTS = (80, 443, 2019, acme_ca.ACME_PORT, acme_ca.MANAGEMENT_PORT)
"""Caddy's (HTTP, HTTPS, its admin API) and Pebble's ports, on this machine's network."""

ACME_CA_OPTION = f"{{\n\tacme_ca {acme_ca.DIRECTORY}\n}}\n\n"
"""The global option the guide tells a reader with an internal ACME CA to add."""


def need_acme(setting: Setting) -> None:
    """After ``systemd``, what the deploy guide's reader has before reloading Caddy: the server's
    unit started as step 3 does (with the guide's database), Caddy installed and running
    (Debian's package, with its own Caddyfile), then the guide's Caddyfile in
    ``/etc/caddy/Caddyfile``, and the name resolving to this host. The certificate comes from an
    internal ACME CA, Pebble (tests/acme_ca.py), as the guide tells such a reader: its directory
    in a global ``acme_ca`` option, its roots in the system's trust store. The block must print
    the server's health through Caddy, and Caddy must present, for the name, a certificate that
    chains to Pebble's root."""
    machine = setting.machine
    assert machine is not None, "acme comes after systemd in the block's marker"
    busy = [port for port in (PODMAN_PORT, *ACME_PORTS) if bound("127.0.0.1", port)]
    assert not busy, f"ports {busy} are taken on loopback"
    deploy_database(setting)
    # The server lets go of the database before it is dropped.
    setting.cleanups.append(lambda: machine.remove())
    machine.run("systemctl", "enable", "--now", "benchrunner-server")
    wait_until(unit_health, timeout=60, interval=0.5, message="the server's unit")

    made = setting.cwd / "acme"
    made.mkdir()
    listener = acme_ca.listener()
    (made / "ca.crt").write_bytes(listener.ca)
    (made / "cert.pem").write_bytes(listener.certificate)
    (made / "key.pem").write_bytes(listener.key)
    (made / "config.json").write_bytes(
        acme_ca.config("/etc/pebble/cert.pem", "/etc/pebble/key.pem")
    )
    machine.add_files({
        "/usr/local/share/ca-certificates/acme-listener.crt": made / "ca.crt",
        "/etc/pebble/cert.pem": made / "cert.pem",
        "/etc/pebble/key.pem": made / "key.pem",
        "/etc/pebble/config.json": made / "config.json",
    })  # fmt: skip
    machine.run("update-ca-certificates")
    settings = [f"--setenv={name}={value}" for name, value in acme_ca.ENVIRONMENT.items()]
    machine.run("systemd-run", "--unit", "pebble", *settings, "/usr/bin/pebble",
                "-config", "/etc/pebble/config.json")  # fmt: skip
    pebble_root = "/usr/local/share/ca-certificates/pebble-root.crt"
    fetch = ["podman", "exec", machine.name, "curl", "-sf", "-o", pebble_root, acme_ca.ROOTS]

    def root_fetched() -> bool:
        done = subprocess.run(fetch, env=machine.env, capture_output=True, timeout=60)
        return done.returncode == 0

    wait_until(root_fetched, timeout=60, interval=0.5, message="Pebble's root")
    machine.run("update-ca-certificates")
    root = machine.run("cat", pebble_root)
    machine.append("/etc/hosts", [f"127.0.0.1 {ACME_NAME}"])
    machine.run("systemctl", "start", "caddy")
    (caddyfile,) = CONFIGURATION.findall((GUIDES / "deploy.md").read_text())
    (made / "Caddyfile").write_text(ACME_CA_OPTION + caddyfile)
    (made / "Caddyfile").chmod(0o644)
    machine.add_files({"/etc/caddy/Caddyfile": made / "Caddyfile"})

    def served_with_the_cas_certificate() -> None:
        assert printed_health(setting.output)["status"] == "ok", setting.output
        assert_active(machine, "caddy")
        context = ssl.create_default_context(cadata=root)
        with (
            socket.create_connection(("127.0.0.1", 443), timeout=10) as raw,
            context.wrap_socket(raw, server_hostname=ACME_NAME) as tls,
        ):
            request = f"GET /v0/server/health HTTP/1.1\r\nHost: {ACME_NAME}\r\n"
            tls.sendall(f"{request}Connection: close\r\n\r\n".encode())
            answer = b"".join(iter(lambda: tls.recv(65536), b""))
        assert answer.startswith(b"HTTP/1.1 200"), answer
        assert printed_health(answer.decode())["status"] == "ok", answer

    setting.checks.append(served_with_the_cas_certificate)


def systemd_runner(setting: Setting, files: dict[str, Path]) -> None:
    """The runner's unit: a runner of the module's server, its key pasted into
    ``/etc/benchrunner/runner.key`` and ``runner.env`` edited as the guide says (the server's URL
    and the runner's name); the unit's runner must connect, and the block's list name it."""
    server = setting.guides.server
    slug, key = server.new_runner(f"bench-01-{secrets.token_hex(3)}", ["small"])
    edited = setting.cwd / "etc-benchrunner"
    edited.mkdir()
    (edited / "runner.key").write_text(key)
    (edited / "runner.key").chmod(0o600)
    values = {"BENCHRUNNER_HOST": server.server.url, "BENCHRUNNER_RUNNER": slug}
    env_file = files["/etc/benchrunner/runner.env"]
    lines = [
        f"{line.split('=')[0]}={values[line.split('=')[0]]}"
        if line.split("=")[0] in values
        else line
        for line in env_file.read_text().splitlines()
    ]
    (edited / "runner.env").write_text("".join(f"{line}\n" for line in lines))
    (edited / "runner.env").chmod(0o600)
    files.update(
        {f"/etc/benchrunner/{name}": edited / name for name in ("runner.key", "runner.env")}
    )

    def seen() -> bool:
        with server.admin() as client:
            (runner,) = [r for r in client.list_runners() if r.slug == slug]
        return runner.last_seen_at is not None

    def connected() -> None:
        wait_until(seen, timeout=60, interval=0.5, message="the runner's unit")
        assert slug in setting.output, setting.output

    setting.checks.append(connected)


SYSTEMD_UNITS: dict[str, Callable[[Setting, dict[str, Path]], None]] = {
    "benchrunner-server": systemd_server,
    "benchrunner-runner": systemd_runner,
}
"""What a unit the guide enables needs besides the machine, and what it must do: given the
files that go into the machine, by their path there, which it may add to."""

REPLICA_HOSTS = ("127.0.0.2", "127.0.0.3")
"""The replicas guide's ``$BENCH_A`` and ``$BENCH_B``: two loopback addresses, each replica on
the port the guide names, as two hosts would be."""

REPLICA_PORT = 8080


def bound(host: str, port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex((host, port)) == 0


def processes_in(directory: Path) -> list[int]:
    """The processes whose working directory is ``directory``: what a block left running."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "cwd").readlink() == directory:
                    found.append(int(entry.name))
    return found


def stop_processes_in(directory: Path) -> None:
    """End, by their ids, the services a block started in the background in ``directory``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in processes_in(directory):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        with contextlib.suppress(AssertionError):
            wait_until(lambda: not processes_in(directory), timeout=30, message="the services")
            return


def need_replicas(setting: Setting) -> None:
    """What the replicas guide's reader has: a PostgreSQL database of their own (``$DB``), an S3
    bucket (``$BLOB_STORE``, with the ``AWS_*`` variables of moto's server) and two hosts
    (``$BENCH_A``, ``$BENCH_B``). The block runs with a ``/srv`` of its own; the servers and the
    runner it starts in the background are ended afterwards. Both replicas must answer, one
    leading, and the runner must be connected to one of them."""
    stack = contextlib.ExitStack()
    setting.cleanups.append(stack.close)
    database = stack.enter_context(postgres_database())
    store = stack.enter_context(s3_server(setting.cwd))
    stack.callback(stop_processes_in, setting.cwd)
    busy = [host for host in REPLICA_HOSTS if bound(host, REPLICA_PORT)]
    assert not busy, f"port {REPLICA_PORT} is taken on {busy}"
    bench_a, bench_b = REPLICA_HOSTS
    setting.env.update(
        DB=database,
        BLOB_STORE=f"s3://{store.new_bucket()}/guide",
        BENCH_A=bench_a,
        BENCH_B=bench_b,
        **store.env(),
    )
    private_srv = ("sh", "-c", 'mount -t tmpfs tmpfs /srv && exec "$@"', "sh")
    setting.within = ("unshare", "--mount", "--propagation", "private", *private_srv)

    def health(host: str) -> Any:
        answer = httpx.get(f"http://{host}:{REPLICA_PORT}/v0/server/health", timeout=10)
        answer.raise_for_status()
        return answer.json()

    def runner_connected() -> list[Any] | None:
        found = [health(host) for host in REPLICA_HOSTS]
        connected = sum(one["connected_runners"] for one in found)
        return found if connected == 1 else None

    def served() -> None:
        found = wait_until(runner_connected, timeout=60, interval=0.5, message="bench-01")
        assert [one["status"] for one in found] == ["ok", "ok"], found
        assert sorted(one["sweeper_leader"] for one in found) == [False, True], found

    setting.checks.append(served)


NEEDS: dict[str, Callable[[Setting], None]] = {
    "postgres": need_postgres,
    "deploy-database": need_deploy_database,
    "fresh-server": need_fresh_server,
    "previous-report": need_previous_report,
    "host": need_host,
    "runner": need_runner,
    "ci": need_ci,
    "job": need_job,
    "preflight": need_preflight,
    "duet-alert": need_duet_alert,
    "tuning": need_tuning,
    "console-users": need_console_users,
    "benchmarks": need_benchmarks,
    "alert": need_alert,
    "webhook": need_webhook,
    "image": need_image,
    "registry": need_registry,
    "repo": need_repo,
    "culprit": need_culprit,
    "replicas": need_replicas,
    "image-build": need_image_build,
    "snapshot-mirror": need_snapshot_mirror,
    "images": need_images,
    "registry-login": need_registry_login,
    "docker": need_docker,
    "systemd": need_systemd,
    "acme": need_acme,
    "podman-server": need_podman_server,
    "podman-runner": need_podman_runner,
}
"""What a runnable block may need, by the name its marker gives; ``project=NAME`` runs it in
the project NAME (created when missing) instead of a new one."""


def prepare(guides: Guides, needs: tuple[str, ...], tmp: Path, script: str = "") -> Setting:
    project = new_project(guides.server)
    for need in needs:
        if need.startswith("project="):
            project = need.removeprefix("project=")
            with guides.server.http() as http:
                made = http.post(
                    f"/v0/organizations/{guides.server.org}/projects",
                    json={"name": project, "slug": project, "visibility": "public"},
                )
            assert made.status_code in (201, 409), made.text
    setting = Setting(guides, ci_env(guides.server, project, tmp), tmp, script)
    try:
        for need in needs:
            if not need.startswith("project="):
                NEEDS[need](setting)
    except BaseException:
        # What the needs before made (a database, a container) is undone; the need's failure
        # is what the test reports.
        with contextlib.suppress(Exception):
            undo(setting)
        raise
    return setting


BLOCK_TIMEOUT = 300
"""Seconds a block may take: the bisect and calibration blocks wait for a runner's jobs."""

BUILD_TIMEOUT = 1200
"""Seconds ``make images`` may take, which installs the code into both images even when the
layers below it come from the cache."""


BUILDS_IMAGES = {"image-build", "images", "snapshot-mirror"}
"""The needs that build the container images when tests/system/test_images.py's cache is
empty: minutes, as that test's own builds."""

RUNS_THE_BUILD = {"image-build", "snapshot-mirror"}
"""The needs whose block is ``make images`` itself, given ``BUILD_TIMEOUT``."""

INSTALLS = frozenset({"host", "systemd"})
"""The needs of blocks that install onto the host, or run after the blocks that do (Debian
packages, a virtual environment from the whole lock): a minute or so on a quiet machine, five
at a load of 25, so they are given ``BUILD_TIMEOUT`` too."""


SEPARATE_GUIDES = frozenset({"how-to/deploy.md"})
"""Guides whose blocks run in a module of their own (test_guides_deploy.py): they build images
and boot a systemd machine, minutes that run beside the other guides' blocks that way."""


HOST_WIDE = frozenset({"tuning"})
"""The needs of blocks that change the whole host (every task's cpuset, IRQ affinity): they run
in ``test_runnable_tuning_block``, marked host_wide, alone after the parallel suite."""


def shell_blocks(guides: frozenset[str] | None = None, *, host_wide: bool = False) -> Iterator[Any]:
    """The shell blocks of ``guides`` (None: of every guide but ``SEPARATE_GUIDES``), those
    that need ``HOST_WIDE`` with ``host_wide`` only."""
    for block in runnable_blocks():
        chosen = block.guide not in SEPARATE_GUIDES if guides is None else block.guide in guides
        chosen = chosen and host_wide == bool(HOST_WIDE.intersection(block.needs))
        if block.kind != "python" and chosen:
            slow = BUILDS_IMAGES.intersection(block.needs)
            installs = INSTALLS.intersection(block.needs)
            marks = [pytest.mark.timeout(3600 if slow or installs else 300)]
            yield pytest.param(block, id=block.name, marks=marks)


def run_block(guides: Guides, tmp: Path, block: Block) -> tuple[Setting, Outcome]:
    """Run a block as its guide's reader would: after the guide's earlier ``host`` blocks,
    whose changes it builds on."""
    if {"host", "systemd"}.intersection(block.needs):
        for earlier in runnable_blocks():
            same = earlier.guide == block.guide and "host" in earlier.needs
            if same and earlier.line < block.line and earlier.name not in guides.host_ran:
                ran = earlier.name
                directory = tmp / re.sub(r"[/:]", "-", ran)
                setting, outcome = run_block(guides, directory, earlier)
                undo(setting)
                assert outcome.codes == {"block": 0}, f"{ran}: {earlier.script}\n{outcome.output}"
        guides.host_ran.add(block.name)
    tmp.mkdir(exist_ok=True)
    setting = prepare(guides, block.needs, tmp, block.script)
    step = Step("block", block.script)
    within = setting.within
    builds = RUNS_THE_BUILD.intersection(block.needs) or INSTALLS.intersection(block.needs)
    timeout = BUILD_TIMEOUT if builds else BLOCK_TIMEOUT
    return setting, run_steps([step], setting.cwd, setting.env, timeout, within)


def undo(setting: Setting) -> None:
    """Every cleanup runs, newest first, even after one failed; then the first failure is
    raised."""
    failures: list[BaseException] = []
    for cleanup in reversed(setting.cleanups):
        try:
            cleanup()
        except Exception as exc:
            failures.append(exc)
    if failures:
        raise failures[0]


@pytest.mark.parametrize("block", list(shell_blocks()))
def test_runnable_guide_block(guides: Guides, tmp_path: Path, block: Block) -> None:
    run_and_check(guides, tmp_path, block)


@pytest.mark.host_wide
@pytest.mark.parametrize("block", list(shell_blocks(host_wide=True)))
def test_runnable_tuning_block(guides: Guides, tmp_path: Path, block: Block) -> None:
    run_and_check(guides, tmp_path, block)


def run_and_check(guides: Guides, tmp_path: Path, block: Block) -> None:
    """The block runs and exits as its needs expect (0 unless they say otherwise), prints what
    they expect, and passes their checks."""
    setting, outcome = run_block(guides, tmp_path, block)
    setting.output = outcome.output
    try:
        assert outcome.codes.keys() == {"block"}, outcome.output
        assert outcome.codes["block"] in setting.exit_codes, f"{block.script}\n{outcome.output}"
        for expected in setting.expected:
            assert expected in outcome.output, f"{block.script}\n{outcome.output}"
        for check in setting.checks:
            check()
    finally:
        undo(setting)


def test_the_guides_receiver_code_verifies_a_real_delivery(guides: Guides, tmp_path: Path) -> None:
    """The webhooks guide's ``verified`` accepts the signature of a delivery the server sent,
    and refuses it over a body changed by one byte."""
    (block,) = [b for b in runnable_blocks() if b.kind == "python"]
    assert block.needs == ("receiver",)
    namespace: dict[str, Any] = {}
    exec(compile(block.script, block.name, "exec"), namespace)  # noqa: S102 (the guide's own code)
    verified: Callable[[str, bytes, str], bool] = namespace["verified"]

    setting = prepare(guides, (), tmp_path)
    secret = secrets.token_urlsafe(24)
    setting.cli("webhook", "create", guides.receiver.url, "--event", "alert.raised",
                "--secret", secret)  # fmt: skip
    need_alert(setting)
    sent = wait_until(guides.receiver.first, timeout=60, message="the alert's delivery")
    signature = sent.headers["X-Benchrunner-Signature"]
    assert verified(secret, sent.body, signature)
    assert not verified(secret, sent.body.replace(b"}", b" }", 1), signature)
    assert not verified("another secret of its own", sent.body, signature)


CONFIGURATION = re.compile(r"```caddyfile\n(.*?)```", re.S)


def test_the_guides_caddyfile_is_one_caddy_accepts(tmp_path: Path) -> None:
    """The deploy guide's Caddyfile, as its reader copies it, is valid to Caddy: ``caddy
    validate`` adapts it and provisions every module (the certificate for its name is obtained
    only by a running Caddy, which needs the name's public DNS record)."""
    found = [
        (guide.name, text)
        for guide in sorted(GUIDES.glob("*.md"))
        for text in CONFIGURATION.findall(guide.read_text())
    ]
    assert found, "the guides' Caddyfile is no longer found"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path),
           "XDG_CONFIG_HOME": str(tmp_path)}  # fmt: skip
    for number, (guide, text) in enumerate(found):
        caddyfile = tmp_path / f"Caddyfile-{number}"
        caddyfile.write_text(text)
        command = ["caddy", "validate", "--adapter", "caddyfile", "--config", str(caddyfile)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"{guide}: {done.stdout}{done.stderr}"
        assert "Valid configuration" in done.stdout + done.stderr, guide


def test_every_command_block_of_a_guide_is_run_or_says_why_not() -> None:
    """A shell block of any page of docs/ (but the generated reference, which has none) is run
    by the tests above, or says why it cannot be: none is left out silently; a block needs only
    what the test provides."""
    assert not [p for p in GENERATED.rglob("*.md") if "```sh" in p.read_text()], "a shell block"
    unaccounted = []
    for page in pages():
        lines = page.read_text().splitlines()
        for number, line in enumerate(lines, 1):
            if line in ("```sh", "```console"):
                before = lines[number - 2] if number > 1 else ""
                if not MARKER.fullmatch(before) and not before.startswith("<!-- not run: "):
                    unaccounted.append(f"{page.relative_to(DOCS)}:{number}")
    assert not unaccounted, f"mark {RUNNABLE} or <!-- not run: why -->: {unaccounted}"
    blocks = runnable_blocks()
    assert len(blocks) >= 2, "the guides' runnable blocks are no longer found"
    known = {*NEEDS, "receiver"}
    unknown = [
        (block.name, need)
        for block in blocks
        for need in block.needs
        if need not in known and not need.startswith("project=")
    ]
    assert not unknown, f"needs the test does not provide: {unknown}"
