"""How a route answers with an ``api`` answer model.

A view builds the answer's JSON; the route returns it as its model (``answered``), which FastAPI
then sends as the route's ``response_model``. The model is the one the client parses the answer
with, so a view that leaves out a field it requires, or gives one of another type, fails on
the server, naming the field, not in a client (a key the model does not name is sent as it
is, after the named ones: ``base.Answer`` keeps them).
Routes declare ``response_model_exclude_unset=True`` (``ANSWERED``): the JSON sent holds the
view's fields and no default the view left out (a job listed without its ``events``), in the
view's order as long as the model declares its fields in that order (fields it does not name
come last).

A route on the hot path (``POST /v0/run``) still answers its view as it is: validating a
report's every metric again would cost CPU on every submission.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, TypeVar

from pydantic import BaseModel

Model = TypeVar("Model", bound=BaseModel)

ANSWERED: Final[dict[str, Any]] = {"response_model_exclude_unset": True}
"""The route options of a route that returns its answer model."""


def answered(model: type[Model], view: Mapping[str, Any]) -> Model:
    """The view as its answer model."""
    return model.model_validate(view)


def answered_each(model: type[Model], views: Iterable[Mapping[str, Any]]) -> list[Model]:
    """Each view of a list as its answer model."""
    return [model.model_validate(view) for view in views]
