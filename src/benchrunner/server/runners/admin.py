"""Runner administration, one function per action, shared by the API's routes and the console:
each does the store change and its consequences (a paused runner resumed wakes the
dispatcher; an archived or re-keyed runner's channels are closed).

Errors are :class:`~benchrunner.server.http.errors.ApiError`: 404 for an unknown runner or spec,
409 for a taken slug or an archived runner's rotation, 400 for a malformed slug.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.api.runners import CreatedRunner, Runner
from benchrunner.core.tokens import RunnerKeyFormat, new_runner_token
from benchrunner.server.channel.runner_channel import ChannelHub
from benchrunner.server.context import ServerContext
from benchrunner.server.http.errors import conflict, not_found
from benchrunner.server.runners.renames import identity_changes, slug_taken
from benchrunner.server.services import Services
from benchrunner.server.store import accounts, runners
from benchrunner.server.store.runners import RunnerRow
from benchrunner.server.store.tables import runner as runner_table
from benchrunner.server.views.resources import runner_view


@dataclass(frozen=True)
class Scope:
    """The runners an action may reach: every runner (``organization_id`` None: a server
    admin's, under ``/v0/runners``), or one organization's own (its leaders', under
    ``/v0/organizations/{organization}/runners``), where any other runner is not found."""

    organization_id: int | None = None


EVERY_RUNNER = Scope()


def runner_or_404(conn: Connection, ref: str, scope: Scope = EVERY_RUNNER) -> RunnerRow:
    row = runners.runner_get(conn, ref)
    if row is None or scope.organization_id not in (None, row.organization_id):
        raise not_found("runner", ref)
    return row


def spec_or_404(conn: Connection, ref: str) -> Any:
    row = runners.spec_get(conn, ref)
    if row is None:
        raise not_found("spec", ref)
    return row


def view_of(conn: Connection, row: RunnerRow) -> Runner:
    owner = None
    if row.organization_id is not None:
        owner = accounts.organization_by_id(conn, row.organization_id).uuid
    return runner_view(row, runners.runner_specs(conn, row.id), owner)


async def create(
    ctx: ServerContext,
    name: str,
    spec_refs: list[str],
    *,
    slug: str | None = None,
    public_key: str | None = None,
    key_format: RunnerKeyFormat = "hex",
    scope: Scope = EVERY_RUNNER,
) -> CreatedRunner:
    """A new runner attached to ``spec_refs`` (which must sign its results with the key whose
    public half is ``public_key``, when given), owned by the scope's organization if it has
    one; its view plus ``token`` (in ``key_format``), shown this once."""
    token = new_runner_token(key_format)

    def unit(conn: Connection) -> CreatedRunner:
        spec_rows = [spec_or_404(conn, ref) for ref in spec_refs]
        row = runners.runner_create(
            conn,
            name,
            token,
            ctx.clock.now(),
            slug=slug,
            organization_id=scope.organization_id,
            public_key=public_key,
        )
        for spec in spec_rows:
            runners.runner_spec_add(conn, row.id, spec.id)
        return CreatedRunner(**dict(view_of(conn, row)), token=token)

    return await ctx.db.write(unit)


@dataclass(frozen=True)
class RunnerChanges:
    """The fields to change; None leaves one as it is."""

    name: str | None = None
    slug: str | None = None
    archived: bool | None = None
    paused: bool | None = None
    public_key: str | None = None
    """The runner's new public key, None for none (only with ``public_key_given``)."""
    public_key_given: bool = False


async def update(
    ctx: ServerContext,
    services: Services,
    hub: ChannelHub,
    ref: str,
    changes: RunnerChanges,
    scope: Scope = EVERY_RUNNER,
) -> Runner:
    """Rename, re-slug, (un)archive, (un)pause or re-key a runner; its view after the
    change."""

    def unit(conn: Connection) -> tuple[RunnerRow, Runner]:
        row = runner_or_404(conn, ref, scope)
        values = identity_changes(
            conn,
            runner_table,
            row,
            name=changes.name,
            slug=changes.slug,
            archived=changes.archived,
            now=ctx.clock.now(),
        )
        if changes.paused is not None:
            values["paused"] = changes.paused
        if changes.public_key_given and changes.public_key != row.public_key:
            values["public_key"] = changes.public_key
        updated = runners.runner_update(conn, row.id, values)
        if updated is None:
            raise slug_taken(values["slug"])
        return row, view_of(conn, updated)

    before, view = await ctx.db.write(unit)
    if changes.paused is False and before.paused:
        services.wakeups.capacity_freed()
    if changes.archived and before.archived is None:
        await hub.close_runner(before.id, "runner archived")
    elif changes.public_key_given and changes.public_key != before.public_key:
        # A connected runner's key is read when it connects: it reconnects to sign, or stops.
        await hub.close_runner(before.id, "runner signing key changed")
    return view


async def rotate_token(
    ctx: ServerContext,
    hub: ChannelHub,
    ref: str,
    *,
    key_format: RunnerKeyFormat = "hex",
    scope: Scope = EVERY_RUNNER,
) -> tuple[RunnerRow, str]:
    """A new token for the runner in ``key_format`` (the old one stops working at once, and
    its channels are closed); the token is returned this once."""
    token = new_runner_token(key_format)

    def unit(conn: Connection) -> RunnerRow:
        row = runner_or_404(conn, ref, scope)
        if not runners.runner_rotate_token(conn, row.id, token, ctx.clock.now()):
            raise conflict(f"runner {ref!r} is archived; its token cannot be rotated")
        return row

    row = await ctx.db.write(unit)
    await hub.close_runner(row.id, "runner token rotated")
    return row, token
