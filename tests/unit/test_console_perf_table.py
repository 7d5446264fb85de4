"""The perf page's table body, built as HTML outside the template: names from users escaped,
alerted rows and noisy reports' rows marked and linked."""

from __future__ import annotations

import html.parser
from dataclasses import dataclass, field

from benchrunner.server.console.perf_chart import Row
from benchrunner.server.console.perf_table import table_body

ALERT = "0b6c1f4e-0000-4000-8000-000000000001"
REPORT = "5d0e7a52-0000-4000-8000-000000000002"


def _row(benchmark: str, alert: str | None, *, noisy: bool = False) -> Row:
    return Row(
        start_time="2026-01-01 00:00:00",
        benchmark=benchmark,
        branch="feature/<b>&co",
        testbed='box "1"',
        iteration=0,
        value="150",
        lower_limit="\u2013",
        upper_limit="110",
        alert=alert,
        alert_text="upper (active)" if alert else "",
        report=REPORT,
        noisy=noisy,
    )


@dataclass
class _Parsed:
    attrs: dict[str, str | None]
    cells: list[str] = field(default_factory=list)
    links: list[str | None] = field(default_factory=list)


class _Cells(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[_Parsed] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append(_Parsed(dict(attrs)))
        elif tag == "td":
            self.rows[-1].cells.append("")
        elif tag == "a":
            self.rows[-1].links.append(dict(attrs)["href"])

    def handle_data(self, data: str) -> None:
        if self.rows and self.rows[-1].cells:
            self.rows[-1].cells[-1] += data


def test_user_names_are_escaped_and_alerts_marked() -> None:
    body = table_body([_row("<script>alert(1)</script>", None), _row("sort", ALERT)], "p&q")
    assert "<script>" not in body
    parser = _Cells()
    parser.feed(str(body))
    plain, alerted = parser.rows
    assert plain.cells[1:4] == ["<script>alert(1)</script>", "feature/<b>&co", 'box "1"']
    assert plain.attrs == {}
    assert alerted.attrs == {"class": "alerted", "data-alert": ALERT}
    assert alerted.cells[8] == "upper (active)"
    assert alerted.links == [
        f"/console/projects/p&q/alerts?status=all&report={REPORT}",
        f"/console/projects/p&q/reports/{REPORT}",
    ]


def test_a_noisy_reports_row_says_so() -> None:
    parser = _Cells()
    parser.feed(str(table_body([_row("sort", None, noisy=True), _row("sort", ALERT)], "p")))
    noisy, alerted = parser.rows
    assert noisy.attrs == {"data-noisy": "true"}
    assert noisy.cells[10].strip() == "noisy"
    assert alerted.cells[10].strip() == ""
    assert "data-noisy" not in alerted.attrs
