"""How a route answers with an ``api`` answer model.

A view builds the answer model itself (a user's, a runner's, a report's, an alert's, a job's);
FastAPI then sends the model as the route's ``response_model``. The model is the one the client
parses the answer with, so a view that leaves out a field it requires, or gives one of another
type, fails on the server, naming the field, not in a client (a key the model does not name is
sent as it is, after the named ones: ``base.Answer`` keeps them).
Routes declare ``response_model_exclude_unset=True`` (``ANSWERED``): the JSON sent holds the
fields the view gave and no default it left out (a job listed without its ``events``), in the
model's order (fields it does not name come last).

A route whose answer is large or on the hot path (``POST /v0/run``, the perf query) declares
its model as its ``response_model`` (the OpenAPI document's schema, the client's parser) but
sends its view as it is (``sent_as_built``), not validated again: the model's JSON built as
plain data (``BuiltJson``: ``views/report_json.py``, the perf query's view), as building a
model for each of its metrics or points would cost more CPU than the rest of the answer
(benchmarks/RESULTS.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, TypeAlias, TypeVar

from pydantic import BaseModel, TypeAdapter
from starlette.responses import Response

Model = TypeVar("Model", bound=BaseModel)

ANSWERED: Final[dict[str, Any]] = {"response_model_exclude_unset": True}
"""The route options of a route that returns its answer model."""

BuiltJson: TypeAlias = dict[str, Any]
"""An answer model's JSON built as plain data (the perf query's), for ``sent_as_built``; a
test checks it against the model."""

_AS_BUILT = TypeAdapter(BuiltJson)
"""How FastAPI serializes a route's ``dict[str, Any]`` answer (its response field's
``dump_json``): the bytes a view sent as built has always been answered with."""


def sent_as_built(view: BuiltJson, status_code: int = 200) -> Response:
    """The view's JSON, not validated as the route's model: for a route that declares the
    model as its ``response_model``."""
    content = _AS_BUILT.dump_json(view, by_alias=True)
    return Response(content, status_code=status_code, media_type="application/json")


def answered(model: type[Model], view: Mapping[str, Any]) -> Model:
    """The view as its answer model."""
    return model.model_validate(view)


def answered_each(model: type[Model], views: Iterable[Mapping[str, Any]]) -> list[Model]:
    """Each view of a list as its answer model."""
    return [model.model_validate(view) for view in views]
