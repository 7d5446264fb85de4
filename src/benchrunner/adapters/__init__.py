"""Harness output -> Bencher Metric Format measurements. Pure functions, one module a harness.

Adapter names are Bencher's (``settings.adapter``). A language name means ``magic`` limited to
that language's harnesses; ``magic`` tries every harness and takes the first that reads the
output, as Bencher's does.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Sequence
from typing import cast

from benchrunner.adapters.base import (
    Adapter,
    AdapterError,
    Average,
    Fold,
    Measurement,
    Settings,
)

__all__ = [
    "ADAPTERS",
    "AdapterError",
    "Average",
    "Fold",
    "Measurement",
    "Settings",
    "could_not_read",
    "kept",
    "parse",
    "unreadable",
]

HARNESSES: dict[str, str] = {
    "json": "json_bmf",
    "c_sharp_dot_net": "c_sharp_dot_net",
    "cpp_catch2": "cpp_catch2",
    "cpp_google": "cpp_google",
    "go_bench": "go_bench",
    "java_jmh": "java_jmh",
    "js_benchmark": "js_benchmark",
    "js_time": "js_time",
    "js_vitest": "js_vitest",
    "python_asv": "python_asv",
    "python_pytest": "python_pytest",
    "python_pyperf": "python_pyperf",
    "ruby_benchmark": "ruby_benchmark",
    "rust_bench": "rust_bench",
    "rust_criterion": "rust_criterion",
    "rust_iai": "rust_iai",
    "rust_gungraun": "rust_gungraun",
    "rust_gungraun_stdout": "rust_gungraun:parse_stdout",
    "rust_gungraun_json": "rust_gungraun:parse_json",
    "shell_hyperfine": "shell_hyperfine",
    "dart_benchmark_harness": "dart_benchmark_harness",
}
"""Adapter name -> module of this package that reads that harness (``module:function`` when
the function is not ``parse``)."""

ALIASES: dict[str, str] = {
    "json_v0": "json",  # Bencher Metric Format, version 0: the only one read here
    "rust_iai_callgrind": "rust_gungraun",
}

# Bencher v0.6.12's magic order: json, C#, C++, Dart, Go, Java, JS, Python, Ruby, Rust, shell.
LANGUAGES: dict[str, tuple[str, ...]] = {
    "c_sharp": ("c_sharp_dot_net",),
    "cpp": ("cpp_catch2", "cpp_google"),
    "dart": ("dart_benchmark_harness",),
    "go": ("go_bench",),
    "java": ("java_jmh",),
    "js": ("js_benchmark", "js_time", "js_vitest"),
    "python": ("python_asv", "python_pytest", "python_pyperf"),
    "ruby": ("ruby_benchmark",),
    "rust": ("rust_bench", "rust_criterion", "rust_iai", "rust_gungraun"),
    "shell": ("shell_hyperfine",),
}
"""Language name -> the harnesses its ``magic`` tries, in order."""

MAGIC_ORDER: tuple[str, ...] = ("json", *(h for group in LANGUAGES.values() for h in group))

ADAPTERS: frozenset[str] = frozenset({"magic", *HARNESSES, *ALIASES, *LANGUAGES})
"""Every name ``settings.adapter`` accepts."""


@functools.cache  # found once per harness, not on every report's parse
def _harness(name: str) -> Adapter:
    module_name, _, function = HARNESSES[name].partition(":")
    module = importlib.import_module(f"{__name__}.{module_name}")
    return cast(Adapter, getattr(module, function or "parse"))


def _first_that_reads(
    names: Sequence[str], label: str, text: str, settings: Settings
) -> list[Measurement]:
    errors: dict[str, str] = {}
    for name in names:
        try:
            found = _harness(name)(text, settings)
        except AdapterError as exc:
            errors[name] = str(exc)
            continue
        if found:
            return found
    message = (
        f"{label}: no harness found benchmark results in the output "
        f"(tried {', '.join(names)}); name the harness with settings.adapter for its own error"
    )
    # JSON is most likely meant as Bencher Metric Format: say what was wrong with it.
    if "json" in errors and text.lstrip().startswith(("{", "[")):
        message += f"; as Bencher Metric Format: {errors['json']}"
    raise AdapterError(message)


def kept(found: Sequence[Measurement]) -> list[Measurement]:
    """What a report keeps of one iteration's measurements, as Bencher keeps them: one
    measurement per benchmark and measure, the last one printed, in the place of the first (asv
    prints a benchmark once per environment, `go test -count 3` three times)."""
    last: dict[tuple[str, str], Measurement] = {}
    for m in found:
        last[(m.benchmark, m.measure)] = m
    return list(last.values())


def _read(adapter: str, text: str, settings: Settings) -> list[Measurement]:
    name = ALIASES.get(adapter, adapter)
    if name == "magic":
        return _first_that_reads(MAGIC_ORDER, adapter, text, settings)
    if name in LANGUAGES:
        return _first_that_reads(LANGUAGES[name], adapter, text, settings)
    if name not in HARNESSES:
        raise AdapterError(f"unknown adapter {adapter!r} (supported: {sorted(ADAPTERS)})")
    return _harness(name)(text, settings)


def unreadable(text: str) -> str | None:
    """Why ``text`` is not plain text, or None: a NUL character (no store keeps it as text) or
    a lone surrogate (what JSON's ``\\udXXX`` escapes make of bytes that are not UTF-8).
    Adapters read around such characters on lines they skip; a caller that refuses them
    outright calls this first."""
    nul = text.find("\x00")
    if nul >= 0:
        return f"contains a NUL character (at character {nul})"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"is not UTF-8 text (a lone surrogate at character {exc.start})"
    return None


def parse(adapter: str, text: str, settings: Settings | None = None) -> list[Measurement]:
    """Parse one iteration's output into the measurements a report keeps (see ``kept``).
    Raises AdapterError with a message a user can act on (``could_not_read`` puts the adapter
    and the output's place in front of it)."""
    return kept(_read(adapter, text, settings or Settings()))


def could_not_read(adapter: str, where: str, error: AdapterError) -> str:
    """The message of an output ``adapter`` could not read: ``adapter <name> could not read
    <where>: <why>`` (the harness's own name is not repeated before its reason)."""
    reason = str(error).removeprefix(f"{ALIASES.get(adapter, adapter)}: ")
    return f"adapter {adapter} could not read {where}: {reason}"
