"""``benchrunner run``: submit results, or a template or image job, and optionally follow it."""

from __future__ import annotations

import datetime as dt
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from benchrunner.api.reports import Report
from benchrunner.cli import output
from benchrunner.cli.busy import RetryOnBusy, submit_run
from benchrunner.cli.config import resolve
from benchrunner.cli.follow import (
    EXIT_FAILED,
    JUDGMENT_WAIT_SECONDS,
    follow_job,
    report_failure,
)
from benchrunner.cli.image_cmds import resolve_image
from benchrunner.cli.options import Host, Json, Project, Token
from benchrunner.cli.run_body import DuetFlags, RunFlags, StartPointFlags, build_body
from benchrunner.cli.run_context import run_context
from benchrunner.cli.run_options import (
    AdapterName,
    AverageOption,
    BisectImage,
    BisectRange,
    Branch,
    Err,
    FoldOption,
    GitHash,
    NoContext,
    StartPoint,
    StartPointCloneThresholds,
    StartPointHash,
    StartPointMaxVersions,
    StartPointReset,
    Testbed,
    ThresholdLowerBoundary,
    ThresholdMaxPvalue,
    ThresholdMaxSampleSize,
    ThresholdMeasure,
    ThresholdMinMagnitude,
    ThresholdMinSampleSize,
    ThresholdsReset,
    ThresholdTest,
    ThresholdUpperBoundary,
    ThresholdWindow,
)
from benchrunner.cli.thresholds import ThresholdFlags
from benchrunner.cli.views import print_report
from benchrunner.core.versions import DEFAULT_MAX_VERSIONS

