"""Typed reads from a harness's JSON export. Each error names the path of the field that could
not be read (``benchmarks[3].stats.mean is missing``); the adapter puts its own name in front.
"""

from __future__ import annotations

import json
import reprlib

from benchrunner.adapters.base import AdapterError
from benchrunner.adapters.values import number

JsonObject = dict[str, object]

_BRIEF = reprlib.Repr()
_BRIEF.maxstring = _BRIEF.maxlong = _BRIEF.maxother = 40


def load(text: str) -> object:
    """The JSON document in ``text``, or an AdapterError when it is not JSON."""
    try:
        return json.loads(text)
    except ValueError as exc:  # JSONDecodeError, or an integer with too many digits
        raise AdapterError(f"not valid JSON: {exc}") from None
    except RecursionError:
        raise AdapterError("not valid JSON: nested too deeply") from None


def path(where: str, key: str | int) -> str:
    """The path of ``key`` inside the value at ``where`` ('' for the document itself)."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def as_object(value: object, where: str) -> JsonObject:
    if not isinstance(value, dict):
        raise AdapterError(f"{where or 'the document'} must be a JSON object")
    return value


def as_list(value: object, where: str) -> list[object]:
    if not isinstance(value, list):
        raise AdapterError(f"{where or 'the document'} must be a JSON array")
    return value


def member(document: JsonObject, key: str, where: str) -> object:
    """``document[key]``, where ``document`` is the object at path ``where``."""
    try:
        return document[key]
    except KeyError:
        raise AdapterError(f"{path(where, key)} is missing") from None


def as_number(value: object, where: str) -> float:
    """``value`` as a finite float; a bool, a string, NaN or infinity is an AdapterError."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AdapterError(f"{where} must be a number, got {brief(value)}")
    return number(value, where)


def number_member(document: JsonObject, key: str, where: str) -> float:
    """``document[key]`` as a finite float."""
    return as_number(member(document, key, where), path(where, key))


def text_member(document: JsonObject, key: str, where: str) -> str:
    value = member(document, key, where)
    if not isinstance(value, str):
        raise AdapterError(f"{path(where, key)} must be a string, got {brief(value)}")
    return value


def brief(value: object) -> str:
    """A value for an error message, cut short: an export can hold megabytes in one field."""
    return _BRIEF.repr(value)
