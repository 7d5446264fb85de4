"""The OpenAPI document (``/openapi.json``), made to say what each operation really answers.

FastAPI's document promises 422 for invalid input, knows nothing of our error body or of the
token a route reads from ``Authorization``, and lists none of the errors a handler raises. This
module rewrites it once, in one place:

- every error an operation can answer, with the error body ``{"message", "request_id",
  "error_code"?}`` of ``server/http/errors.py``: 400 (invalid input, which FastAPI would answer
  422, or text the database cannot store), 401 (the operation reads the caller's API token,
  and an invalid one is refused even where a token is optional), 403 (server admins only), 404
  (a resource named in the path), 413 (a request body over ``--request-body-max-bytes``), 414
  (parameters making the URL longer than the HTTP layer reads), plus what handlers raise
  themselves (``HANDLER_ERRORS``);
- the bearer security scheme, required where the operation needs a user and optional (``{}``
  among the alternatives) where it serves anonymous callers too, as its dependencies decide;
- the registry's token endpoint, which reads its request by hand: its query, form and Basic
  credentials.

The OCI registry under ``/v2/`` answers in the Distribution Spec's own error format and is
described by that spec, not here: only the routers given to :func:`install` are documented.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute, APIRouter

from benchrunner.server.app.connections import MAX_URL_BYTES
from benchrunner.server.routes.deps import admin_user, optional_user, required_user

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "Error",
    "required": ["message", "request_id"],
    "properties": {
        "message": {"type": "string", "description": "what went wrong, for a person"},
        "request_id": {"type": "string", "description": "a UUID naming this answer"},
        "error_code": {
            "type": "string",
            "description": "a stable code, e.g. bad_request, unauthorized, forbidden, "
            "not_found, conflict, too_large",
        },
    },
}

ERROR_DESCRIPTIONS = {
    400: "Invalid request: the message names each invalid field or value",
    401: "Missing, invalid or expired credentials (see WWW-Authenticate)",
    403: "The caller may not do this",
    404: "Not found, or not visible to the caller",
    409: "Conflicts with the resource's current state",
    413: "Request body larger than the server's --request-body-max-bytes",
    414: f"Request URL longer than {MAX_URL_BYTES} bytes",
    429: "Too many: the job queue is full (--max-queued-jobs, --max-pending-per-organization), "
    "a runner claims too often (runner_claims_per_minute), or anonymous runs from one address "
    "created too many projects (anonymous_projects_per_hour); again after Retry-After seconds",
}

# What handlers answer beyond what their parameters and dependencies imply, by operation.
HANDLER_ERRORS: dict[str, frozenset[int]] = {
    "POST /v0/organizations": frozenset({403}),  # a plan other than free, asked by a non-admin
    # 403/404: a project the caller may not write to, or see; 409: an Idempotency-Key reused
    # with another payload; 429: a cap on queued jobs, or on anonymous creations
    "POST /v0/run": frozenset({403, 404, 409, 429}),
    "POST /v0/projects/{project}/jobs/{job}/cancel": frozenset({403, 409}),
    # 400: what the job ran is gone (spec archived, template or image removed); 409: in flight
    "POST /v0/projects/{project}/jobs/{job}/rerun": frozenset({400, 403, 409}),
    "POST /v0/users": frozenset({409}),  # the email is taken
    "POST /v0/runners": frozenset({404}),  # a spec named in the body
    "PATCH /v0/runners/{runner}": frozenset({409}),  # slug taken
    "POST /v0/runners/{runner}/token": frozenset({409}),  # archived runner
    "POST /v0/runners/{runner}/key": frozenset({409}),  # archived runner
    # 403: a member who is not a leader; 409: already a member, or the last leader
    "POST /v0/organizations/{organization}/members": frozenset({403, 409}),
    "PATCH /v0/organizations/{organization}/members/{user}": frozenset({403, 409}),
    "DELETE /v0/organizations/{organization}/members/{user}": frozenset({403, 409}),
    # 403: a member who is not a leader; 409 as for the server's runners
    "POST /v0/organizations/{organization}/runners": frozenset({403}),
    "PATCH /v0/organizations/{organization}/runners/{runner}": frozenset({403, 409}),
    "POST /v0/organizations/{organization}/runners/{runner}/token": frozenset({403, 409}),
    "POST /v0/organizations/{organization}/runners/{runner}/key": frozenset({403, 409}),
    "POST /v0/runners/{runner}/jobs": frozenset({401, 429}),  # runner key; claims too often
    "PATCH /v0/specs/{spec}": frozenset({409}),  # slug taken, or an archived spec as fallback
    "DELETE /v0/specs/{spec}": frozenset({409}),  # spec in use
    "PATCH /v0/projects/{project}/benchmarks/{ref}": frozenset({403}),
    "POST /v0/projects/{project}/thresholds": frozenset({403, 404, 409}),  # 404: a name in it
    "PUT /v0/projects/{project}/thresholds/{threshold}": frozenset({403}),
    "DELETE /v0/projects/{project}/thresholds/{threshold}": frozenset({403}),
    # 409: an alert held back while its confirmation runs re-measure
    "PATCH /v0/projects/{project}/alerts/{alert}": frozenset({403, 409}),
    "POST /v0/projects/{project}/baselines": frozenset({403}),
    # 403: every webhook route is for those who may write to the project, reads included
    "POST /v0/projects/{project}/webhooks": frozenset({403}),
    "GET /v0/projects/{project}/webhooks": frozenset({403}),
    "GET /v0/projects/{project}/webhooks/{webhook}": frozenset({403}),
    "DELETE /v0/projects/{project}/webhooks/{webhook}": frozenset({403}),
    "GET /v0/projects/{project}/webhooks/{webhook}/deliveries": frozenset({403}),
    # 403: starting and canceling a bisection is for those who may write to the project;
    # 409: canceling one that already ended
    "POST /v0/projects/{project}/bisections": frozenset({403}),
    "POST /v0/projects/{project}/bisections/{bisection}/cancel": frozenset({403, 409}),
    "DELETE /v0/projects/{project}/bisections/{bisection}": frozenset({403, 409}),
    # 403: giving a report its bisection range is for those who may write to the project
    "PATCH /v0/projects/{project}/reports/{report}": frozenset({403}),
    "POST /v0/server/releases": frozenset({409}),  # the channel has that version
    # 401: the runner's own key (not an API token) is missing or wrong
    "GET /v0/runners/{runner}/releases/{release}/{filename}": frozenset({401}),
    "GET /v0/auth/oci/token": frozenset({400, 401}),  # 400: a scope the database refuses
    "POST /v0/auth/oci/token": frozenset({400, 401, 413}),
}

_SCOPE = {
    "name": "scope",
    "in": "query",
    "required": False,
    "description": "repository:<project>:<actions>, e.g. repository:my-project:pull,push",
    "schema": {"type": "array", "items": {"type": "string"}},
    "style": "form",
    "explode": True,
}
_SERVICE = {"name": "service", "in": "query", "required": False, "schema": {"type": "string"}}
_TOKEN_FORM = {
    "required": True,
    "content": {
        "application/x-www-form-urlencoded": {
            "schema": {
                "type": "object",
                "required": ["grant_type"],
                "properties": {
                    "grant_type": {"type": "string", "enum": ["password"]},
                    "username": {"type": "string"},
                    "password": {"type": "string", "description": "an API token"},
                    "scope": {"type": "string", "description": "scopes separated by spaces"},
                    "service": {"type": "string"},
                    "client_id": {"type": "string"},
                },
            }
        }
    },
}
_TOKEN_ANSWER = {
    "type": "object",
    "required": ["token", "access_token", "expires_in", "issued_at"],
    "properties": {
        "token": {"type": "string"},
        "access_token": {"type": "string"},
        "expires_in": {"type": "integer"},
        "issued_at": {"type": "string", "format": "date-time"},
    },
}
BASIC_OPTIONAL: list[dict[str, list[str]]] = [{"basic": []}, {}]

# Operations whose handlers read the request by hand, described here.
HAND_READ: dict[str, dict[str, Any]] = {
    "GET /v0/auth/oci/token": {"parameters": [_SCOPE, _SERVICE], "security": BASIC_OPTIONAL},
    "POST /v0/auth/oci/token": {"requestBody": _TOKEN_FORM, "security": BASIC_OPTIONAL},
}
_HAND_READ_ANSWERS = {
    "GET /v0/auth/oci/token": _TOKEN_ANSWER,
    "POST /v0/auth/oci/token": _TOKEN_ANSWER,
}

SECURITY_SCHEMES = {
    "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "A user's API token (bencher_api_…); an invalid one is always refused",
    },
    "basic": {
        "type": "http",
        "scheme": "basic",
        "description": "Any username and a user's API token as the password",
    },
}


def install(app: FastAPI, routers: Iterable[APIRouter]) -> None:
    """Serve the document of ``routers`` (included in ``app`` as they are), rewritten, at
    ``/openapi.json`` and ``/docs``."""
    routes = [r for router in routers for r in router.routes if isinstance(r, APIRoute)]
    document: dict[str, Any] = {}

    def openapi() -> dict[str, Any]:
        if not document:
            generated = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=routes
            )
            document.update(truthful(generated, routes))
        return document

    app.openapi = openapi  # type: ignore[method-assign]


def truthful(generated: dict[str, Any], routes: list[APIRoute]) -> dict[str, Any]:
    """``generated`` (FastAPI's document) rewritten as this module's docstring says."""
    document = copy.deepcopy(generated)
    document["info"]["description"] += (
        " The OCI registry under /v2/ follows the OCI Distribution Spec and is not described here."
    )
    by_operation = {
        f"{method} {route.path}": route for route in routes for method in route.methods or ()
    }
    for path, item in document["paths"].items():
        for method, operation in item.items():
            name = f"{method.upper()} {path}"
            route = by_operation.get(name)
            calls = set(_dependency_calls(route.dependant)) if route else set()
            # Before HAND_READ: only what FastAPI declared is validated into a 400.
            statuses = _errors(name, operation, calls)
            operation.update(HAND_READ.get(name, {}))
            if name in _HAND_READ_ANSWERS:
                _success(operation)["content"] = {
                    "application/json": {"schema": _HAND_READ_ANSWERS[name]}
                }
            security = _security(calls)
            if security:
                operation["security"] = security
            responses = operation["responses"]
            responses.pop("422", None)
            for status in sorted(statuses):
                responses[str(status)] = _error_response(status)
    components = document.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    schemas["Error"] = ERROR_SCHEMA
    components["securitySchemes"] = SECURITY_SCHEMES
    return document


def _dependency_calls(dependant: Dependant) -> Iterator[Callable[..., Any]]:
    for dependency in dependant.dependencies:
        if dependency.call is not None:
            yield dependency.call
        yield from _dependency_calls(dependency)


def _security(calls: set[Callable[..., Any]]) -> list[dict[str, list[str]]]:
    if required_user in calls or admin_user in calls:
        return [{"bearer": []}]
    if optional_user in calls:
        return [{"bearer": []}, {}]
    return []


def _errors(name: str, operation: dict[str, Any], calls: set[Callable[..., Any]]) -> set[int]:
    statuses = set(HANDLER_ERRORS.get(name, ()))
    parameters = operation.get("parameters", [])
    if "requestBody" in operation:
        statuses.add(413)
    if parameters or "requestBody" in operation:
        # Invalid input; also text the database refuses (NUL on PostgreSQL), even in a path.
        statuses.add(400)
    if parameters:
        statuses.add(414)
    if any(p["in"] == "path" for p in parameters):
        statuses.add(404)
    if optional_user in calls:
        statuses.add(401)
    if admin_user in calls:
        statuses.add(403)
    return statuses


def _success(operation: dict[str, Any]) -> dict[str, Any]:
    responses: dict[str, Any] = operation["responses"]
    return next(v for k, v in responses.items() if k.startswith("2"))


def _error_response(status: int) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": ERROR_DESCRIPTIONS[status],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    if status == 401:
        response["headers"] = {
            "WWW-Authenticate": {
                "description": "the scheme to authenticate with",
                "schema": {"type": "string"},
            }
        }
    if status == 429:
        response["headers"] = {
            "Retry-After": {
                "description": "seconds to wait before submitting again",
                "schema": {"type": "integer"},
            }
        }
    return response
