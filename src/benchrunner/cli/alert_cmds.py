"""``benchrunner alert list|show|dismiss|silence|activate|triage|precision`` and
``benchrunner baseline reset``.

An alert is raised when a metric falls strictly outside its threshold's limits, or when a
duet's contender/baseline interval lies beyond 1 ± its margin (a duet alert). ``dismiss``
says it was seen and is no regression, ``silence`` mutes it, ``activate`` undoes either.
``triage`` records a verdict (true_positive, false_positive, expected) and ``precision`` shows
how often each threshold's alerts were right (docs/how-to/thresholds-alerts.md).
``baseline reset`` says a change was intended: from a report on, the series is judged
against a new baseline, and the active alerts from that report on are dismissed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from benchrunner.api.alerts import (
    Alert,
    AlertDuet,
    AlertPrecision,
    AlertStatus,
    Confirmation,
    ListedAlertStatus,
    PrecisionCounts,
    ThresholdPrecision,
    Verdict,
    VerdictFilter,
)
from benchrunner.cli import output
from benchrunner.cli.bisect_cmds import result_text
from benchrunner.cli.config import project_client
from benchrunner.cli.duet_view import margin_text
from benchrunner.cli.history_format import (
    ALERT_COLUMNS,
    alert_row,
    crossed_limit,
    duet_of,
    duet_value,
)
from benchrunner.cli.options import LIST_PER_PAGE, Host, Json, Page, PerPage, Project, Token
from benchrunner.cli.report_format import change_percent, format_change, with_units

alert_app = typer.Typer(
    help="Alerts: metrics outside their threshold's limits, duet ratios beyond their margin.",
    no_args_is_help=True,
)
baseline_app = typer.Typer(
    help="Baselines: declare a change intended, so it stops raising alerts.",
    no_args_is_help=True,
)

AlertRef = Annotated[str, typer.Argument(metavar="ALERT", help="Alert UUID.")]
_FILTER = "Filters"


def _filter(help_text: str) -> Any:
    return typer.Option(help=help_text, show_default=False, rich_help_panel=_FILTER)


def _print_duet_alert(alert: Alert, duet: AlertDuet) -> None:
    output.print_record(
        [
            ("alert", alert.uuid),
            ("kind", "duet (contender / baseline)"),
            ("status", alert.status),
            *verdict_fields(alert),
            ("benchmark", alert.benchmark.name),
            ("measure", alert.measure.name),
            ("branch", alert.branch.name),
            ("testbed", alert.testbed.name),
            ("ratio", duet_value(duet)),
            ("rounds", duet.rounds),
            ("crossed", crossed_limit(alert)),
            ("margin", margin_text(duet.margin)),
            ("report", alert.report),
            ("threshold", None if alert.threshold is None else alert.threshold.uuid),
            ("created", output.when(alert.created)),
            ("modified", output.when(alert.modified)),
        ]
    )


def verdict_fields(alert: Alert) -> list[tuple[str, object]]:
    """The triage lines of an alert's record: its verdict, and who set it when."""
    fields: list[tuple[str, object]] = [("verdict", alert.verdict or "untriaged")]
    if alert.verdict_at is not None:
        who = "a deleted user" if alert.verdict_by is None else alert.verdict_by.name
        fields.append(("triaged", f"{output.when(alert.verdict_at)} by {who}"))
    return fields


def print_alert(alert: Alert) -> None:
    duet = duet_of(alert)
    if duet is not None:
        _print_duet_alert(alert, duet)
        return
    units = alert.measure.units
    value = None if alert.metric is None else alert.metric.value
    baseline = None if alert.boundary is None else alert.boundary.baseline
    threshold = alert.threshold
    change = alert.change
    fields: list[tuple[str, object]] = [
        ("alert", alert.uuid),
        ("status", alert.status),
        *verdict_fields(alert),
        ("benchmark", alert.benchmark.name),
        ("measure", alert.measure.name),
        ("branch", alert.branch.name),
        ("testbed", alert.testbed.name),
        ("value", with_units(value, units)),
        ("baseline", with_units(baseline, units)),
        ("change", format_change(change_percent(value, baseline))),
        ("crossed", crossed_limit(alert)),
        ("report", alert.report),
        ("raised by", alert.raised_by),
        ("confirmation", _confirmation_text(alert.confirmation)),
        ("threshold", None if threshold is None else threshold.uuid),
        ("test", None if threshold is None else threshold.model.test),
    ]
    if change is not None:
        fields.append(
            (
                "change point",
                f"{with_units(change.before, units)} -> "
                f"{with_units(change.after, units)} (p = {change.pvalue})",
            )
        )
        if change.between is not None:
            fields.append(("step", change.between.text))
    fields += [
        ("created", output.when(alert.created)),
        ("modified", output.when(alert.modified)),
    ]
    output.print_record(fields)