_ARG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_JOB = "Runner job"
_DIRECT = "Direct results"
_DUET = "Duet (baseline against contender)"


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
    otherwise a file path. Raises ``ValueError`` naming a file that cannot be read and why.
    """
    texts = []
    for item in items:
        if item.lstrip().startswith("{"):
            texts.append(item)
        elif item == "-":
            texts.append(sys.stdin.read())
        else:
            texts.append(_results_file(Path(item)))
    return texts


def _results_file(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(
            f"--results {path}: no such file (give a file the harness wrote, "
            "'-' for standard input, or the JSON itself)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ValueError(f"--results {path}: cannot be read: {reason}") from None


def run(
    project: Project = None,
    branch: Branch = None,
    git_hash: GitHash = None,
    start_point: StartPoint = None,
    start_point_hash: StartPointHash = None,
    start_point_max_versions: StartPointMaxVersions = DEFAULT_MAX_VERSIONS,
    start_point_clone_thresholds: StartPointCloneThresholds = False,
    start_point_reset: StartPointReset = False,
    no_context: NoContext = False,
    testbed: Testbed = None,
    adapter: AdapterName = "magic",
    average: AverageOption = None,
    fold: FoldOption = None,
    threshold_measure: ThresholdMeasure = None,
    threshold_test: ThresholdTest = None,
    threshold_min_sample_size: ThresholdMinSampleSize = None,
    threshold_max_sample_size: ThresholdMaxSampleSize = None,
    threshold_window: ThresholdWindow = None,
    threshold_lower_boundary: ThresholdLowerBoundary = None,
    threshold_upper_boundary: ThresholdUpperBoundary = None,
    threshold_max_pvalue: ThresholdMaxPvalue = None,
    threshold_min_magnitude: ThresholdMinMagnitude = None,
    thresholds_reset: ThresholdsReset = False,
    err: Err = False,
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
        typer.Option(
            "--iter",
            min=1,
            help="Iterations (default 1). With --results, each --results is one iteration "
            "(--iter may then be 1, as in Bencher's --iter 1 --fold, or their number).",
            rich_help_panel=_JOB,
        ),
    ] = None,
    timeout: Annotated[
        int | None, typer.Option(min=1, help="Job timeout in seconds.", rich_help_panel=_JOB)
    ] = None,
    file_path: Annotated[
        list[str] | None,
        typer.Option(
            "--file-path",
            metavar="PATH",
            help=(
                "File the job writes results to, relative to its working directory (an image "
                "job's may be absolute: a path in its container); repeat for several."
            ),
            rich_help_panel=_JOB,
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            metavar="IMAGE_OR_ARGS",
            help="Duet: the baseline, an image as --image takes, or with --template its "
            "arguments as NAME=VALUE[,NAME=VALUE...] (over the shared --arg ones). Needs "
            "--contender; --iter then counts rounds (default 10), each running both once.",
            rich_help_panel=_DUET,
        ),
    ] = None,
    contender: Annotated[
        str | None,
        typer.Option(
            metavar="IMAGE_OR_ARGS",
            help="Duet: the contender, given as --baseline is; the report shows "
            "contender/baseline ratios.",
            rich_help_panel=_DUET,
        ),
    ] = None,
    duet_margin: Annotated[
        float | None,
        typer.Option(
            min=0,
            max=0.999,
            help="Duet threshold: alert when the ratio's interval lies wholly beyond "
            "1 +/- this fraction (default 0: whenever it excludes 1).",
            rich_help_panel=_DUET,
        ),
    ] = None,
    duet_confidence: Annotated[
        float | None,
        typer.Option(
            min=0.5,
            max=0.999,
            help="Duet: the interval's confidence (default 0.95).",
            rich_help_panel=_DUET,
        ),
    ] = None,
    duet_seed: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Duet: seed of the run order and the bootstrap (default: random).",
            rich_help_panel=_DUET,
        ),
    ] = None,
    results: Annotated[
        list[str] | None,
        typer.Option(
            "--results",
            metavar="FILE|JSON",
            help="Benchmark output (file, - for stdin, or inline JSON) to submit directly, "
            "with no runner; repeat for several iterations.",
            rich_help_panel=_DIRECT,
        ),
    ] = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="Follow the job until it ends, then print its report.")
    ] = False,
    wait_timeout: Annotated[
        float,
        typer.Option(
            min=1,
            help="Give up following after this many seconds (waiting for a direct run's "
            "pending judgment: 60 at most).",
        ),
    ] = 3600,
    bisect_range: BisectRange = None,
    bisect_image: BisectImage = None,
    retry_on_busy: RetryOnBusy = False,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Submit a benchmark run: a job for a runner, or results measured elsewhere.

    **Runner job**: `--spec S` with `--template T [--arg name=value ...]` or
    `--image sha256:...|TAG|PATH` (the job always stores the digest). With `--wait` the
    command follows the job, prints its report, and exits 1 if the job fails, is canceled or
    its report has an error.

    **Duet**: `--baseline` and `--contender` (two images, or with `--template` two argument
    sets) run interleaved in one job, in a random order per round; the report's duet section
    gives each benchmark's contender/baseline ratio with a bootstrap confidence interval.

    **Direct**: `--results FILE` (the harness's output, read by `--adapter`) stores the
    metrics at once; no runner is involved.

    The report prints as a table: each metric with its baseline, its change against it, the
    threshold's limits and an alert marker. `--err` exits 1 when the report raised an alert.

    A server whose queue is full refuses the job (429); `--retry-on-busy` waits as long as
    it asks and submits again. A repeat never makes a second job: each submission carries an
    idempotency key.
    """
    if err and not results and not wait:
        raise typer.BadParameter(
            "--err needs --wait for a runner job: its alerts come when the job is processed"
        )
    settings = resolve(host, token, project)
    flags = RunFlags(
        project=settings.project,
        branch=branch,
        testbed=testbed,
        hash=git_hash,
        context={} if no_context else run_context(),
        adapter=adapter,
        average=average,
        fold=fold,
        spec=spec,
        template=template,
        image=image,
        args=parse_template_args(arg or []),
        iterations=iterations,
        timeout=timeout,
        file_paths=file_path or [],
        results=read_results(results or []),
        start_point=StartPointFlags(
            branch=start_point,
            hash=start_point_hash,
            max_versions=start_point_max_versions,
            clone_thresholds=start_point_clone_thresholds,
            reset=start_point_reset,
        ),
        duet=DuetFlags(
            baseline=baseline,
            contender=contender,
            margin=duet_margin,
            confidence=duet_confidence,
            seed=duet_seed,
        ),
        thresholds=ThresholdFlags(
            measures=threshold_measure or [],
            tests=threshold_test or [],
            min_sample_sizes=threshold_min_sample_size or [],
            max_sample_sizes=threshold_max_sample_size or [],
            windows=threshold_window or [],
            lower_boundaries=threshold_lower_boundary or [],
            upper_boundaries=threshold_upper_boundary or [],
            max_pvalues=threshold_max_pvalue or [],
            min_magnitudes=threshold_min_magnitude or [],
            reset=thresholds_reset,
        ),
        bisect_range=(bisect_range or "").split(),
        bisect_image=bisect_image,
    )
    body = build_body(flags, dt.datetime.now(dt.UTC))  # usage errors before any image push
    if body.image is not None:
        body.image = resolve_image(settings, body.image)
    for side in (body.baseline, body.contender):
        if side is not None and side.image is not None:
            side.image = resolve_image(settings, side.image)
    with settings.client() as client:
        report = submit_run(client, body, retry_on_busy=retry_on_busy)
        job = report.job
        project_ref = settings.project or report.project.slug
        if job is None:
            direct: Report = report
            if direct.judgment == "pending":  # its alerts may still come: wait for them
                patience = min(JUDGMENT_WAIT_SECONDS, wait_timeout)
                with output.err().status(f"report {direct.uuid}: judgment pending"):
                    direct = client.wait_for_judgment(project_ref, direct, patience)
            output.show(direct, as_json, print_report)
            if direct.judgment == "pending" and not err:
                output.warning(
                    f"the judgment of report {direct.uuid} has not finished: "
                    "its alerts may still come"
                )
            failure = report_failure(direct, err=err)
            if failure is not None:
                output.error(failure)
                raise typer.Exit(EXIT_FAILED)
            return
        if not wait:
            if as_json:
                output.print_json(report)
                return
            output.out().print(f"job {job} submitted (report {report.uuid})", markup=False)
            output.note(f"follow it: benchrunner job show {job} --project {project_ref}")
            return
        code = follow_job(client, project_ref, job, wait_timeout, as_json=as_json, err=err)
    raise typer.Exit(code)
