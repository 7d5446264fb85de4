"""The console's colours pass WCAG AA: every text/background pair the stylesheet declares in a
``contrast:`` comment has a contrast ratio of at least 4.5:1 (WCAG 2.x relative luminance)."""

from __future__ import annotations

import re
from pathlib import Path

import benchrunner.server.console as console

STYLESHEET = Path(console.__file__).with_name("static") / "console.css"
AA_NORMAL_TEXT = 4.5

_VARIABLE = re.compile(r"(--[\w-]+):\s*(#[0-9a-fA-F]{6})\s*;")
_PAIR = re.compile(r"contrast:\s*(--[\w-]+)\s+on\s+(--[\w-]+)")


def _channel(value: int) -> float:
    c = value / 255
    return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4


def luminance(hex_colour: str) -> float:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * _channel(r) + 0.7152 * _channel(g) + 0.0722 * _channel(b)


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


WORKED_VALUES = {
    ("#000000", "#ffffff"): 21.0,
    ("#777777", "#ffffff"): 4.48,  # just under AA: the yardstick can fail a pair
    ("#ffffff", "#ffffff"): 1.0,
}


def test_every_declared_pair_passes_aa() -> None:
    assert {pair: round(contrast(*pair), 2) for pair in WORKED_VALUES} == WORKED_VALUES
    css = STYLESHEET.read_text()
    colours = dict(_VARIABLE.findall(css))
    pairs = _PAIR.findall(css)
    assert len(pairs) >= 10, "the stylesheet lost its contrast: comments"
    failing = {
        f"{fg} on {bg}": round(contrast(colours[fg], colours[bg]), 2)
        for fg, bg in pairs
        if contrast(colours[fg], colours[bg]) < AA_NORMAL_TEXT
    }
    assert failing == {}
