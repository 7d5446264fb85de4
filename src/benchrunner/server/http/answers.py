"""How a route documents its answer with an ``api`` answer model: the route still returns the
JSON its view builds (the wire is the views', with no second serialization), and the OpenAPI
document describes that answer with the model the client parses it with."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def answer(
    model: type[BaseModel], status: int = 200, *, many: bool = False
) -> dict[int | str, Any]:
    """The route's ``responses`` entry: its ``status`` answer is a ``model`` (a list of them
    with ``many``)."""
    return {status: {"model": list[model] if many else model}}  # type: ignore[valid-type]
