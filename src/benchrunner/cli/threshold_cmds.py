"""``benchrunner threshold list|show|create|update|delete``: a project's thresholds.

A threshold judges one branch/testbed/measure series (every benchmark of it, or one benchmark
when ``--benchmark`` makes it an override). Models are checked here with the server's rules
(``cli.thresholds.model_body``) so that a typo is a usage error before anything is sent.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from benchrunner.api.thresholds import Threshold, ThresholdModelBody
from benchrunner.cli import output
from benchrunner.cli.config import project_client
from benchrunner.cli.history_format import (
    THRESHOLD_COLUMNS,
    model_text,
    named,
    threshold_row,
    threshold_scope,
)
from benchrunner.cli.options import LIST_PER_PAGE, Host, Json, Page, PerPage, Project, Token
from benchrunner.cli.thresholds import ThresholdsError, model_body
from benchrunner.detection.confirmation import MAX_CONFIRM_RUNS
from benchrunner.detection.models import TestKind

threshold_app = typer.Typer(
    help="Thresholds: which test judges a branch/testbed/measure series.", no_args_is_help=True
)

ThresholdRef = Annotated[str, typer.Argument(metavar="THRESHOLD", help="Threshold UUID.")]
_MODEL = "Model"
_FILTER = "Filters"


def _option(help_text: str, panel: str) -> Any:
    return typer.Option(help=help_text, show_default=False, rich_help_panel=panel)


Test = Annotated[
    str,
    typer.Option(
        "--test",
        help=f"The test: {', '.join(TestKind)}.",
        show_default=False,
        rich_help_panel=_MODEL,
    ),
]
MinSampleSize = Annotated[int | None, _option("Fewest history values to judge by.", _MODEL)]
MaxSampleSize = Annotated[int | None, _option("Most (newest) history values used.", _MODEL)]
Window = Annotated[int | None, _option("Only history this recent, in seconds.", _MODEL)]
LowerBoundary = Annotated[float | None, _option("The test's lower boundary.", _MODEL)]
UpperBoundary = Annotated[float | None, _option("The test's upper boundary.", _MODEL)]
MaxPvalue = Annotated[
    float | None, _option("change_point, samples: largest p-value reported.", _MODEL)
]
MinMagnitude = Annotated[
    float | None, _option("change_point, samples: smallest relative change reported.", _MODEL)
]


def _model(test: str, **parameters: int | float | None) -> ThresholdModelBody:
    try:
        return model_body(test, parameters)
    except ThresholdsError as exc:
        raise typer.BadParameter(str(exc)) from None


def print_threshold(threshold: Threshold) -> None:
    """The threshold's series and current model, then every model it has had."""
    output.print_record(
        [
            ("threshold", threshold.uuid),
            ("branch", named(threshold.branch)),
            ("testbed", named(threshold.testbed)),
            ("measure", named(threshold.measure)),
            ("benchmark", threshold_scope(threshold)),
            ("model", model_text(threshold.model)),
            ("confirm", threshold.confirm),
            ("bisect", "yes: its alerts start a bisection" if threshold.bisect else "no"),
            ("created", output.when(threshold.created)),
            ("modified", output.when(threshold.modified)),
        ]
    )
    rows = [
        (
            m.uuid,
            model_text(m),
            output.when(m.created),
            output.when(m.replaced) if m.replaced else "current",
        )
        for m in threshold.models or []
    ]
    output.print_table(("model", "test", "created", "replaced"), rows, title="Models")


