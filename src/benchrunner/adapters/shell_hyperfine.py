"""hyperfine's JSON export (``hyperfine --export-json FILE``) -> latency per command.

Each entry of ``results`` is one command, named by its ``command`` (the ``--command-name`` when
one was given); its times are in seconds. As Bencher's ``shell_hyperfine``: with ``average``
``mean`` (the default) the value is ``mean`` and lower/upper are the mean minus/plus ``stddev``
(none when hyperfine wrote ``null``, after a single run); with ``median`` the value is ``median``
and lower/upper are ``min`` and ``max``. The fields Bencher requires must be there. Each run's
time (``times``, when hyperfine wrote it) is kept as the measurement's samples, in nanoseconds.
"""

from __future__ import annotations

from benchrunner.adapters.base import LATENCY, AdapterError, Measurement, Settings, errors_named
from benchrunner.adapters.json_fields import (
    JsonObject,
    as_array,
    as_object,
    load,
    member,
    name_member,
    number_member,
    path,
)
from benchrunner.adapters.values import (
    NANOSECONDS_PER,
    brief,
    number,
    plus_minus,
    samples_scaled,
    to_nanoseconds,
)

HARNESS = "shell_hyperfine"


def parse(text: str, settings: Settings) -> list[Measurement]:
    """One measurement per command, in the export's order; AdapterError naming the field when
    ``text`` is not a hyperfine export."""
    with errors_named(HARNESS):
        return _measurements(load(text), settings)


def _measurements(document: object, settings: Settings) -> list[Measurement]:
    results = as_array(member(as_object(document, ""), "results", ""), "results")
    if not results:
        raise AdapterError("results is empty: no command was benchmarked")
    return [
        _command(as_object(entry, path("results", index)), path("results", index), settings)
        for index, entry in enumerate(results)
    ]


def _command(result: JsonObject, where: str, settings: Settings) -> Measurement:
    name = name_member(result, "command", where)
    nanoseconds = {
        key: to_nanoseconds(number_member(result, key, where), "s", path(where, key))
        for key in ("mean", "median", "min", "max")
    }
    stddev = _stddev(result, where)
    # Read for their shape only: hyperfine always writes them, and Bencher requires them.
    for key in ("user", "system"):
        number_member(result, key, where)
    _check_exit_codes(member(result, "exit_codes", where), path(where, "exit_codes"))

    samples = samples_scaled(result.get("times"), NANOSECONDS_PER["s"])
    if (settings.average or "mean") == "median":
        return Measurement(
            name,
            LATENCY,
            nanoseconds["median"],
            nanoseconds["min"],
            nanoseconds["max"],
            samples=samples,
        )
    value = nanoseconds["mean"]
    if stddev is None:
        return Measurement(name, LATENCY, value, samples=samples)
    # The bounds are taken in seconds and then converted, as Bencher takes them: the same
    # floats, where converting first can differ in the last place.
    mean = number_member(result, "mean", where)
    lower, upper = plus_minus(mean, stddev, where)
    return Measurement(
        name,
        LATENCY,
        value,
        to_nanoseconds(lower, "s", where),
        to_nanoseconds(upper, "s", where),
        samples=samples,
    )


def _stddev(result: JsonObject, where: str) -> float | None:
    """``stddev`` in seconds, or None where hyperfine wrote null (after a single run)."""
    seconds = result.get("stddev")
    if seconds is None:
        return None
    return number(seconds, path(where, "stddev"))


def _check_exit_codes(value: object, where: str) -> None:
    for index, code in enumerate(as_array(value, where)):
        if code is not None and (isinstance(code, bool) or not isinstance(code, int)):
            raise AdapterError(
                f"{path(where, index)} must be an integer or null, got {brief(code)}"
            )
