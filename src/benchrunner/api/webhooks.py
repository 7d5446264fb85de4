"""A project's webhooks: the create body, and each webhook and delivery as the server answers
it (docs/how-to/thresholds-alerts.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from benchrunner.api.base import Answer, ApiBody

Event = Literal[
    "alert.raised", "alert.confirmed", "alert.dismissed", "alert.triaged", "alert.bisected"
]
DEFAULT_EVENTS: list[Event] = ["alert.raised", "alert.dismissed"]
WebhookFormat = Literal["json", "slack"]


class WebhookCreate(ApiBody):
    url: str = Field(min_length=1, max_length=2048, description="http or https")
    events: list[Event] = Field(default_factory=lambda: list(DEFAULT_EVENTS), min_length=1)
    secret: str | None = Field(
        default=None,
        min_length=16,
        max_length=255,
        description="signs each body (HMAC-SHA256); generated when absent",
    )
    format: WebhookFormat = "json"


class Webhook(Answer):
    """A webhook, without its secret."""

    uuid: str
    project: str
    url: str
    events: list[str]
    format: str
    created: str


class CreatedWebhook(Webhook):
    """A new webhook with the secret that signs its bodies, shown this once."""

    secret: str


class WebhookAttempt(Answer):
    """One POST of a delivery: the answer's status code, or the error when none came."""

    attempted: str
    status_code: int | None = None
    error: str | None = None
    duration_ms: float


class WebhookDelivery(Answer):
    """One event for one webhook, with its attempts; ``next_attempt`` only while pending."""

    uuid: str
    event: str
    status: str
    attempts: list[WebhookAttempt] = Field(default_factory=list)
    next_attempt: str | None = None
    created: str
    finished: str | None = None
    body: str
    """The JSON body as sent (or to be sent)."""
