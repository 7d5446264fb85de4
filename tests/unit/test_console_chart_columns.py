"""A chart's columns travel packed: little-endian doubles in base64, NaN for a missing value,
bit for bit (what the JSON text of a number would round to is not in question), and the
page's script holds the chart with only its columns packed."""

from __future__ import annotations

import base64
import json
import math
import struct

from benchrunner.server.console.chart_columns import packed, packed_chart
from benchrunner.server.console.perf_chart import Chart, Dimension, Line, Marker


def _unpacked(text: str) -> list[float | None]:
    raw = base64.b64decode(text)
    doubles = struct.unpack(f"<{len(raw) // 8}d", raw)
    return [None if math.isnan(v) else v for v in doubles]


def test_a_column_is_its_doubles_bit_for_bit_with_nan_for_none() -> None:
    values = [0.1, None, 1766948989.001, -0.0, 5e-324, 1.7976931348623157e308, math.inf, None]
    text = packed(values)
    assert text is not None
    assert base64.b64decode(text)[:8] == struct.pack("<d", 0.1)  # little-endian
    found = _unpacked(text)
    assert found == values
    negative_zero = found[3]
    assert negative_zero is not None and math.copysign(1.0, negative_zero) == -1.0
    assert packed(None) is None
    assert packed([]) == ""


def test_the_page_gets_the_chart_with_its_columns_packed() -> None:
    chart = Chart(
        measure=Dimension("Latency", "latency", "ns"),
        x=[1.0, 2.0, 3.0],
        lines=[
            Line(
                "main",
                "box",
                "sort",
                values=[10.0, None, 12.0],
                lower=None,
                upper=[11.0, None, 13.0],
                baseline=[10.0, None, 10.5],
                noisy=[None, None, 12.0],
            ),
            Line("main", "box", "hash", [1.0, 2.0, 3.0], None, None, None),
        ],
        markers=[Marker(0, 3.0, 12.0, "upper", "active", "a-uuid", "r-uuid")],
    )
    data = chart.as_json()
    sent = json.loads(str(chart.json_script()))
    assert sent == packed_chart(data)
    assert sent["markers"] == data["markers"]  # a few numbers: as they are
    assert _unpacked(sent["x"]) == data["x"]
    for line, sent_line in zip(data["lines"], sent["lines"], strict=True):
        assert _unpacked(sent_line["values"]) == line["values"]
        assert (sent_line["noisy"] is None) == (line["noisy"] is None)
        if line["band"] is None:
            assert sent_line["band"] is None
        else:
            assert _unpacked(sent_line["band"]["low"]) == line["band"]["low"]
            assert _unpacked(sent_line["band"]["high"]) == line["band"]["high"]
            assert sent_line["band"]["high_is_limit"] is True
    assert _unpacked(sent["lines"][0]["noisy"]) == [None, None, 12.0]
