"""``benchrunner run``: submit results, or a template or image job, and optionally follow it."""

from __future__ import annotations

import datetime as dt
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from benchrunner.cli import output
from benchrunner.cli.config import resolve
from benchrunner.cli.follow import follow_job
from benchrunner.cli.image_cmds import resolve_image
from benchrunner.cli.options import Host, Json, Project, Token
from benchrunner.cli.views import print_report

_ARG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_JOB = "Runner job"
_DIRECT = "Direct results"


def parse_template_args(items: Sequence[str]) -> dict[str, str]:
    """``["ms=20", "label=a=b"]`` -> ``{"ms": "20", "label": "a=b"}``.

    Values stay strings: the server types and range-checks them against the template.
    Raises ``typer.BadParameter`` for an item without ``=``, a bad name or a repeated name.
    """
    args: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or _ARG_NAME.fullmatch(name) is None:
            raise typer.BadParameter(
                f"{item!r} is not name=value (name: letters, digits, _)", param_hint="'--arg'"
            )
        if name in args:
            raise typer.BadParameter(f"argument {name!r} is given twice", param_hint="'--arg'")
        args[name] = value
    return args


def read_results(items: Sequence[str]) -> list[str]:
    """Each ``--results`` item as text: inline JSON if it starts with ``{``, ``-`` for stdin,
    otherwise a file path. Raises ``OSError`` for a file that cannot be read.
    """
    texts = []
    for item in items:
        if item.lstrip().startswith("{"):
            texts.append(item)
        elif item == "-":
            texts.append(sys.stdin.read())
        else:
            texts.append(Path(item).read_text(encoding="utf-8"))
    return texts


def _usage(message: str) -> typer.BadParameter:
    return typer.BadParameter(message)


def build_body(
    *,
    project: str | None,
    branch: str,
    testbed: str,
    adapter: str,
    spec: str | None,
    template: str | None,
    image: str | None,
    args: dict[str, str],
    iterations: int | None,
    timeout: int | None,
    file_paths: Sequence[str],
    results: Sequence[str],
) -> dict[str, Any]:
    """The ``POST /v0/run`` body for one of the three modes; ``typer.BadParameter`` for mixes the
    server would refuse anyway, so the message can name the flags.
    """
    body: dict[str, Any] = {"branch": branch, "testbed": testbed, "settings": {"adapter": adapter}}
    if project is not None:
        body["project"] = project
    job_options = {
        key: value
        for key, value in (
            ("iter", iterations),
            ("timeout", timeout),
            ("file_paths", list(file_paths) or None),
        )
        if value is not None
    }
    if results:
        if template or image or spec or args or job_options:
            raise _usage(
                "--results (direct mode) cannot be combined with --spec, --template, "
                "--image, --arg, --iter, --timeout or --file-path"
            )
        now = dt.datetime.now(dt.UTC).isoformat()
        return {**body, "results": list(results), "start_time": now, "end_time": now}
    if template and image:
        raise _usage("give either --template or --image, not both")
    if not (template or image):
        raise _usage("nothing to run: give --template or --image with --spec, or --results")
    if not spec:
        raise _usage("--spec is required to run a template or an image")
    if args and not template:
        raise _usage("--arg is only for --template")
    body["spec"] = spec
    if template:
        body["template"] = template
        body["args"] = args
    else:
        body["image"] = image
    if job_options:
        body["job"] = job_options
    return body


def run(
    project: Project = None,
    branch: Annotated[str, typer.Option(help="Branch the results belong to.")] = "main",
    testbed: Annotated[str, typer.Option(help="Testbed the results belong to.")] = "localhost",
    adapter: Annotated[str, typer.Option(help="How to parse the benchmark output.")] = "magic",
    spec: Annotated[
        str | None, typer.Option(help="Hardware spec the job needs.", rich_help_panel=_JOB)
    ] = None,
    template: Annotated[
        str | None,
        typer.Option(
            help="Approved template to run (see benchrunner template list).",
            rich_help_panel=_JOB,
        ),
    ] = None,
    arg: Annotated[
        list[str] | None,
        typer.Option(
            "--arg",
            metavar="NAME=VALUE",
            help="Template argument; repeat for several.",
            rich_help_panel=_JOB,
        ),
    ] = None,
    image: Annotated[
        str | None,
        typer.Option(
            metavar="IMAGE",
            help="OCI image to run: a digest (sha256:...), a tag in the project's repository "
            "(resolved to its digest now), or a local image path (pushed first).",
            rich_help_panel=_JOB,
        ),
    ] = None,
    iterations: Annotated[
        int | None,
        typer.Option("--iter", min=1, help="Iterations (default 1).", rich_help_panel=_JOB),
    ] = None,
    timeout: Annotated[
        int | None, typer.Option(min=1, help="Job timeout in seconds.", rich_help_panel=_JOB)
    ] = None,
    file_path: Annotated[
        list[str] | None,
        typer.Option(
            "--file-path",
            metavar="PATH",
            help="File the job writes results to; repeat for several.",
            rich_help_panel=_JOB,
        ),
    ] = None,
    results: Annotated[
        list[str] | None,
        typer.Option(
            "--results",
            metavar="FILE|JSON",
            help="Benchmark results (file, - for stdin, or inline JSON) to submit directly, "
            "with no runner; repeat for several iterations.",
            rich_help_panel=_DIRECT,
        ),
    ] = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="Follow the job until it ends, then print its metrics.")
    ] = False,
    wait_timeout: Annotated[
        float, typer.Option(min=1, help="Give up following after this many seconds.")
    ] = 3600,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Submit a benchmark run: a job for a runner, or results measured elsewhere.

    **Runner job**: `--spec S` with `--template T [--arg name=value ...]` or
    `--image sha256:...|TAG|PATH` (the job always stores the digest). With `--wait` the
    command follows the job, prints its metrics, and exits 1 if the job fails, is canceled or
    its report has an error.

    **Direct**: `--results FILE` (Bencher Metric Format JSON) stores the metrics at once; no
    runner is involved.
    """
    settings = resolve(host, token, project)
    if image is not None and not results:
        image = resolve_image(settings, image)
    body = build_body(
        project=settings.project,
        branch=branch,
        testbed=testbed,
        adapter=adapter,
        spec=spec,
        template=template,
        image=image,
        args=parse_template_args(arg or []),
        iterations=iterations,
        timeout=timeout,
        file_paths=file_path or [],
        results=read_results(results or []),
    )
    with settings.client() as client:
        report = client.run(body)
        job = report.get("job")
        project_ref = settings.project or report["project"]
        if job is None:
            if as_json:
                output.print_json(report)
            else:
                print_report(report)
            return
        if not wait:
            if as_json:
                output.print_json(report)
                return
            output.out().print(f"job {job} submitted (report {report['uuid']})", markup=False)
            output.note(f"follow it: benchrunner job show {job} --project {project_ref}")
            return
        code = follow_job(client, project_ref, job, wait_timeout, as_json=as_json)
    raise typer.Exit(code)
