"""``benchrunner webhook create|list|show|delete|deliveries``: where a project's alert events
are POSTed (docs/how-to/thresholds-alerts.md). The secret that signs each body is printed once,
by ``create``."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from benchrunner.api.webhooks import CreatedWebhook, Webhook, WebhookDelivery
from benchrunner.cli import output
from benchrunner.cli.config import project_client
from benchrunner.cli.options import LIST_PER_PAGE, Host, Json, Page, PerPage, Project, Token

webhook_app = typer.Typer(
    help="Webhooks: POST the project's alert events to a URL, signed (or to Slack).",
    no_args_is_help=True,
)

WebhookRef = Annotated[str, typer.Argument(metavar="WEBHOOK", help="Webhook UUID.")]
COLUMNS = ("webhook", "url", "events", "format", "created")
DELIVERY_COLUMNS = ("delivery", "event", "status", "attempts", "last answer", "created")


def _row(hook: Webhook) -> list[object]:
    return [
        hook.uuid,
        hook.url,
        ", ".join(hook.events),
        hook.format,
        output.when(hook.created),
    ]


def _print_webhook(hook: Webhook) -> None:
    fields = list(zip(COLUMNS, _row(hook), strict=True))
    if isinstance(hook, CreatedWebhook):
        fields.append(("secret", f"{hook.secret}  (shown this once)"))
    output.print_record(fields)


def _delivery_row(delivery: WebhookDelivery) -> list[object]:
    last = delivery.attempts[-1] if delivery.attempts else None
    answer = (last.error or last.status_code) if last is not None else None
    return [
        delivery.uuid,
        delivery.event,
        delivery.status,
        len(delivery.attempts),
        answer,
        output.when(delivery.created),
    ]


@webhook_app.command("create")
def webhook_create(
    url: Annotated[str, typer.Argument(help="http(s) URL the events are POSTed to.")],
    event: Annotated[
        list[str] | None,
        typer.Option(
            help="An event to send (repeat): alert.raised, alert.dismissed, alert.confirmed, "
            "alert.triaged, alert.bisected. Default: alert.raised and alert.dismissed.",
            show_default=False,
        ),
    ] = None,
    secret: Annotated[
        str | None,
        typer.Option(help="Signing secret (16+ characters); generated if absent."),
    ] = None,
    webhook_format: Annotated[
        Literal["json", "slack"],
        typer.Option("--format", help="json: the event; slack: an incoming-webhook message."),
    ] = "json",
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Register a webhook; its signing secret is printed this once."""
    with project_client(host, token, project) as (client, project_ref):
        created = client.create_webhook(
            project_ref, url, events=event, secret=secret, webhook_format=webhook_format
        )
    output.show(created, as_json, _print_webhook)


@webhook_app.command("list")
def webhook_list(
    project: Project = None, host: Host = None, token: Token = None, as_json: Json = False
) -> None:
    """The project's webhooks (never their secrets)."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.list_webhooks(project_ref)
    output.show_page(found, as_json, COLUMNS, _row, title="Webhooks")


@webhook_app.command("show")
def webhook_show(
    webhook: WebhookRef,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """One webhook (never its secret)."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.get_webhook(project_ref, webhook)
    output.show(found, as_json, _print_webhook)


@webhook_app.command("delete")
def webhook_delete(
    webhook: WebhookRef, project: Project = None, host: Host = None, token: Token = None
) -> None:
    """Delete the webhook and its deliveries (pending ones are never sent)."""
    with project_client(host, token, project) as (client, project_ref):
        client.delete_webhook(project_ref, webhook)
    output.out().print(f"webhook {webhook} deleted", soft_wrap=True, markup=False)


@webhook_app.command("deliveries")
def webhook_deliveries(
    webhook: WebhookRef,
    page: Page = 1,
    per_page: PerPage = LIST_PER_PAGE,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """The webhook's deliveries, newest first: status, attempts and the last answer."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.list_webhook_deliveries(project_ref, webhook, page=page, per_page=per_page)
    output.show_page(found, as_json, DELIVERY_COLUMNS, _delivery_row, title="Deliveries")