@alert_app.command("list")
def alert_list(
    status: Annotated[
        ListedAlertStatus | None,
        _filter(
            "Only alerts with this status (pending, suspected: held back for confirmation runs)."
        ),
    ] = None,
    branch: Annotated[str | None, _filter("Only this branch's.")] = None,
    testbed: Annotated[str | None, _filter("Only this testbed's.")] = None,
    benchmark: Annotated[str | None, _filter("Only this benchmark's.")] = None,
    measure: Annotated[str | None, _filter("Only this measure's.")] = None,
    report: Annotated[str | None, _filter("Only those this report (UUID) raised.")] = None,
    verdict: Annotated[
        VerdictFilter | None, _filter("Only alerts with this verdict, or the untriaged ones.")
    ] = None,
    page: Page = 1,
    per_page: PerPage = LIST_PER_PAGE,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """The project's alerts, newest first (names, slugs or UUIDs filter)."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.list_alerts(
            project_ref,
            status=status,
            branch=branch,
            testbed=testbed,
            benchmark=benchmark,
            measure=measure,
            report=report,
            verdict=verdict,
            page=page,
            per_page=per_page,
        )
    output.show_page(found, as_json, ALERT_COLUMNS, alert_row, title="Alerts")


@alert_app.command("show")
def alert_show(
    alert: AlertRef,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """One alert: the metric, its baseline and the limit it crossed, and its bisection's
    outcome when one was started from it."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.get_alert(project_ref, alert)
    output.show(found, as_json, print_alert)
    bisection = found.bisection
    if not as_json and bisection is not None:
        text = bisection.text or result_text(bisection.state, bisection.result)
        uuid = bisection.uuid
        line = f"bisection {uuid}: {text}" if uuid else f"bisection {bisection.state}: {text}"
        output.out().print(line, soft_wrap=True, markup=False, highlight=False)


def _status_command(status: AlertStatus, doc: str) -> Callable[..., None]:
    def set_status(
        alert: AlertRef,
        project: Project = None,
        host: Host = None,
        token: Token = None,
        as_json: Json = False,
    ) -> None:
        with project_client(host, token, project) as (client, project_ref):
            updated = client.update_alert(project_ref, alert, status)
        output.show(updated, as_json, print_alert)

    set_status.__doc__ = doc
    return set_status


_STATUS_COMMANDS: tuple[tuple[str, AlertStatus, str], ...] = (
    ("dismiss", "dismissed", "Seen, and not a regression."),
    ("silence", "silenced", "Mute the alert: it no longer counts as active."),
    ("activate", "active", "Make a dismissed or silenced alert active again."),
)
for _name, _status, _doc in _STATUS_COMMANDS:
    alert_app.command(_name)(_status_command(_status, _doc))


@alert_app.command("triage")
def alert_triage(
    alert: AlertRef,
    verdict: Annotated[
        Verdict | None,
        typer.Option(
            help="true_positive: a real regression; false_positive: noise, the threshold "
            "cried wolf; expected: a real change that was intended.",
            show_default=False,
        ),
    ] = None,
    clear: Annotated[bool, typer.Option("--clear", help="Take the verdict back.")] = False,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Record whether the alert was right (you and the time are kept; a later verdict
    replaces it). Its status is left as it is."""
    if (verdict is None) == (not clear):
        raise typer.BadParameter("give --verdict or --clear (one of them)")
    with project_client(host, token, project) as (client, project_ref):
        updated = client.triage_alert(project_ref, alert, verdict)
    output.show(updated, as_json, print_alert)


PRECISION_COLUMNS = (
    "threshold",
    "branch",
    "testbed",
    "measure",
    "alerts",
    "true_positive",
    "false_positive",
    "expected",
    "untriaged",
    "precision",
)


def _percent(value: object) -> str:
    return f"{value:.0%}" if isinstance(value, int | float) else "-"


def _precision_row(
    counts: PrecisionCounts | ThresholdPrecision,
    threshold: str,
    where: ThresholdPrecision | None = None,
) -> tuple[object, ...]:
    return (
        threshold,
        "" if where is None else where.branch or "",
        "" if where is None else where.testbed or "",
        "" if where is None else where.measure or "",
        counts.alerts,
        counts.true_positive,
        counts.false_positive,
        counts.expected,
        counts.untriaged,
        _percent(counts.precision),
    )


def _print_precision(found: AlertPrecision) -> None:
    rows = [_precision_row(t, t.threshold or "(duet margin)", t) for t in found.thresholds]
    if found.thresholds:
        rows.append(_precision_row(found.overall, "all"))
    output.print_table(PRECISION_COLUMNS, rows, title="Alert precision")


@alert_app.command("precision")
def alert_precision(
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Which thresholds cry wolf: per threshold and overall, the alerts per verdict, the
    untriaged ones, and the precision, (true_positive + expected) / triaged ("-" while none
    is triaged)."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.alert_precision(project_ref)
    output.show(found, as_json, _print_precision)


@baseline_app.command("reset")
def baseline_reset(
    branch: Annotated[str, typer.Option(help="Branch (name, slug or UUID).", show_default=False)],
    testbed: Annotated[str, typer.Option(help="Testbed (name, slug or UUID).", show_default=False)],
    report: Annotated[
        str,
        typer.Option(
            help="The report (UUID) from which on the change is intended.", show_default=False
        ),
    ],
    measure: Annotated[
        str | None, typer.Option(help="Only this measure (else every measure).")
    ] = None,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """This change was intended: from REPORT on, judge the branch/testbed's series against a
    new baseline (history before it no longer counts) and dismiss the active alerts of that
    report and later ones."""
    with project_client(host, token, project) as (client, project_ref):
        reset = client.reset_baseline(
            project_ref,
            branch=branch,
            testbed=testbed,
            report=report,
            measure=measure,
        )
    if as_json:
        output.print_json(reset)
        return
    dismissed = reset.dismissed
    what = "every measure" if reset.measure is None else f"measure {reset.measure.name}"
    output.out().print(
        f"baseline reset on branch {branch}, testbed {testbed}, {what}, from report "
        f"{reset.report}: {dismissed} alert{'' if dismissed == 1 else 's'} dismissed",
        soft_wrap=True,
        markup=False,
    )


def _confirmation_text(confirmation: Confirmation | None) -> str | None:
    """How confirmation runs judged the alert: the outcome (and why, when it says), and the
    runs' jobs."""
    if confirmation is None:
        return None
    outcome = confirmation.outcome
    if confirmation.reason:
        outcome += f": {confirmation.reason}"
    jobs = ", ".join(run.job for run in confirmation.runs)
    return f"{outcome} ({jobs})" if jobs else outcome
