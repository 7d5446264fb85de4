"""``go test -json`` (test2json) events back into the text ``go test`` printed.

Each line of the stream is a JSON object such as ``{"Action": "output", "Package": "p",
"Output": "BenchmarkFib10-8 \\t 5604217\\t 210.2 ns/op\\n"}``. The ``Output`` of a package's
``output`` events, joined in order, is that package's console text; one printed line may arrive
split over several events (Go versions differ), and packages tested in parallel interleave,
so text is joined per package and a line is complete at its newline.

Detected by shape, line by line: a line that is a JSON object with a string ``Action`` is an
event; any other line (plain ``go test`` output, or stderr mixed into the stream) is passed on
as it is. Plain output therefore reads the same through this module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from benchrunner.adapters.tail_tokens import lines


def _event(line: str) -> dict[str, object] | None:
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if isinstance(event, dict) and isinstance(event.get("Action"), str):
        return event
    return None


def console_lines(text: str) -> Iterator[str]:
    """The console lines ``text`` holds, whether it is a test2json stream or plain output
    (split as ``tail_tokens.lines`` splits them)."""
    partial: dict[str, list[str]] = {}  # package -> its printed text since its last newline
    for _, line in lines(text):
        event = _event(line)
        if event is None:
            yield line
            continue
        output = event.get("Output")
        if event["Action"] != "output" or not isinstance(output, str):
            continue
        package = event.get("Package")
        pending = partial.setdefault(package if isinstance(package, str) else "", [])
        if "\n" not in output:
            pending.append(output)  # joined once its newline arrives: linear, not quadratic
            continue
        first, *middle, last = output.split("\n")
        pending.append(first)
        yield "".join(pending).removesuffix("\r")
        for complete in middle:
            yield complete.removesuffix("\r")
        pending[:] = [last] if last else []
    for pending in partial.values():
        if pending:
            yield "".join(pending).removesuffix("\r")
