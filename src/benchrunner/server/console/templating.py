"""Rendering a console page: one Jinja2 environment (autoescaped) over the package's templates.

Every page gets ``viewer``, ``nav`` (with the current entry marked), ``now`` (the server
clock's), ``csrf_input`` (the hidden field each POST form must contain), ``csrf_token`` and
``static(path)`` (a URL under ``/console/static`` that changes with the package version, so
browsers may cache it). Filters: ``when`` (a UTC time), ``size`` (bytes); function
``ago(moment, now)``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import jinja2
from fastapi import Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup

from benchrunner import __version__
from benchrunner.server.console import csrf
from benchrunner.server.console.nav import nav_for
from benchrunner.server.console.viewer import Viewer

STATIC_PREFIX = "/console/static"

# No inline script anywhere: page scripts are files under static/. Styles may be set inline
# because plotting libraries size their canvases through style attributes.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; "
    "form-action 'self'"
)

environment = jinja2.Environment(
    loader=jinja2.PackageLoader("benchrunner.server.console", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def static(path: str) -> str:
    return f"{STATIC_PREFIX}/{path}?v={__version__}"


def utc_seconds(value: dt.datetime) -> str:
    """An aware moment in UTC, to the second, without the zone (for columns headed UTC)."""
    return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def when(value: dt.datetime | None) -> str:
    """A moment in UTC, to the second; an em dash for none."""
    if value is None:
        return "\u2014"
    return f"{utc_seconds(value)} UTC"


def ago(value: dt.datetime | None, now: dt.datetime) -> str:
    """How long before ``now``: "42 s ago", "5 min ago", "3 h ago", "2 d ago"."""
    if value is None:
        return "never"
    seconds = max(0, int((now - value).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


def size(value: int) -> str:
    """Bytes in binary units: 1 GiB, 512 MiB, 100 B."""
    amount = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if amount < 1024 or unit == "TiB":
            return f"{amount:.3g} {unit}" if unit != "B" else f"{value} B"
        amount /= 1024
    raise AssertionError("unreachable")


environment.globals["static"] = static
environment.filters["when"] = when
environment.filters["size"] = size
environment.globals["ago"] = ago


def render(
    request: Request,
    viewer: Viewer,
    template: str,
    context: Mapping[str, Any] | None = None,
    *,
    status_code: int = 200,
) -> HTMLResponse:
    """The page ``template`` rendered for ``viewer``."""
    ctx = request.app.state.ctx
    token = csrf.token_for(request, ctx.secret_key)
    html = environment.get_template(template).render(
        {
            "request": request,
            "viewer": viewer,
            "nav": nav_for(request.url.path),
            "now": ctx.clock.now(),
            "csrf_token": token,
            "csrf_input": Markup('<input type="hidden" name="{}" value="{}">').format(
                csrf.FIELD, token
            ),
            **(context or {}),
        }
    )
    response = HTMLResponse(
        html,
        status_code=status_code,
        headers={
            "Cache-Control": "no-store",
            "Content-Security-Policy": CONTENT_SECURITY_POLICY,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "same-origin",
        },
    )
    csrf.issue(request, response)
    return response
