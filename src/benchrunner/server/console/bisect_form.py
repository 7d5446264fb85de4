"""The bisect form (docs/how-to/bisect.md): what an alert's page prefills (good and bad from its
report and the one before, its benchmark and measure) and what the person types (the candidate
commits one per line, and how each commit runs: an image tag holding ``{commit}``, or a
template and its arguments), read into the API's own ``BisectionCreate``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from sqlalchemy.engine import Connection

from benchrunner.api.bisections import BisectionCreate
from benchrunner.server.bisection.auto import DEFAULTS as SEARCH_DEFAULTS
from benchrunner.server.store import reports

HOW = ("template", "image")
FIELDS = (
    "alert",
    "good",
    "bad",
    "benchmark",
    "measure",
    "candidates",
    "how",
    "image",
    "template",
    "args",
    "spec",
    "adapter",
    "margin",
    "job_budget",
)
DEFAULTS = {
    "how": "template",
    "adapter": "magic",
    "margin": str(SEARCH_DEFAULTS["margin"]),
    "job_budget": str(SEARCH_DEFAULTS["job_budget"]),
}
_FIELD_OF_LOCATION = {"benchmarks": "benchmark", "candidates": "candidates"}


@dataclass
class BisectForm:
    """What the form shows: its values (as typed) and the problems, by field ("" above it)."""

    values: dict[str, str]
    errors: dict[str, str] = field(default_factory=dict)

    @classmethod
    def entered(cls, raw: dict[str, str]) -> BisectForm:
        return cls({name: raw.get(name, DEFAULTS.get(name, "")).strip() for name in FIELDS})

    @property
    def general(self) -> str | None:
        return self.errors.get("")


def prefilled(conn: Connection, alert: Any) -> dict[str, str]:
    """The form's values for a bisection of ``alert``: its benchmark and measure, bad the
    version of its report and good the one of the report before it on its branch and testbed
    (blank where a report has no version)."""
    good, bad = reports.versions_before(conn, alert.metric_report_uuid)
    return {
        **DEFAULTS,
        "alert": str(alert.uuid),
        "benchmark": alert.benchmark_name,
        "measure": alert.measure_slug,
        "good": good or "",
        "bad": bad or "",
    }


def named_values(text: str) -> dict[str, str] | None:
    """``name=value`` lines (blank ones skipped); None when a line has no ``=``."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        name, equals, value = line.partition("=")
        if not equals or not name.strip():
            return None
        found[name.strip()] = value.strip()
    return found


def checked_body(form: BisectForm) -> BisectionCreate | None:
    """The API's body for the form's values, or None with the form's errors set."""
    v = form.values
    raw: dict[str, object] = {
        "benchmarks": [b.strip() for b in v["benchmark"].split(",") if b.strip()],
        "measure": v["measure"],
        "good": v["good"],
        "bad": v["bad"],
        "candidates": [line.strip() for line in v["candidates"].splitlines() if line.strip()],
        "adapter": v["adapter"] or "magic",
    }
    if v["alert"]:
        raw["alert"] = v["alert"]
    if v["spec"]:
        raw["spec"] = v["spec"]
    if v["margin"]:
        raw["margin"] = v["margin"]
    if v["job_budget"]:
        raw["job_budget"] = v["job_budget"]
    if v["how"] == "image":
        if not v["image"]:
            form.errors["image"] = "give an image tag holding {commit}, e.g. sortlib:{commit}"
        raw["image"] = v["image"]
    else:
        if not v["template"]:
            form.errors["template"] = "choose the template each commit runs"
        args = named_values(v["args"])
        if args is None:
            form.errors["args"] = "one name=value a line, e.g. commit={commit}"
        raw.update(template=v["template"], args=args or {})
    if not raw["candidates"]:
        form.errors["candidates"] = (
            "paste the commits after good up to bad, oldest first: "
            "git rev-list --first-parent --reverse GOOD..BAD"
        )
    try:
        body = BisectionCreate.model_validate(raw)
    except ValidationError as exc:
        for error in exc.errors():
            where = str(error["loc"][0]) if error["loc"] else ""
            name = _FIELD_OF_LOCATION.get(where, where if where in FIELDS else "")
            form.errors.setdefault(name, f"{where}: {error['msg']}" if not name else error["msg"])
        return None
    return None if form.errors else body


_FIELD_OF_MESSAGE = (
    ("candidates", "candidates"),
    ("image", "image"),
    ("args", "args"),
    ("template", "template"),
    ("good", "good"),
    ("bad", "bad"),
    ("spec ", "spec"),
    ("adapter", "adapter"),
)


def field_of(message: str) -> str:
    """The field a refusal of the API speaks of, by how its message starts ("" for none)."""
    for start, name in _FIELD_OF_MESSAGE:
        if message.startswith(start):
            return name
    return ""
