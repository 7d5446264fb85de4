"""The OpenAPI document tells the truth, and schemathesis proves it against a real server.

Schemathesis generates valid and invalid input for every ``/v0`` operation of ``/openapi.json``
(examples, coverage and fuzzing phases; a bounded, seeded number of examples, so every run is
the same) and sends each case three times: as a server admin, as a member of one organization
and without a token. Every answer must be documented (status code, and body schema) and none
may be a server error. The cases are built from the document the app generates in this process
(pytest collects them before any server runs); the first test checks that the real server
serves exactly that document.
"""

from __future__ import annotations

import collections
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from fastapi import FastAPI
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
)

from benchrunner.server.app.factory import create_app
from benchrunner.server.app.openapi import HANDLER_ERRORS
from benchrunner.server.config import ServerSettings
from tests.harness import Deployment, deploy
from tests.registry_support import make_user

MAX_EXAMPLES = 15  # fuzzing examples per operation; the other phases are bounded by the schema
SEED = 8
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]

DOCUMENT = create_app(ServerSettings(data_dir=Path("unused"))).openapi()


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Deployment, dict[str, str]]]:
    """A server on SQLite with a public and a private project, a job and a runner; the tokens
    of an admin, of a member of the projects' organization, and none."""
    tmp = tmp_path_factory.mktemp("openapi")
    with deploy(tmp, f"sqlite:///{tmp / 'benchrunner.db'}", heartbeat_timeout=60) as deployment:
        with deployment.admin() as admin:
            admin.create_project("acme", "secret", "private")
            admin.create_runner("bench-01", ["small"])
        deployment.submit("bench.noop")
        member = make_user(deployment.server, "member@test.dev", member_of="acme")
        yield deployment, {"admin": deployment.server.token, "member": member, "anonymous": ""}
        _report(deployment)
    assert "Traceback" not in deployment.server.log.read_text()


def _schema() -> schemathesis.BaseSchema:
    config = schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "generation": {
                "max-examples": MAX_EXAMPLES,
                "deterministic": True,
                "database": "none",
            },
            "phases": {"stateful": {"enabled": False}},
            # Half the time, name resources that exist, so that more than 404 is reached.
            "dictionaries": {
                "projects": {"values": ["bench", "secret"]},
                "resources": {"values": ["small", "bench-01", "acme"]},
            },
            "parameters": {
                f"path.{name}": {"dictionary": dictionary, "probability": 0.5}
                for name, dictionary in [
                    ("project", "projects"),
                    ("spec", "resources"),
                    ("runner", "resources"),
                    ("organization", "resources"),
                ]
            },
        }
    )
    return schemathesis.openapi.from_dict(DOCUMENT, config=config)


schema = _schema()

# (identity, operation, status) of every answer, for the figures printed at the end.
ANSWERS: collections.Counter[tuple[str, str, int]] = collections.Counter()


def test_the_server_serves_the_document_under_test(
    api: tuple[Deployment, dict[str, str]],
) -> None:
    deployment, _ = api
    assert httpx.get(f"{deployment.server.url}/openapi.json").json() == DOCUMENT


def test_the_docs_page_loads_nothing_from_elsewhere(
    api: tuple[Deployment, dict[str, str]],
) -> None:
    """An air-gapped server's /docs must not be a blank page: Swagger UI's script, stylesheet
    and icon come from the server itself."""
    deployment, _ = api
    base = deployment.server.url
    page = httpx.get(f"{base}/docs")
    assert page.status_code == 200
    assert "http://" not in page.text and "https://" not in page.text
    # No validator badge either: Swagger UI's default validator is a service on the internet.
    assert '"validatorUrl": null' in page.text
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert {a.split("?")[0].rsplit("/", 1)[-1] for a in assets} == {
        "swagger-ui-bundle.js",
        "swagger-ui.css",
        "swagger-ui-favicon-32x32.png",
    }
    for asset in assets:
        found = httpx.get(f"{base}{asset}")
        assert found.status_code == 200 and len(found.content) > 500, asset
    [script] = re.findall(r'<script src="([^"]+)"', page.text)
    assert "SwaggerUIBundle" in httpx.get(f"{base}{script}").text
    assert httpx.get(f"{base}/redoc").status_code == 404  # FastAPI's would load from a CDN


def _operations(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        f"{method.upper()} {path}": operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }


def test_every_v0_operation_is_documented_and_only_those() -> None:
    app = create_app(ServerSettings(data_dir=Path("unused")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the registry's HEAD and GET share operation IDs
        every = _operations(FastAPI.openapi(app))  # FastAPI's own document: every route
    assert set(_operations(DOCUMENT)) == {name for name in every if " /v0/" in name}


def test_the_document_describes_errors_and_tokens() -> None:
    operations = _operations(DOCUMENT)
    assert set(HANDLER_ERRORS) <= set(operations)  # no stale entry
    for name, operation in operations.items():
        assert "422" not in operation["responses"], name
        if "requestBody" in operation:
            assert {"400", "413"} <= set(operation["responses"]), name
    run = operations["POST /v0/run"]
    assert run["security"] == [{"bearer": []}, {}]  # anonymous runs are allowed
    assert run["responses"]["400"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"
    }
    # A repeated Idempotency-Key (200, or 409 with another payload); a full queue (429).
    assert {"200", "201", "409", "429"} <= set(run["responses"])
    assert "Retry-After" in run["responses"]["429"]["headers"]
    assert {"name": "Idempotency-Key", "in": "header"}.items() <= run["parameters"][0].items()
    assert operations["POST /v0/specs"]["security"] == [{"bearer": []}]
    assert {"401", "403"} <= set(operations["POST /v0/specs"]["responses"])
    assert "security" not in operations["GET /v0/server/health"]
    assert DOCUMENT["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert DOCUMENT["components"]["schemas"]["Error"]["required"] == ["message", "request_id"]


@schema.parametrize()
def test_every_answer_is_documented_and_none_is_a_server_error(
    case: Any, api: tuple[Deployment, dict[str, str]]
) -> None:
    deployment, tokens = api
    for identity, token in tokens.items():
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        response = case.call(base_url=deployment.server.url, headers=headers, timeout=30)
        ANSWERS[(identity, case.operation.label, response.status_code)] += 1
        case.validate_response(response, checks=CHECKS, headers=headers)


def _report(deployment: Deployment) -> None:
    if not ANSWERS:
        return
    statuses: collections.Counter[int] = collections.Counter()
    for (_, _, status), count in ANSWERS.items():
        statuses[status] += count
    operations = {operation for (_, operation, _) in ANSWERS}
    print(
        f"\nschemathesis: {len(operations)} operations, {sum(ANSWERS.values())} requests "
        f"(admin, member, anonymous); statuses {dict(sorted(statuses.items()))}; "
        f"server log {deployment.server.log}"
    )
