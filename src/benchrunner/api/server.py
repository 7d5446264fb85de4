"""Server-wide answers: a replica's health and the approved templates
(docs/reference/api.md)."""

from __future__ import annotations

from pydantic import Field

from benchrunner.api.base import Answer

ArgValue = int | float | bool | str
Number = int | float


class Health(Answer):
    """One replica's state; ``status`` ``unavailable`` (a 503 with this body) when the database
    cannot be reached, ``degraded`` when only PostgreSQL's LISTEN connection is down."""

    status: str
    version: str
    replica: str
    engine: str
    database_reachable: bool
    listen_connected: bool | None = None
    """None on SQLite, which listens for nothing."""
    queue: dict[str, int] | None = None
    """Jobs per status (pending, claimed, running, completed); None when unreachable."""
    connected_runners: int
    waiting_runners: int
    sweeper_leader: bool


class TemplateArg(Answer):
    """An argument of a template: only the bounds, choices and default it has are sent."""

    type: str
    required: bool
    min: Number | None = None
    max: Number | None = None
    choices: list[str] = Field(default_factory=list)
    default: ArgValue | None = None
    description: str | None = None


class Template(Answer):
    """An approved script ``run --template`` accepts."""

    name: str
    description: str = ""
    command: list[str]
    timeout: int
    args: dict[str, TemplateArg] = Field(default_factory=dict)
