"""The perf page's table body (the plot's points for a reader without JavaScript) as HTML.

Built here rather than in the template: a table is a few hundred rows of eleven cells
(``perf_chart.table_points``), and the template engine's per-cell lookups and escapes cost
more than reading them from the database (benchmarks/RESULTS.md, "Console pages"). Every
text that comes from users (the branch, testbed and benchmark names) is escaped; the rest is
numbers, dates and UUIDs that ``perf_chart`` formatted.
"""

from __future__ import annotations

from collections.abc import Iterable

from markupsafe import Markup, escape

from benchrunner.server.console.perf_chart import Row

NOISY_CELL = '<strong class="noisy-mark">noisy</strong>'


def table_body(rows: Iterable[Row], project_slug: str) -> Markup:
    """``<tr>`` elements of the rows, in order; an alerted row has class ``alerted`` and its
    alert's UUID in ``data-alert``, and links to the alerts its report raised; a noisy report's
    row has ``data-noisy`` and says "noisy" in its last cell."""
    base = f"/console/projects/{escape(project_slug)}"
    names: dict[str, str] = {}

    def name(text: str) -> str:
        found = names.get(text)
        if found is None:
            found = names[text] = str(escape(text))
        return found

    html = []
    for r in rows:
        noisy = ' data-noisy="true"' if r.noisy else ""
        if r.alert:
            opening = f'<tr class="alerted" data-alert="{r.alert}"{noisy}>'
            alert = (
                f'<a class="error" href="{base}/alerts?status=all&amp;report={r.report}">'
                f"{escape(r.alert_text)}</a>"
            )
        else:
            opening, alert = f"<tr{noisy}>", ""
        html.append(
            f"{opening}<td>{r.start_time}</td><td>{name(r.benchmark)}</td>"
            f"<td>{name(r.branch)}</td><td>{name(r.testbed)}</td>"
            f'<td class="num">{r.iteration}</td><td class="num">{r.value}</td>'
            f'<td class="num">{r.lower_limit}</td><td class="num">{r.upper_limit}</td>'
            f'<td>{alert}</td><td><a class="mono" href="{base}/reports/{r.report}">'
            f"{r.report[:8]}</a></td><td>{NOISY_CELL if r.noisy else ''}</td></tr>\n"
        )
    return Markup("".join(html))  # noqa: S704 - every user text above is escaped
