"""The perf page's table as the template renders it: a long history lists its newest points
and every older alert, says how many it leaves out and links to the export of all of them,
the page's state in the link; a short one is listed whole, without that line."""

from __future__ import annotations

import datetime as dt
import html
import re
import uuid
from types import SimpleNamespace

from starlette.datastructures import QueryParams

from benchrunner.server.console.nav import nav_for
from benchrunner.server.console.pages.perf import PerfPage
from benchrunner.server.console.perf_chart import (
    TABLE_ROWS,
    Dimension,
    Named,
    Names,
    build_charts,
)
from benchrunner.server.console.perf_state import DIMENSIONS, parse_state
from benchrunner.server.console.perf_table import table_body
from benchrunner.server.console.templating import environment
from benchrunner.server.store.accounts import ProjectRow
from benchrunner.server.store.perf import PlotAlert, PlotPoint

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
NAMES = Names(
    branches={1: Dimension("main", "main")},
    testbeds={1: Dimension("box", "box")},
    benchmarks={1: Dimension("sort", "sort")},
    measures={1: Dimension("Latency", "latency", "ns")},
)
ALERT = 7
"""The alert row of the alerted point."""
QUERY = "branches=main&testbeds=box&benchmarks=sort&measures=latency&scale=log"


def _page(points: int, alerted: int) -> str:
    history = [
        PlotPoint(
            1,
            1,
            1,
            1,
            k,
            int((T0 + dt.timedelta(hours=k)).timestamp()) * 1_000_000,
            0,
            100.0 + k,
            100.0,
            None,
            110.0,
            ALERT if k == alerted else None,
            0,
        )
        for k in range(points)
    ]
    named = Named(
        reports={k: uuid.uuid4() for k in range(points)},
        alerts={ALERT: PlotAlert(uuid.uuid4(), "upper", "active")},
    )
    project = ProjectRow(1, uuid.uuid4(), 1, "Bench", "bench", "public", T0, T0)
    page = PerfPage(
        project,
        choices={name: [] for name in DIMENSIONS},
        more={name: 0 for name in DIMENSIONS},
        chosen={name: set() for name in DIMENSIONS},
        errors={},
        charts=build_charts(history, NAMES, named),
        ran=True,
    )
    state = parse_state(QueryParams(QUERY), T0 + dt.timedelta(days=400))
    return environment.get_template("perf.html").render(
        request=None,
        viewer=SimpleNamespace(signed_in=False),
        nav=nav_for("/console/projects/bench/perf"),
        csrf_token="",
        csrf_input="",
        static=lambda path: f"/static/{path}",
        project=project,
        state=state,
        page=page,
        table_body=table_body,
        labels={name: name.title() for name in DIMENSIONS},
    )


def test_a_long_history_lists_the_newest_points_and_every_alert_and_links_to_all() -> None:
    text = _page(1234, alerted=3)
    tbody = text[text.index("<tbody>") : text.index("</tbody>")]
    assert tbody.count("<tr") == TABLE_ROWS + 1
    assert tbody.count('class="alerted"') == 1
    [note] = re.findall(r'<p class="perf-table-note">(.*?)</p>', text)
    assert f"The newest {TABLE_ROWS} of 1,234 points, and the 1 older one(s)" in note
    links = [html.unescape(link) for link in re.findall(r'href="([^"]+)"', note)]
    assert [link.split("?")[0] for link in links] == [
        "/v0/projects/bench/perf/csv",
        "/v0/projects/bench/perf",
    ]
    for link in links:
        params = QueryParams(link.split("?")[1])
        assert (params["benchmarks"], params["measures"], params["scale"]) == (
            "sort",
            "latency",
            "log",
        )
    assert "1,234 point(s)" in text  # the caption counts the plot's points, all of them


def test_a_short_history_is_listed_whole_without_the_note() -> None:
    text = _page(5, alerted=2)
    tbody = text[text.index("<tbody>") : text.index("</tbody>")]
    assert tbody.count("<tr") == 5
    assert "perf-table-note" not in text
