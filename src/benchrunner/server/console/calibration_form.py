"""The form that starts a calibration (docs/how-to/thresholds-alerts.md): the spec, the job
(a template and its arguments, or an image), how many runs and the false-alarm rate, and the
branch and testbed the proposal is for, read into the API's own ``CalibrationCreate``."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import ValidationError

from benchrunner.api.calibrations import CalibrationCreate
from benchrunner.server.console.bisect_form import named_values

FIELDS = (
    "spec",
    "how",
    "template",
    "args",
    "image",
    "iterations",
    "adapter",
    "runs",
    "false_alarm_rate",
    "branch",
    "testbed",
)
DEFAULTS = {
    "how": "template",
    "iterations": "1",
    "adapter": "json",
    "runs": "10",
    "false_alarm_rate": "0.01",
    "branch": "main",
    "testbed": "localhost",
}


@dataclass
class CalibrationForm:
    """What the form shows: its values (as typed) and the problems, by field ("" above it)."""

    values: dict[str, str]
    errors: dict[str, str] = field(default_factory=dict)

    @classmethod
    def entered(cls, raw: dict[str, str]) -> CalibrationForm:
        return cls({name: raw.get(name, DEFAULTS.get(name, "")).strip() for name in FIELDS})

    @property
    def general(self) -> str | None:
        return self.errors.get("")


def checked_body(form: CalibrationForm) -> CalibrationCreate | None:
    """The API's body for the form's values, or None with the form's errors set."""
    v = form.values
    raw: dict[str, object] = {
        name: v[name]
        for name in ("spec", "iterations", "adapter", "runs", "false_alarm_rate", "branch")
        if v[name]
    }
    raw["testbed"] = v["testbed"] or DEFAULTS["testbed"]
    if not v["spec"]:
        form.errors["spec"] = "choose the spec every run runs on"
    if v["how"] == "image":
        if not v["image"]:
            form.errors["image"] = "give the image's digest or a tag of the project's registry"
        raw["image"] = v["image"]
    else:
        if not v["template"]:
            form.errors["template"] = "choose the template the runs run"
        args = named_values(v["args"])
        if args is None:
            form.errors["args"] = "one name=value a line, e.g. ms=5"
        raw.update(template=v["template"], args=args or None)
    try:
        body = CalibrationCreate.model_validate(raw)
    except ValidationError as exc:
        for error in exc.errors():
            where = str(error["loc"][0]) if error["loc"] else ""
            name = where if where in FIELDS else ""
            form.errors.setdefault(name, error["msg"] if name else f"{where}: {error['msg']}")
        return None
    return None if form.errors else body


def field_of(message: str) -> str:
    """The field a refusal of the API speaks of, by how its message starts ("" for none)."""
    for start, name in (("spec ", "spec"), ("image", "image"), ("template", "template")):
        if message.startswith(start):
            return name
    if message.startswith("the job to calibrate") and "template" in message:
        return "template"
    return ""
