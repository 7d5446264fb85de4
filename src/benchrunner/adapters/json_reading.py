"""Reading a harness's JSON export: parse it once, then fetch members by the path that an error
message names (``[3].primaryMetric.score is missing``).

Every function raises AdapterError without the harness's name; the adapter adds it at its
boundary, so one message reads ``java_jmh: [3].primaryMetric.score is missing``.
"""

from __future__ import annotations

import json

from benchrunner.adapters.base import AdapterError
from benchrunner.adapters.values import MAX_BENCHMARK_NAME, check_name, number


def load(text: str) -> object:
    """The JSON document in ``text``; not JSON, or nested too deeply for Python, is an error."""
    try:
        return json.loads(text)
    except ValueError as exc:  # JSONDecodeError, or an integer with too many digits
        raise AdapterError(f"not valid JSON: {exc}") from None
    except RecursionError:
        raise AdapterError("not valid JSON: nested too deeply") from None


def as_object(value: object, where: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise AdapterError(f"{where} must be a JSON object")
    return value


def as_array(value: object, where: str) -> list[object]:
    if not isinstance(value, list):
        raise AdapterError(f"{where} must be a JSON array")
    return value


def as_string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise AdapterError(f"{where} must be a string, got {value!r}")
    return value


def member(parent: dict[str, object], key: str, where: str) -> object:
    """``parent[key]``; a missing key is an error naming ``where.key``."""
    if key not in parent:
        raise AdapterError(f"{where}.{key} is missing" if where else f"{key} is missing")
    return parent[key]


def number_member(parent: dict[str, object], key: str, where: str) -> float:
    return number(member(parent, key, where), f"{where}.{key}")


def name_member(parent: dict[str, object], key: str, where: str) -> str:
    """A string member that must be a benchmark name the store can hold."""
    name = as_string(member(parent, key, where), f"{where}.{key}")
    check_name(name, f"{where}.{key}: benchmark", MAX_BENCHMARK_NAME)
    return name
