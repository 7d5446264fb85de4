"""The navigation every page shows, and which of its entries a path belongs to."""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "/console"


@dataclass(frozen=True)
class NavLink:
    label: str
    href: str
    section: str
    """The path segment that selects this entry: ``jobs`` for ``/console/jobs`` and for
    ``/console/projects/{project}/jobs/...``; empty for the dashboard."""
    more: bool = False
    """Listed under the header's "More" disclosure rather than in its row: the entries a
    reader visits less often than the daily ones (what ran, what it measured, what alerted),
    so the header stays one line at 1280 px with a long email beside it (docs/console.md)."""


NAV = (
    NavLink("Dashboard", PREFIX, ""),
    NavLink("Projects", f"{PREFIX}/projects", "projects"),
    NavLink("Jobs", f"{PREFIX}/jobs", "jobs"),
    NavLink("Reports", f"{PREFIX}/reports", "reports"),
    NavLink("Perf", f"{PREFIX}/perf", "perf"),
    NavLink("Alerts", f"{PREFIX}/alerts", "alerts"),
    NavLink("Thresholds", f"{PREFIX}/thresholds", "thresholds", more=True),
    NavLink("Bisections", f"{PREFIX}/bisections", "bisections", more=True),
    NavLink("Calibrations", f"{PREFIX}/calibrations", "calibrations", more=True),
    NavLink("Runners", f"{PREFIX}/runners", "runners", more=True),
    NavLink("Specs", f"{PREFIX}/specs", "specs", more=True),
)


@dataclass(frozen=True)
class Nav:
    """The navigation as one page shows it: each entry with whether it is the current one."""

    main: list[tuple[NavLink, bool]]
    more: list[tuple[NavLink, bool]]

    @property
    def more_current(self) -> bool:
        """Whether the current entry is one under "More" (its summary is then marked too)."""
        return any(current for _, current in self.more)


def nav_for(path: str) -> Nav:
    """The navigation of the page at ``path``, its current entry marked."""
    section = section_of(path)
    marked = [(link, link.section == section) for link in NAV]
    return Nav(
        main=[entry for entry in marked if not entry[0].more],
        more=[entry for entry in marked if entry[0].more],
    )


PROJECT_SECTIONS = (
    "jobs",
    "reports",
    "perf",
    "alerts",
    "thresholds",
    "bisections",
    "calibrations",
)
"""The entries whose pages belong to one project: ``/console/projects/{project}/<section>``."""


def section_of(path: str) -> str | None:
    """The navigation section of a console path, or None for pages outside it (sign-in)."""
    parts = [p for p in path.removeprefix(PREFIX).split("/") if p]
    if not parts:
        return ""
    if parts[0] == "projects" and len(parts) >= 3 and parts[2] in PROJECT_SECTIONS:
        return parts[2]
    known = {link.section for link in NAV}
    return parts[0] if parts[0] in known else None
