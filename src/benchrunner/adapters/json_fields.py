"""Typed reads from a harness's JSON export: parse it once, then fetch members by the path an
error message names (``benchmarks[3].stats.mean is missing``).

Every function raises AdapterError without the harness's name; the adapter puts it in front at
its boundary, so one message reads ``python_pytest: benchmarks[3].stats.mean is missing``.
"""

from __future__ import annotations

from benchrunner.adapters import json_numbers
from benchrunner.adapters.base import AdapterError
from benchrunner.adapters.values import brief, check_benchmark_name, number

JsonObject = dict[str, object]


def load(text: str) -> object:
    """The JSON document in ``text``; not JSON, or nested too deeply for Python, is an error."""
    try:
        return json_numbers.loads(text)
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


def as_array(value: object, where: str) -> list[object]:
    if not isinstance(value, list):
        raise AdapterError(f"{where or 'the document'} must be a JSON array")
    return value


def as_string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise AdapterError(f"{where} must be a string, got {brief(value)}")
    return value


def member(parent: JsonObject, key: str, where: str) -> object:
    """``parent[key]``, where ``parent`` is the object at path ``where``."""
    try:
        return parent[key]
    except KeyError:
        raise AdapterError(f"{path(where, key)} is missing") from None


def number_member(parent: JsonObject, key: str, where: str) -> float:
    """``parent[key]`` as a finite float (see ``values.number``)."""
    return number(member(parent, key, where), path(where, key))


def string_member(parent: JsonObject, key: str, where: str) -> str:
    return as_string(member(parent, key, where), path(where, key))


def name_member(parent: JsonObject, key: str, where: str) -> str:
    """A string member that must be a benchmark name the store can hold."""
    name = string_member(parent, key, where)
    check_benchmark_name(path(where, key), name)
    return name
