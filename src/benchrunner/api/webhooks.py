"""A project's webhooks: the create body (docs/how-to/thresholds-alerts.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from benchrunner.api.base import ApiBody

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
