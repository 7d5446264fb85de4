"""One model per API body, shared: the server's routes validate each converted request with
``benchrunner.api``'s model and document each converted answer with it, and the client (and
through it the CLI) sends and parses the very same classes. A copy of a body on either side
fails here: by its class, by its name, or by its fields."""

from __future__ import annotations

import datetime as dt
import importlib
import json
import pkgutil
import typing
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute
from pydantic import BaseModel

from benchrunner.api.alerts import Alert, AlertPrecision, AlertUpdate
from benchrunner.api.base import Answer, ApiBody
from benchrunner.api.reports import Report, ReportUpdate, RunAnswer
from benchrunner.api.run import RunBody, RunThresholds
from benchrunner.api.thresholds import (
    Threshold,
    ThresholdCreate,
    ThresholdModelBody,
    ThresholdUpdate,
)
from benchrunner.cli.run_body import RunFlags, build_body
from benchrunner.cli.thresholds import ThresholdFlags, model_body, thresholds_body
from benchrunner.client import BenchrunnerClient, Page
from benchrunner.server.routes import alerts, reports, run, thresholds
from tests.unit.report_samples import with_thresholds

PROJECT = "/v0/projects/{project}"
NAMED = {"uuid": "u", "name": "n", "slug": "s"}
DIMENSION = {**NAMED, "project": "p"}
THRESHOLD = {
    "uuid": "t",
    "project": "p",
    "branch": NAMED,
    "testbed": NAMED,
    "measure": {**NAMED, "units": "ns"},
    "benchmark": None,
    "model": {"uuid": "m", "test": "percentage", "upper_boundary": 0.1},
    "alert_when_noisy": False,
    "confirm": 0,
    "bisect": False,
}
ALERT = {
    "uuid": "a",
    "kind": "boundary",
    "report": "r",
    "branch": DIMENSION,
    "testbed": DIMENSION,
    "benchmark": DIMENSION,
    "measure": {**DIMENSION, "units": "ns"},
    "status": "active",
    "added_by_a_newer_server": {"anything": 1},
}
PRECISION = {
    "project": "p",
    "overall": {"alerts": 1, "true_positive": 1, "false_positive": 0, "expected": 0,
                "untriaged": 0, "precision": 1.0},
    "thresholds": [],
}  # fmt: skip


def _run(client: BenchrunnerClient) -> object:
    return client.run(RunBody(project="demo", spec="small", template="bench.noop"))


def _update_report(client: BenchrunnerClient) -> object:
    return client.update_report("demo", "r", bisect_range=["c1", "c2"], bisect_image="x:{commit}")


def _create_threshold(client: BenchrunnerClient) -> object:
    model = ThresholdModelBody(test="percentage", upper_boundary=0.1)
    return client.create_threshold(
        "demo", branch="main", testbed="ci", measure="latency", model=model, confirm=2
    )


def _update_threshold(client: BenchrunnerClient) -> object:
    return client.update_threshold("demo", "t", ThresholdModelBody(test="static"), True)


Call = Callable[[BenchrunnerClient], object]
CONVERTED: list[tuple[str, str, type[BaseModel] | None, Any, Call, object]] = [
    # method, route path, request model, answer model, the client's call, a canned answer
    ("POST", "/v0/run", RunBody, None, _run, with_thresholds()),
    ("PATCH", f"{PROJECT}/reports/{{report}}", ReportUpdate, Report, _update_report,
     with_thresholds()),
    ("POST", f"{PROJECT}/thresholds", ThresholdCreate, Threshold, _create_threshold, THRESHOLD),
    ("PUT", f"{PROJECT}/thresholds/{{threshold}}", ThresholdUpdate, Threshold,
     _update_threshold, THRESHOLD),
    ("GET", f"{PROJECT}/thresholds/{{threshold}}", None, Threshold,
     lambda c: c.get_threshold("demo", "t"), THRESHOLD),
    ("GET", f"{PROJECT}/thresholds", None, list[Threshold],
     lambda c: c.list_thresholds("demo"), [THRESHOLD]),
    ("GET", f"{PROJECT}/alerts", None, list[Alert], lambda c: c.list_alerts("demo"), [ALERT]),
    ("GET", f"{PROJECT}/alerts/{{alert}}", None, Alert, lambda c: c.get_alert("demo", "a"), ALERT),
    ("PATCH", f"{PROJECT}/alerts/{{alert}}", AlertUpdate, Alert,
     lambda c: c.update_alert("demo", "a", "dismissed"), ALERT),
    ("PATCH", f"{PROJECT}/alerts/{{alert}}", AlertUpdate, Alert,
     lambda c: c.triage_alert("demo", "a", None), ALERT),
    ("GET", f"{PROJECT}/alerts/precision", None, AlertPrecision,
     lambda c: c.alert_precision("demo"), PRECISION),
]  # fmt: skip


