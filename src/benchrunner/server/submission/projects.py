"""The project a ``POST /v0/run`` goes to, and the unclaimed one an anonymous run creates.

An anonymous run never learns whether a slug it cannot see is taken. A slug that names a
public project is that project (the run lands there if it may write to it); any other slug —
free, or held by a private project — gets the same answer: the unclaimed project whose slug
is the one asked for with a suffix derived from it (``my-app`` -> ``my-app-3f9a1c2e``),
created on the first such run and reused by the next ones. The suffix is keyed with the
server's secret key, so nobody can take a derived slug ahead of the runs it belongs to. A
source address creates at most ``anonymous_projects_per_hour`` projects an hour.
"""

from __future__ import annotations

import hashlib
import hmac

from sqlalchemy.engine import Connection

from benchrunner.core import slugs
from benchrunner.core.tiers import Plan
from benchrunner.server.access import can_see, project_access
from benchrunner.server.context import ServerContext
from benchrunner.server.http.errors import bad_request, not_found
from benchrunner.server.store import accounts
from benchrunner.server.store.accounts import ProjectRow, UserRow

_SUFFIX_HEX = 8


def anonymous_slug(secret_key: str, wanted: str) -> str:
    """The slug of the unclaimed project anonymous runs naming ``wanted`` go to."""
    digest = hmac.new(
        secret_key.encode(), b"anonymous-project\0" + wanted.encode(), hashlib.sha256
    ).hexdigest()
    return slugs.with_suffix(wanted, digest[:_SUFFIX_HEX])


def resolve_project(
    conn: Connection, ctx: ServerContext, user: UserRow | None, ref: str | None, source_ip: str
) -> ProjectRow:
    """The project a run goes to: one the caller can see (then it must be allowed to write to
    it), else, for an anonymous caller, its unclaimed project (see the module's docstring).

    A project the caller may not see is treated as missing: 404 to a signed-in caller, and to
    an anonymous one the same project as a free slug would get. Raises 429 when an anonymous
    run would create one project too many for its source address.
    """
    if ref is not None:
        found = accounts.project_get(conn, ref)
        if found is not None and can_see(conn, user, found):
            return project_access(conn, user, ref, write=True, found=found)
    if user is not None or not ctx.settings.anonymous_runs:
        raise not_found("project", ref or "")
    if ref is None:
        return _new_unclaimed(conn, ctx, source_ip, f"project-{slugs.with_suffix('anonymous')}")
    if accounts.ref_param(ref)[0] == "uuid":
        raise not_found("project", ref)  # a run can name a new project by slug only
    if not slugs.is_slug(ref):
        raise bad_request(
            f"project {ref!r} is neither a UUID nor a slug: use lowercase letters, digits and "
            f"'-' (e.g. {slugs.slugify(ref)!r})"
        )
    slug = anonymous_slug(ctx.secret_key, ref)
    for _ in range(2):  # the second look finds the project a concurrent run has just created
        found = accounts.project_get(conn, slug)
        if found is not None:
            if can_see(conn, None, found):
                return project_access(conn, None, slug, write=True, found=found)
            # Held by a project anonymous runs may not use (made private after it was
            # claimed, or created by hand): a new one with a random suffix instead.
            return _new_unclaimed(conn, ctx, source_ip, ref, slugs.with_suffix(ref))
        created = _new_unclaimed_exactly(conn, ctx, source_ip, ref, slug)
        if created is not None:
            return created
    raise not_found("project", ref)  # created and gone again within one request


def _new_unclaimed(
    conn: Connection, ctx: ServerContext, source_ip: str, name: str, slug: str | None = None
) -> ProjectRow:
    """Bencher's anonymous run: an unclaimed organization and a public project, made on the
    fly (a taken slug gets a random suffix)."""
    rate = ctx.anonymous_creations
    rate.check(source_ip, ctx.monotonic.monotonic())
    now = ctx.clock.now()
    org = accounts.organization_create(
        conn, name, Plan.FREE, now, leader_id=None, slug=slug or name
    )
    created = accounts.project_create(conn, org.id, name, "public", now, slug=slug or name)
    rate.record(source_ip, ctx.monotonic.monotonic())
    return created


def _new_unclaimed_exactly(
    conn: Connection, ctx: ServerContext, source_ip: str, name: str, slug: str
) -> ProjectRow | None:
    """As ``_new_unclaimed`` with exactly this slug, or None (nothing created, nothing
    counted) when the slug is taken."""
    rate = ctx.anonymous_creations
    rate.check(source_ip, ctx.monotonic.monotonic())
    now = ctx.clock.now()
    with conn.begin_nested() as attempt:
        org = accounts.organization_create(conn, name, Plan.FREE, now, leader_id=None, slug=slug)
        created = accounts.project_create_with_slug(conn, org.id, name, "public", now, slug)
        if created is None:
            attempt.rollback()  # the organization made for it goes too
    if created is not None:
        rate.record(source_ip, ctx.monotonic.monotonic())
    return created