@threshold_app.command("list")
def threshold_list(
    branch: Annotated[str | None, _option("Only this branch's.", _FILTER)] = None,
    testbed: Annotated[str | None, _option("Only this testbed's.", _FILTER)] = None,
    measure: Annotated[str | None, _option("Only this measure's.", _FILTER)] = None,
    benchmark: Annotated[str | None, _option("Only overrides for this benchmark.", _FILTER)] = None,
    page: Page = 1,
    per_page: PerPage = LIST_PER_PAGE,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """The project's thresholds with their current models (names, slugs or UUIDs filter)."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.list_thresholds(
            project_ref,
            branch=branch,
            testbed=testbed,
            measure=measure,
            benchmark=benchmark,
            page=page,
            per_page=per_page,
        )
    output.show_page(found, as_json, THRESHOLD_COLUMNS, threshold_row, title="Thresholds")


AlertWhenNoisy = Annotated[
    bool | None,
    typer.Option(
        "--alert-when-noisy/--no-alert-when-noisy",
        help="Alert on reports the noise guard found noisy too (default: no; update: unchanged).",
        show_default=False,
    ),
]

Confirm = Annotated[
    int | None,
    typer.Option(
        "--confirm",
        min=0,
        max=MAX_CONFIRM_RUNS,
        help="Confirmation runs a runner job's crossing waits for before it alerts (0: none; "
        "create: the server's default; update: unchanged).",
        show_default=False,
    ),
]
Bisect = Annotated[
    bool | None,
    typer.Option(
        "--bisect/--no-bisect",
        help="Its alerts start a bisection by themselves, when the run gave the commits "
        "between (docs/how-to/bisect.md; default: no; update: unchanged).",
        show_default=False,
    ),
]


@threshold_app.command("show")
def threshold_show(
    threshold: ThresholdRef,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """One threshold: its current model and every model it has had, newest first."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.get_threshold(project_ref, threshold)
    output.show(found, as_json, print_threshold)


@threshold_app.command("create")
def threshold_create(
    branch: Annotated[str, typer.Option(help="Branch (name, slug or UUID).", show_default=False)],
    testbed: Annotated[str, typer.Option(help="Testbed (name, slug or UUID).", show_default=False)],
    measure: Annotated[str, typer.Option(help="Measure (name, slug or UUID).", show_default=False)],
    test: Test,
    benchmark: Annotated[
        str | None,
        typer.Option(help="Only this benchmark (an override of the measure's threshold)."),
    ] = None,
    min_sample_size: MinSampleSize = None,
    max_sample_size: MaxSampleSize = None,
    window: Window = None,
    lower_boundary: LowerBoundary = None,
    upper_boundary: UpperBoundary = None,
    max_pvalue: MaxPvalue = None,
    min_magnitude: MinMagnitude = None,
    alert_when_noisy: AlertWhenNoisy = None,
    confirm: Confirm = None,
    bisect: Bisect = None,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Create a threshold for a branch/testbed/measure series (the branch, testbed and
    measure must exist: a first `benchrunner run` creates them). A series that has one
    already is an error: change its model with `threshold update`."""
    model = _model(
        test,
        min_sample_size=min_sample_size,
        max_sample_size=max_sample_size,
        window=window,
        lower_boundary=lower_boundary,
        upper_boundary=upper_boundary,
        max_pvalue=max_pvalue,
        min_magnitude=min_magnitude,
    )
    with project_client(host, token, project) as (client, project_ref):
        created = client.create_threshold(
            project_ref,
            branch=branch,
            testbed=testbed,
            measure=measure,
            benchmark=benchmark,
            model=model,
            alert_when_noisy=alert_when_noisy,
            confirm=confirm,
            bisect=bisect,
        )
    output.show(created, as_json, print_threshold)


@threshold_app.command("update")
def threshold_update(
    threshold: ThresholdRef,
    test: Test,
    min_sample_size: MinSampleSize = None,
    max_sample_size: MaxSampleSize = None,
    window: Window = None,
    lower_boundary: LowerBoundary = None,
    upper_boundary: UpperBoundary = None,
    max_pvalue: MaxPvalue = None,
    min_magnitude: MinMagnitude = None,
    alert_when_noisy: AlertWhenNoisy = None,
    confirm: Confirm = None,
    bisect: Bisect = None,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Give the threshold a new model (the whole model: parameters left out are unset). The
    old model stays in its history."""
    model = _model(
        test,
        min_sample_size=min_sample_size,
        max_sample_size=max_sample_size,
        window=window,
        lower_boundary=lower_boundary,
        upper_boundary=upper_boundary,
        max_pvalue=max_pvalue,
        min_magnitude=min_magnitude,
    )
    with project_client(host, token, project) as (client, project_ref):
        updated = client.update_threshold(
            project_ref, threshold, model, alert_when_noisy, confirm=confirm, bisect=bisect
        )
    output.show(updated, as_json, print_threshold)


@threshold_app.command("delete")
def threshold_delete(
    threshold: ThresholdRef,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Delete the threshold with its models, boundaries and alerts."""
    with project_client(host, token, project) as (client, project_ref):
        client.delete_threshold(project_ref, threshold)
    if as_json:
        output.print_json({"uuid": threshold, "deleted": True})
    else:
        output.note(f"deleted threshold {threshold}")
