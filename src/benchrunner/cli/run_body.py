"""The ``POST /v0/run`` body (``api.run.RunBody``, the server's own model) that
``benchrunner run`` sends, built from its flags as Bencher's CLI builds it: ``settings``
{adapter, average, fold}, ``hash``, ``start_point``, ``thresholds``.

Pure: the flags and the time in, the body out; ``typer.BadParameter`` for combinations the
server would refuse anyway, so that the message can name the flags.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, cast

import typer
from pydantic import ValidationError

from benchrunner import adapters
from benchrunner.api.run import (
    COMMIT,
    RunBody,
    RunDuetOptions,
    RunDuetSide,
    RunJob,
    RunSettings,
    RunStartPoint,
)
from benchrunner.cli.thresholds import ThresholdFlags, ThresholdsError, thresholds_body
from benchrunner.core.versions import DEFAULT_MAX_VERSIONS, is_git_hash


@dataclass(frozen=True)
class StartPointFlags:
    """``--start-point*``: the branch a new branch starts from, as Bencher's CLI sends it."""

    branch: str | None = None
    hash: str | None = None
    max_versions: int = DEFAULT_MAX_VERSIONS
    clone_thresholds: bool = False
    reset: bool = False


@dataclass(frozen=True)
class DuetFlags:
    """``--baseline``/``--contender`` (an image, or with ``--template`` its arguments as
    ``name=value[,name=value...]``) and how the server judges the pair."""

    baseline: str | None = None
    contender: str | None = None
    margin: float | None = None
    confidence: float | None = None
    seed: int | None = None

    @property
    def given(self) -> bool:
        return self.baseline is not None or self.contender is not None


def side_args(value: str, flag: str) -> dict[str, str]:
    """``"ms=20,size=3"`` -> ``{"ms": "20", "size": "3"}``; ``""``: no argument of its own."""
    args: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in value.split(","))):
        name, sep, given = item.partition("=")
        if not sep or not name.isidentifier():
            raise _usage(f"{flag} {item!r} is not name=value")
        if name in args:
            raise _usage(f"{flag} gives argument {name!r} twice")
        args[name] = given
    return args


def duet_body(flags: RunFlags) -> RunBody:
    """The body's ``baseline``, ``contender`` and ``duet`` (when an option is given); images
    stay as given (the command resolves a tag or a local path to its digest)."""
    duet = flags.duet
    if duet.baseline is None or duet.contender is None:
        raise _usage("a duet needs both --baseline and --contender")
    if flags.image:
        raise _usage("with --baseline/--contender the images are theirs: drop --image")
    if flags.template:
        baseline = RunDuetSide(args=side_args(duet.baseline, "--baseline"))
        contender = RunDuetSide(args=side_args(duet.contender, "--contender"))
    else:
        baseline, contender = RunDuetSide(image=duet.baseline), RunDuetSide(image=duet.contender)
    # Only the options given: those left out stay the server's defaults.
    options = _given(margin=duet.margin, confidence=duet.confidence, seed=duet.seed)
    return RunBody(
        baseline=baseline,
        contender=contender,
        duet=RunDuetOptions.model_validate(options) if options else None,
    )


@dataclass(frozen=True)
class RunFlags:
    """Everything ``benchrunner run`` reads from its flags, files already read."""

    project: str | None = None
    branch: str | None = None
    testbed: str | None = None
    hash: str | None = None
    adapter: str = "magic"
    average: str | None = None
    fold: str | None = None
    spec: str | None = None
    template: str | None = None
    image: str | None = None
    args: Mapping[str, str] = field(default_factory=dict)
    iterations: int | None = None
    timeout: int | None = None
    file_paths: Sequence[str] = ()
    results: Sequence[str] = ()
    context: Mapping[str, str] = field(default_factory=dict)
    """Bencher's ``bencher.dev/v0/...`` map (``run_context``); the server reads branch, hash
    and testbed from it when the flags leave them out."""
    start_point: StartPointFlags = StartPointFlags()
    thresholds: ThresholdFlags = field(default_factory=ThresholdFlags)
    duet: DuetFlags = DuetFlags()
    bisect_range: Sequence[str] = ()
    """The commits after the previous report's hash up to this one's, oldest first: what a
    bisect threshold's alert bisects (docs/how-to/bisect.md)."""
    bisect_image: str | None = None


def _usage(message: str) -> typer.BadParameter:
    return typer.BadParameter(message)


def check_git_hash(value: str, flag: str) -> str:
    """A full git commit hash (40 hex digits, or 64 for SHA-256 repositories), as Bencher takes."""
    if not is_git_hash(value):
        raise _usage(f"{flag} {value!r} is not a full git commit hash (40 or 64 hex digits)")
    return value