def _route(method: str, path: str) -> APIRoute:
    for module in (run, reports, thresholds, alerts):
        for route in module.router.routes:
            if (
                isinstance(route, APIRoute)
                and route.path == path
                and method in (route.methods or ())
            ):
                return route
    raise LookupError(f"no route {method} {path}")


@pytest.mark.parametrize(
    ("method", "path", "request_model", "answer_model", "call", "canned"), CONVERTED
)
def test_the_server_and_the_client_share_the_body_models(
    method: str,
    path: str,
    request_model: type[BaseModel] | None,
    answer_model: Any,
    call: Call,
    canned: object,
) -> None:
    route = _route(method, path)
    hints = typing.get_type_hints(route.endpoint)
    if request_model is None:
        assert "body" not in hints
    else:
        assert hints["body"] is request_model
        assert request_model.__module__.startswith("benchrunner.api.")
    if answer_model is not None:  # what the route returns, the client parses the answer as
        assert route.response_model == answer_model

    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(route.status_code or 200, json=canned)

    with BenchrunnerClient("http://bench.test", "t", transport=httpx.MockTransport(handler)) as c:
        answered = call(c)
    [request] = sent
    assert request.method == method
    if request_model is not None:  # what the client sends, the server's own model accepts
        request_model.model_validate(json.loads(request.content))
    if answer_model is None:
        assert type(answered) is RunAnswer
        assert answered.model_dump(mode="json", exclude_unset=True) == canned
    elif typing.get_origin(answer_model) is list:
        (item,) = typing.get_args(answer_model)
        assert isinstance(answered, Page) and all(type(a) is item for a in answered)
    else:
        assert type(answered) is answer_model


def test_the_cli_builds_the_servers_request_models() -> None:
    flags = ThresholdFlags(measures=["latency"], tests=["percentage"], upper_boundaries=["0.1"])
    body = build_body(RunFlags(template="t", spec="s", thresholds=flags), dt.datetime.now(dt.UTC))
    assert type(body) is RunBody
    assert type(thresholds_body(flags)) is RunThresholds
    assert type(model_body("static", {"upper_boundary": 1.0})) is ThresholdModelBody


def test_an_answer_model_keeps_fields_a_newer_server_adds() -> None:
    alert = Alert.model_validate(ALERT)
    assert alert.model_dump()["added_by_a_newer_server"] == ALERT["added_by_a_newer_server"]
    assert issubclass(Alert, Answer) and Alert.model_config.get("extra") == "allow"


@pytest.mark.parametrize("model", [ThresholdCreate, ThresholdUpdate, AlertUpdate, ReportUpdate])
def test_request_models_refuse_unknown_fields_as_the_server_did(model: type[BaseModel]) -> None:
    assert model.model_config.get("extra") == "forbid"


def _models(package: str) -> Iterator[type[BaseModel]]:
    root = importlib.import_module(package)
    names = [package] + [
        info.name for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}.")
    ]
    for name in names:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseModel)
                and value.__module__ == name
            ):
                yield value


def test_no_copy_of_a_shared_body_outside_the_api_package() -> None:
    """A model elsewhere with a shared body's name or exactly its fields is a copy."""
    shared = [m for m in _models("benchrunner.api") if issubclass(m, ApiBody | Answer)]
    assert len(shared) > 10
    names = {m.__name__ for m in shared}
    fields = {frozenset(m.model_fields): m for m in shared if len(m.model_fields) > 2}
    elsewhere = [
        m for package in ("benchrunner.server", "benchrunner.cli") for m in _models(package)
    ]
    elsewhere += [
        v
        for v in vars(importlib.import_module("benchrunner.client")).values()
        if isinstance(v, type) and issubclass(v, BaseModel) and v.__module__ == "benchrunner.client"
    ]
    for model in elsewhere:
        assert model.__name__ not in names, f"{model.__module__}.{model.__name__}"
        copied = fields.get(frozenset(model.model_fields))
        assert copied is None, f"{model.__module__}.{model.__name__} copies {copied}"
