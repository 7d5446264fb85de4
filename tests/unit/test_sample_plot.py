"""The report page's distribution plot: one dot per kept sample, a box at the quartiles, text
escaped."""

from __future__ import annotations

import re

from benchrunner.core.samples import Samples
from benchrunner.server.console.sample_plot import box_strip_svg, distributions


def test_the_box_spans_the_quartiles_and_every_sample_is_a_dot() -> None:
    svg = str(box_strip_svg([0.0, 1.0, 2.0, 3.0, 4.0], 0.0, 4.0, "a <b>"))
    assert svg.count('class="sample"') == 5
    box = re.search(r'class="box" x="([\d.]+)" y="\d+" width="([\d.]+)"', svg)
    assert box is not None
    left, width = float(box.group(1)), float(box.group(2))
    # quartiles 1 and 3 of 0..4 on an axis from 8 to 472 px
    assert (left, left + width) == (8 + 464 / 4, 8 + 464 * 3 / 4)
    assert "a &lt;b&gt;" in svg and "<b>" not in svg


def test_one_value_or_equal_values_draw_in_the_middle() -> None:
    svg = str(box_strip_svg([5.0, 5.0], 5.0, 5.0, "flat"))
    assert svg.count('cx="240.0"') == 2


def test_distributions_join_a_benchmark_iterations_and_count_what_was_cut() -> None:
    def entry(uuid: str) -> dict[str, object]:
        return {"metric": {"uuid": uuid}, "measure": {"name": "Latency", "units": "ns"}}

    view = {
        "results": [
            [{"benchmark": {"name": "a"}, "measures": [entry("m0")]}],
            [{"benchmark": {"name": "a"}, "measures": [entry("m1")]}],
        ]
    }
    found = {"m0": Samples((1.0, 3.0), 5000, 0.5, 9.0), "m1": Samples((2.0,), 1, 2.0, 2.0)}
    [shown] = distributions(view, found)
    assert (shown.count, shown.kept, shown.minimum, shown.median, shown.maximum) == (
        5001,
        3,
        0.5,
        2.0,
        9.0,
    )
