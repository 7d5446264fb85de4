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


NAV = (
    NavLink("Dashboard", PREFIX, ""),
    NavLink("Runners", f"{PREFIX}/runners", "runners"),
    NavLink("Specs", f"{PREFIX}/specs", "specs"),
    NavLink("Projects", f"{PREFIX}/projects", "projects"),
    NavLink("Jobs", f"{PREFIX}/jobs", "jobs"),
    NavLink("Reports", f"{PREFIX}/reports", "reports"),
    NavLink("Perf", f"{PREFIX}/perf", "perf"),
    NavLink("Alerts", f"{PREFIX}/alerts", "alerts"),
    NavLink("Thresholds", f"{PREFIX}/thresholds", "thresholds"),
    NavLink("Bisections", f"{PREFIX}/bisections", "bisections"),
    NavLink("Calibrations", f"{PREFIX}/calibrations", "calibrations"),
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
