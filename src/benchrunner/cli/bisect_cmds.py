"""``benchrunner bisect``: find the commit between a good and a bad version that changed a
benchmark (docs/how-to/bisect.md). The candidates come from the local repository
(``git rev-list --first-parent --reverse GOOD..BAD``); the server runs the duets and follows
the search; this command starts it and prints each step as it ends. ``bisect show``,
``bisect list`` and ``bisect cancel`` read and stop one."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Annotated

import typer

from benchrunner.api.bisections import Bisection, BisectionCreate, BisectionResult, BisectionStep
from benchrunner.cli import output
from benchrunner.cli.config import project_client
from benchrunner.cli.options import LIST_PER_PAGE, Host, Json, Page, PerPage, Project, Token
from benchrunner.client import BenchrunnerClient, refused_as_bad_request

bisect_app = typer.Typer(
    help="Bisection: which commit between good and bad changed a benchmark, found by duets "
    "on the project's runners.",
    invoke_without_command=True,
)

BisectionRef = Annotated[str, typer.Argument(metavar="BISECTION", help="Bisection UUID.")]
COLUMNS = ("bisection", "state", "good", "bad", "candidates", "jobs", "result", "created")
UNDECIDED = 1


def _git(repo: Path, *args: str) -> str:
    """A git command's output in ``repo``; ValueError with git's message when it fails."""
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise ValueError(f"git {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


def candidates(repo: Path, good: str, bad: str) -> tuple[str, str, list[str]]:
    """Good and bad as full commit hashes, and the commits after good up to bad, oldest first,
    along the first parents."""
    good_hash = _git(
        repo, "rev-parse", "--verify", "--end-of-options", f"{good}^{{commit}}"
    ).strip()
    bad_hash = _git(repo, "rev-parse", "--verify", "--end-of-options", f"{bad}^{{commit}}").strip()
    listed = _git(repo, "rev-list", "--first-parent", "--reverse", f"{good_hash}..{bad_hash}")
    commits = listed.split()
    if not commits:
        raise ValueError(f"no commits between {good} and {bad} (is {good} an ancestor of {bad}?)")
    return good_hash, bad_hash, commits


def _short(commit: object) -> str:
    return str(commit)[:12] if commit else ""


def _percent(ratio: float | None, lower: float | None, upper: float | None) -> str:
    if ratio is None or lower is None or upper is None:
        return ""
    return f"{(ratio - 1) * 100:+.1f}% [{(lower - 1) * 100:+.1f}, {(upper - 1) * 100:+.1f}]"


def result_text(state: str, result: BisectionResult | None, jobs_used: int | None = None) -> str:
    """The outcome in one line: the first bad commit with its ratio, or why none; while
    running, the state and the jobs used so far."""
    if result is None:
        return state + ("" if jobs_used is None else f": {jobs_used} jobs so far")
    culprit = result.culprit
    if culprit is not None:
        figures = _percent(culprit.ratio, culprit.lower_value, culprit.upper_value)
        return f"first bad commit {culprit.commit}: {figures} against its parent"
    return str(result.reason)


def _outcome(found: Bisection) -> str:
    return result_text(found.state, found.result, found.jobs_used)


def step_line(step: BisectionStep) -> str:
    figures = _percent(step.ratio, step.lower_value, step.upper_value)
    what = step.verdict or step.status
    line = f"{step.kind:8} {_short(step.commit)} vs {_short(step.baseline)}"
    line += f"  {what}"
    if figures:
        line += f"  {figures} ({step.rounds} rounds, {len(step.jobs)} jobs)"
    if step.reason:
        line += f"  {step.reason}"
    return line


def _print_bisection(found: Bisection) -> None:
    output.print_record(
        [
            ("bisection", found.uuid),
            ("state", found.state),
            ("good", found.good),
            ("bad", found.bad),
            ("candidates", len(found.candidates)),
            ("jobs", f"{found.jobs_used} of {found.job_budget}"),
            ("result", _outcome(found)),
        ]
    )
    for step in found.steps:
        output.out().print(step_line(step), soft_wrap=True, markup=False, highlight=False)


def _follow(client: BenchrunnerClient, project: str, uuid: str, interval: float) -> Bisection:
    """Print each step once it is no longer running; return the bisection once it ended."""
    printed: set[tuple[str, int, str]] = set()
    while True:
        found = client.get_bisection(project, uuid)
        for step in found.steps:
            key = (step.kind, step.position, step.status)
            if step.status != "running" and key not in printed:
                printed.add(key)
                output.out().print(step_line(step), soft_wrap=True, markup=False, highlight=False)
        if found.state != "running":
            return found
        time.sleep(interval)


@bisect_app.callback()
def bisect(
    ctx: typer.Context,
    good: Annotated[str | None, typer.Option(help="A version that measures well.")] = None,
    bad: Annotated[str | None, typer.Option(help="A later version that measures badly.")] = None,
    benchmark: Annotated[
        list[str] | None, typer.Option(help="A benchmark to watch (repeat for several).")
    ] = None,
    measure: Annotated[str, typer.Option(help="The measure to watch.")] = "latency",
    image: Annotated[
        str | None,
        typer.Option(help="Each commit's image, a tag of the project's registry: 'repo:{commit}'."),
    ] = None,
    template: Annotated[str | None, typer.Option(help="The template each commit runs.")] = None,
    arg: Annotated[
        list[str] | None,
        typer.Option(help="A template argument k=v (repeat); {commit} in v is each commit."),
    ] = None,
    spec: Annotated[str | None, typer.Option(help="The runners' spec.")] = None,
    alert: Annotated[
        str | None, typer.Option(help="The alert this explains (its page shows the outcome).")
    ] = None,
    adapter: Annotated[str, typer.Option(help="The benchmark output's adapter.")] = "magic",
    rounds: Annotated[int, typer.Option(min=2, help="Rounds of each first duet.")] = 10,
    margin: Annotated[
        float, typer.Option(help="The least change of bad against good that counts (0.02: 2%).")
    ] = 0.02,
    budget: Annotated[int, typer.Option(min=1, help="Jobs the bisection may run at most.")] = 40,
    repo: Annotated[Path, typer.Option(help="The git repository.")] = Path(),
    follow: Annotated[
        bool, typer.Option("--follow/--no-follow", help="Print the steps until it ends.")
    ] = True,
    interval: Annotated[float, typer.Option(help="Seconds between looks while following.")] = 1.0,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Start a bisection over the commits after GOOD up to BAD and follow it: exit 0 once it
    names the first bad commit or finds that good and bad measure the same, 1 when undecided."""
    if ctx.invoked_subcommand is not None:
        return
    if good is None or bad is None or not benchmark:
        raise ValueError("give --good, --bad and --benchmark (or a subcommand: show, list, cancel)")
    good_hash, bad_hash, commits = candidates(repo, good, bad)
    with refused_as_bad_request():
        body = BisectionCreate(
            benchmarks=benchmark,
            measure=measure,
            good=good_hash,
            bad=bad_hash,
            candidates=commits,
            adapter=adapter,
            rounds=rounds,
            margin=margin,
            job_budget=budget,
            spec=spec,
            alert=alert,
            image=image,
            template=template,
            args=None if template is None else dict(_arg(text) for text in arg or []),
        )
    with project_client(host, token, project) as (client, project_ref):
        started = client.create_bisection(project_ref, body)
        uuid = started.uuid
        if not as_json:
            output.note(f"bisection {uuid}: {len(commits)} candidates between {good} and {bad}")
        if not follow:
            output.show(started, as_json, _print_bisection)
            return
        found = _follow(client, project_ref, uuid, interval) if not as_json else started
        if as_json:
            while found.state == "running":
                time.sleep(interval)
                found = client.get_bisection(project_ref, uuid)
    if as_json:
        output.print_json(found)
    else:
        output.out().print(_outcome(found), soft_wrap=True, markup=False, highlight=False)
    result = found.result
    named = result is not None and (
        result.culprit is not None or str(result.reason or "").startswith("no culprit")
    )
    if not named:
        raise typer.Exit(UNDECIDED)


def _arg(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise ValueError(f"--arg {text!r}: expected NAME=VALUE")
    return name, value


@bisect_app.command("show")
def bisect_show(
    bisection: BisectionRef,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """A bisection: its steps and its outcome."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.get_bisection(project_ref, bisection)
    output.show(found, as_json, _print_bisection)


def _row(found: Bisection) -> list[object]:
    return [
        found.uuid,
        found.state,
        _short(found.good),
        _short(found.bad),
        len(found.candidates),
        found.jobs_used,
        _outcome(found),
        output.when(found.created),
    ]


@bisect_app.command("list")
def bisect_list(
    page: Page = 1,
    per_page: PerPage = LIST_PER_PAGE,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """The project's bisections, newest first."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.list_bisections(project_ref, page=page, per_page=per_page)
    output.show_page(found, as_json, COLUMNS, _row, title="Bisections")


@bisect_app.command("cancel")
def bisect_cancel(
    bisection: BisectionRef,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Cancel a running bisection and its jobs under way."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.cancel_bisection(project_ref, bisection)
    output.show(found, as_json, _print_bisection)
