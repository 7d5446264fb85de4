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

from benchrunner.cli import output
from benchrunner.cli.bisect_cmds import result_text
from benchrunner.cli.config import project_client
from benchrunner.cli.duet_view import margin_text
from benchrunner.cli.history_format import (
    ALERT_COLUMNS,
    alert_row,
    crossed_limit,
    duet_value,
    units_of,
)
from benchrunner.cli.options import LIST_PER_PAGE, Host, Json, Page, PerPage, Project, Token
from benchrunner.cli.report_format import change_percent, format_change, with_units
from benchrunner.client import AlertStatus, JsonObject, ListedAlertStatus, Verdict, VerdictFilter

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


def _print_duet_alert(alert: JsonObject, duet: JsonObject) -> None:
    margin = duet.get("margin") or {}
    threshold = alert.get("threshold") or {}
    output.print_record(
        [
            ("alert", alert.get("uuid")),
            ("kind", "duet (contender / baseline)"),
            ("status", alert.get("status")),
            *verdict_fields(alert),
            ("benchmark", (alert.get("benchmark") or {}).get("name")),
            ("measure", (alert.get("measure") or {}).get("name")),
            ("branch", (alert.get("branch") or {}).get("name")),
            ("testbed", (alert.get("testbed") or {}).get("name")),
            ("ratio", duet_value(duet)),
            ("rounds", duet.get("rounds")),
            ("crossed", crossed_limit(alert)),
            ("margin", margin_text(margin)),
            ("report", alert.get("report")),
            ("threshold", threshold.get("uuid")),
            ("created", output.when(alert.get("created"))),
            ("modified", output.when(alert.get("modified"))),
        ]
    )


def verdict_fields(alert: JsonObject) -> list[tuple[str, object]]:
    """The triage lines of an alert's record: its verdict, and who set it when."""
    by = alert.get("verdict_by")
    fields: list[tuple[str, object]] = [("verdict", alert.get("verdict") or "untriaged")]
    if alert.get("verdict_at") is not None:
        who = by.get("name") if isinstance(by, dict) else "a deleted user"
        fields.append(("triaged", f"{output.when(alert.get('verdict_at'))} by {who}"))
    return fields


def print_alert(alert: JsonObject) -> None:
    duet = alert.get("duet")
    if alert.get("kind") == "duet" and isinstance(duet, dict):
        _print_duet_alert(alert, duet)
        return
    units = units_of(alert)
    metric = alert.get("metric") or {}
    boundary = alert.get("boundary") or {}
    threshold = alert.get("threshold") or {}
    change = alert.get("change")
    fields: list[tuple[str, object]] = [
        ("alert", alert.get("uuid")),
        ("status", alert.get("status")),
        *verdict_fields(alert),
        ("benchmark", (alert.get("benchmark") or {}).get("name")),
        ("measure", (alert.get("measure") or {}).get("name")),
        ("branch", (alert.get("branch") or {}).get("name")),
        ("testbed", (alert.get("testbed") or {}).get("name")),
        ("value", with_units(metric.get("value"), units)),
        ("baseline", with_units(boundary.get("baseline"), units)),
        ("change", format_change(change_percent(metric.get("value"), boundary.get("baseline")))),
        ("crossed", crossed_limit(alert)),
        ("report", alert.get("report")),
        ("raised by", alert.get("raised_by")),
        ("confirmation", _confirmation_text(alert.get("confirmation"))),
        ("threshold", threshold.get("uuid")),
        ("test", (threshold.get("model") or {}).get("test")),
    ]
    if isinstance(change, dict):
        fields.append(
            (
                "change point",
                f"{with_units(change.get('before'), units)} -> "
                f"{with_units(change.get('after'), units)} (p = {change.get('pvalue')})",
            )
        )
        between = change.get("between")
        if isinstance(between, dict):
            fields.append(("step", between.get("text")))
    fields += [
        ("created", output.when(alert.get("created"))),
        ("modified", output.when(alert.get("modified"))),
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
    bisection = found.get("bisection")
    if not as_json and isinstance(bisection, dict):
        text = bisection.get("text") or result_text(bisection)
        uuid = bisection.get("uuid")
        line = (
            f"bisection {uuid}: {text}" if uuid else f"bisection {bisection.get('state')}: {text}"
        )
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


def _precision_row(row: JsonObject, threshold: str) -> tuple[object, ...]:
    return (
        threshold,
        row.get("branch") or "",
        row.get("testbed") or "",
        row.get("measure") or "",
        row.get("alerts"),
        row.get("true_positive"),
        row.get("false_positive"),
        row.get("expected"),
        row.get("untriaged"),
        _percent(row.get("precision")),
    )


def _print_precision(found: JsonObject) -> None:
    thresholds = [t for t in found.get("thresholds") or [] if isinstance(t, dict)]
    rows = [_precision_row(t, str(t.get("threshold") or "(duet margin)")) for t in thresholds]
    overall = found.get("overall")
    if thresholds and isinstance(overall, dict):
        rows.append(_precision_row(overall, "all"))
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
    dismissed = int(reset.get("dismissed") or 0)
    of = reset.get("measure")
    what = f"measure {of.get('name')}" if isinstance(of, dict) else "every measure"
    output.out().print(
        f"baseline reset on branch {branch}, testbed {testbed}, {what}, from report "
        f"{reset.get('report')}: {dismissed} alert{'' if dismissed == 1 else 's'} dismissed",
        soft_wrap=True,
        markup=False,
    )


def _confirmation_text(confirmation: Any) -> str | None:
    """How confirmation runs judged the alert: the outcome and the runs' jobs."""
    if not confirmation:
        return None
    jobs = ", ".join(str(run.get("job")) for run in confirmation.get("runs") or [])
    return f"{confirmation.get('outcome')} ({jobs})" if jobs else str(confirmation.get("outcome"))
