"""The bases of the API's bodies: ``ApiBody`` for requests, ``Answer`` for what the server
answers.

What every JSON request body must satisfy before its own fields are read:

JSON can carry text that the stores cannot keep: ``\\u0000`` (PostgreSQL text refuses NUL) and
lone surrogates such as ``\\ud800`` (not encodable as UTF-8, so neither storable nor echoed
back). Found anywhere in a body, keys included, they are a 400 naming the field, never a 500.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, TypeAlias

from pydantic import BaseModel, ConfigDict, model_validator

FreeJson: TypeAlias = dict[str, Any]
"""A JSON object whose keys are not the API's to fix: they depend on what wrote it (a job
event's ``meta``, per event type) or on the user (a variant's ``parameters``)."""


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored as text, or None."""
    if "\x00" in value:
        return "contains a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (not Unicode text)"
    return None


def refusal_message(errors: Iterable[Mapping[str, Any]]) -> str:
    """``invalid request: field: why; ...``: how the server answers a body its model refuses
    (the ``body`` prefix of each field's location left out), and how the client reports a body
    it refuses before sending it."""
    parts = []
    for error in errors:
        location = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
        parts.append(f"{location}: {error.get('msg')}" if location else str(error.get("msg")))
    return "invalid request: " + "; ".join(parts)


def _find_bad_text(value: Any, where: str) -> str | None:
    if isinstance(value, str):
        problem = text_problem(value)
        return None if problem is None else f"{where or 'body'} {problem}"
    if isinstance(value, dict):
        for key, item in value.items():
            inner = f"{where}.{key}" if where else str(key)
            if isinstance(key, str) and text_problem(key) is not None:
                return f"a key in {where or 'the body'} {text_problem(key)}"
            found = _find_bad_text(item, inner)
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _find_bad_text(item, f"{where}[{index}]")
            if found is not None:
                return found
    return None


class ApiBody(BaseModel):
    """The base of every request body model: plain text only, anywhere in it but in its
    ``ADAPTER_INPUT`` fields."""

    ADAPTER_INPUT: ClassVar[frozenset[str]] = frozenset()
    """Top-level fields holding harness output, which the adapter checks (and names itself
    in the error) before any of it is kept."""

    @model_validator(mode="before")
    @classmethod
    def _plain_text_only(cls, data: Any) -> Any:
        if isinstance(data, dict) and cls.ADAPTER_INPUT:
            data_checked = {k: v for k, v in data.items() if k not in cls.ADAPTER_INPUT}
        else:
            data_checked = data
        problem = _find_bad_text(data_checked, "")
        if problem is not None:
            raise ValueError(problem)
        return data


class Answer(BaseModel):
    """The base of every answer model: fields it does not name (added by a newer server) are
    never an error; they are kept as sent, so that a ``--json`` print shows every field."""

    model_config = ConfigDict(extra="allow")
