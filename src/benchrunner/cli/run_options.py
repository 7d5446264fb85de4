"""The options of ``benchrunner run`` that Bencher's ``bencher run`` also has: branch and
history, how the output is read, thresholds and ``--err``."""

from __future__ import annotations

from typing import Annotated

import typer

from benchrunner.adapters import Average, Fold
from benchrunner.detection.models import MAX_COUNT

HISTORY = "Branch and history"
PARSING = "Reading the output"
THRESHOLDS = "Thresholds and alerts"

Branch = Annotated[
    str | None,
    typer.Option(
        envvar="BENCHRUNNER_BRANCH",
        help="Branch name, slug or UUID; created on first use. [default: the git branch "
        "checked out (sent as context), else main]",
        show_default=False,
        rich_help_panel=HISTORY,
    ),
]

GitHash = Annotated[
    str | None,
    typer.Option(
        "--hash",
        metavar="SHA",
        help="Full git commit hash of the code measured: the report's version on its "
        "branch. [default: the commit checked out, sent as context]",
        rich_help_panel=HISTORY,
    ),
]

StartPoint = Annotated[
    str | None,
    typer.Option(
        "--start-point",
        metavar="BRANCH",
        help="Branch a new --branch starts from: its recent history (and with "
        "--start-point-clone-thresholds its thresholds) are cloned.",
        rich_help_panel=HISTORY,
    ),
]

StartPointHash = Annotated[
    str | None,
    typer.Option(
        metavar="SHA",
        help="Start from this version of --start-point (full git hash).",
        rich_help_panel=HISTORY,
    ),
]

StartPointMaxVersions = Annotated[
    int,
    typer.Option(
        min=1,
        max=MAX_COUNT,
        help="Versions of --start-point's history to clone.",
        rich_help_panel=HISTORY,
    ),
]

StartPointCloneThresholds = Annotated[
    bool,
    typer.Option(
        "--start-point-clone-thresholds",
        help="Also clone --start-point's thresholds.",
        rich_help_panel=HISTORY,
    ),
]

StartPointReset = Annotated[
    bool,
    typer.Option(
        "--start-point-reset",
        help="Reset --branch's history: empty, or a fresh copy of --start-point.",
        rich_help_panel=HISTORY,
    ),
]

NoContext = Annotated[
    bool,
    typer.Option(
        "--no-context",
        help="Send no context (git branch, commit and repository, operating system), "
        "which otherwise names the branch, hash and testbed the flags leave out.",
        rich_help_panel=HISTORY,
    ),
]

Testbed = Annotated[
    str | None,
    typer.Option(
        envvar="BENCHRUNNER_TESTBED",
        help="Testbed name, slug or UUID; created on first use. [default: this machine's "
        "operating system (Linux, macOS or Windows, sent as context), else localhost]",
        show_default=False,
        rich_help_panel=HISTORY,
    ),
]

AdapterName = Annotated[
    str,
    typer.Option(
        envvar="BENCHRUNNER_ADAPTER",
        help="How to read the benchmark output: magic (detects the format), json, or a "
        "harness by Bencher's names (rust_criterion, python_pytest, go_bench, ...).",
        rich_help_panel=PARSING,
    ),
]

AverageOption = Annotated[
    Average | None,
    typer.Option(
        help="Central value of harnesses that report both: mean or median.",
        rich_help_panel=PARSING,
    ),
]

FoldOption = Annotated[
    Fold | None,
    typer.Option(
        help="Fold the iterations into one result: min, max, mean or median.",
        rich_help_panel=PARSING,
    ),
]

ThresholdMeasure = Annotated[
    list[str] | None,
    typer.Option(
        metavar="MEASURE",
        help="Measure of a threshold on --branch and --testbed; repeat for several. Each "
        "starts a threshold: the n-th --threshold-* option belongs to the n-th measure "
        "(write _ to leave an option out).",
        rich_help_panel=THRESHOLDS,
    ),
]

ThresholdTest = Annotated[
    list[str] | None,
    typer.Option(
        metavar="TEST",
        help="static, percentage, z_score, t_test, log_normal, iqr, delta_iqr, "
        "change_point (steps in the history, found by E-divisive means), or samples (the "
        "report's run against the recent runs: a shift beyond their run-to-run spread).",
        rich_help_panel=THRESHOLDS,
    ),
]

ThresholdMinSampleSize = Annotated[
    list[str] | None,
    typer.Option(
        metavar="N|_", help="Fewest samples to judge by (>= 2).", rich_help_panel=THRESHOLDS
    ),
]

ThresholdMaxSampleSize = Annotated[
    list[str] | None,
    typer.Option(
        metavar="N|_", help="Most recent samples to judge by.", rich_help_panel=THRESHOLDS
    ),
]

ThresholdWindow = Annotated[
    list[str] | None,
    typer.Option(
        metavar="SECONDS|_",
        help="Only samples this recent.",
        rich_help_panel=THRESHOLDS,
    ),
]

ThresholdLowerBoundary = Annotated[
    list[str] | None,
    typer.Option(
        metavar="X|_",
        help="Lower boundary (for a smaller-is-worse measure such as throughput).",
        rich_help_panel=THRESHOLDS,
    ),
]

ThresholdUpperBoundary = Annotated[
    list[str] | None,
    typer.Option(
        metavar="X|_",
        help="Upper boundary (for a larger-is-worse measure such as latency).",
        rich_help_panel=THRESHOLDS,
    ),
]

ThresholdMaxPvalue = Annotated[
    list[str] | None,
    typer.Option(
        metavar="P|_",
        help="change_point and samples only: largest p-value of a change that alerts "
        "(default 0.001; samples: 0.05).",
        rich_help_panel=THRESHOLDS,
    ),
]

ThresholdMinMagnitude = Annotated[
    list[str] | None,
    typer.Option(
        metavar="X|_",
        help="change_point and samples only: smallest relative change that alerts (0.05 is "
        "5 %; samples' default 0.02).",
        rich_help_panel=THRESHOLDS,
    ),
]

ThresholdsReset = Annotated[
    bool,
    typer.Option(
        "--thresholds-reset",
        help="Remove the model of every threshold of --branch and --testbed not given here.",
        rich_help_panel=THRESHOLDS,
    ),
]

Err = Annotated[
    bool,
    typer.Option(
        "--err",
        help="Exit 1 when the report raised an alert (a runner job needs --wait).",
        rich_help_panel=THRESHOLDS,
    ),
]

BisectRange = Annotated[
    str | None,
    typer.Option(
        metavar="COMMITS",
        help="The commits after the previous report's --hash up to this one, oldest "
        'first, separated by white space: "$(git rev-list --reverse --first-parent '
        "PREV..HASH)\". A bisect threshold's alert on this report bisects them.",
        rich_help_panel=HISTORY,
    ),
]

BisectImage = Annotated[
    str | None,
    typer.Option(
        metavar="NAME:{commit}",
        help="How a bisection runs each commit of --bisect-range when the job is an "
        "image's: a tag of the project's registry holding {commit}. A template job needs "
        "none: its arguments that hold --hash hold each commit instead.",
        rich_help_panel=HISTORY,
    ),
]