def start_point_body(flags: StartPointFlags) -> RunStartPoint | None:
    """Bencher's ``start_point``: sent when a start branch is named or ``--start-point-reset``
    is given, then always with ``max_versions``, ``clone_thresholds`` and ``reset``.
    """
    if flags.branch is None:
        for given, flag in (
            (flags.hash is not None, "--start-point-hash"),
            (flags.max_versions != DEFAULT_MAX_VERSIONS, "--start-point-max-versions"),
            (flags.clone_thresholds, "--start-point-clone-thresholds"),
        ):
            if given:
                raise _usage(f"{flag} needs --start-point BRANCH")
        if not flags.reset:
            return None
    if flags.branch is not None and not flags.branch.strip():
        raise _usage("--start-point cannot be empty")
    return RunStartPoint(
        branch=flags.branch,
        hash=None if flags.hash is None else check_git_hash(flags.hash, "--start-point-hash"),
        max_versions=flags.max_versions,
        clone_thresholds=flags.clone_thresholds,
        reset=flags.reset,
    )


def _settings(flags: RunFlags) -> RunSettings:
    if flags.adapter not in adapters.ADAPTERS:
        raise _usage(
            f"--adapter {flags.adapter!r} is not one of: {', '.join(sorted(adapters.ADAPTERS))}"
        )
    return RunSettings(
        adapter=flags.adapter,
        average=cast(Literal["mean", "median"] | None, flags.average),
        fold=cast(Literal["min", "max", "mean", "median"] | None, flags.fold),
    )


def _history(flags: RunFlags) -> RunBody:
    """Where the results go: project, branch (with its version and start point), testbed,
    thresholds. Absent flags stay absent, so the server's defaults and context decide."""
    try:
        thresholds = thresholds_body(flags.thresholds)
    except ThresholdsError as exc:
        raise _usage(str(exc)) from None
    if flags.bisect_image is not None and COMMIT not in flags.bisect_image.rpartition(":")[2]:
        raise _usage("--bisect-image: its tag must hold {commit}, e.g. 'sortlib:{commit}'")
    return RunBody(
        project=flags.project,
        branch=flags.branch,
        testbed=flags.testbed,
        hash=None if flags.hash is None else check_git_hash(flags.hash, "--hash"),
        start_point=start_point_body(flags.start_point),
        thresholds=thresholds,
        context=dict(flags.context) or None,
        bisect_range=list(flags.bisect_range) or None,
        bisect_image=flags.bisect_image,
    )


def build_body(flags: RunFlags, now: dt.datetime) -> RunBody:
    """The body for one of the three modes (direct results, template job, image job); a
    value the server's model refuses is a usage error naming the field."""
    try:
        history = _history(flags)
        settings = RunBody(settings=_settings(flags))
        if flags.results:
            return _merged(history, settings, _direct(flags, now))
        return _merged(history, settings, _job(flags))
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(map(str, problem["loc"]))
        raise _usage(f"{where}: {problem['msg']}") from None


def _merged(*parts: RunBody) -> RunBody:
    """One body of the fields each part was given."""
    return RunBody.model_validate(
        {name: getattr(part, name) for part in parts for name in part.model_fields_set}
    )


def _given(**options: object) -> dict[str, object]:
    return {name: value for name, value in options.items() if value is not None}


def _job_options(flags: RunFlags) -> RunJob | None:
    """``--iter``, ``--timeout``, ``--file-path``: the body's ``job``, when one is given."""
    given = _given(
        iter=flags.iterations, timeout=flags.timeout, file_paths=list(flags.file_paths) or None
    )
    return RunJob.model_validate(given) if given else None


def _job(flags: RunFlags) -> RunBody:
    """A template's or an image's job on ``--spec``, or a duet of two."""
    if flags.template and flags.image:
        raise _usage("give either --template or --image, not both")
    duet = duet_body(flags) if flags.duet.given else None
    if not (flags.template or flags.image or duet):
        raise _usage("nothing to run: give --template or --image with --spec, or --results")
    if not flags.spec:
        raise _usage("--spec is required to run a template or an image")
    if flags.args and not flags.template:
        raise _usage("--arg is only for --template")
    job = RunBody(
        spec=flags.spec,
        template=flags.template or None,
        args=dict(flags.args) if flags.template else None,
        image=flags.image if not (flags.template or duet) else None,
        job=_job_options(flags),
    )
    return job if duet is None else _merged(job, duet)


def _direct(flags: RunFlags, now: dt.datetime) -> RunBody:
    # In direct mode each --results is one iteration, as each --file of one run is in
    # Bencher's CLI: --iter may be 1 (Bencher's "--iter 1 --fold ..." over several files) or
    # repeat the count, but cannot change it.
    iterations = len(flags.results) if flags.iterations is None else flags.iterations
    if iterations not in (1, len(flags.results)):
        raise _usage(
            f"--iter {iterations} does not match the {len(flags.results)} --results given "
            "(in direct mode each --results is one iteration)"
        )
    job_options = flags.timeout is not None or flags.file_paths
    if flags.template or flags.image or flags.spec or flags.args or job_options or flags.duet.given:
        raise _usage(
            "--results (direct mode) cannot be combined with --spec, --template, "
            "--image, --arg, --baseline, --contender, --timeout or --file-path"
        )
    stamp = now.astimezone(dt.UTC)
    return RunBody(results=list(flags.results), start_time=stamp, end_time=stamp)
