"""The new-job forms: inputs generated from a template's typed arguments (or an image
reference) and the options every runner job takes, and the submitted values checked into the
``POST /v0/run`` body with each problem beside the field it is about.

Checks are the server's own: a template argument by ``TemplateArg.coerce`` (the function
``POST /v0/run`` resolves arguments with), the options by ``RunBody``'s validation. The rest
comes back from ``submit_run`` (a timeout over the template's limit, an unknown spec, an image
missing from the registry) and is shown beside its field as well, or above the form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import ValidationError

from benchrunner import adapters
from benchrunner.api.run import RunBody
from benchrunner.core.templates import Template, TemplateArg, TemplateError
from benchrunner.protocol import MAX_ITER

Widget = Literal["number", "text", "select"]
ARG_PREFIX = "arg."
DEFAULT_ADAPTER = "magic"


@dataclass(frozen=True)
class FormField:
    """One input as the page shows it, with what was entered and the problem with it."""

    name: str
    label: str
    widget: Widget
    value: str = ""
    required: bool = False
    minimum: float | None = None
    maximum: float | None = None
    step: str | None = None
    """``1`` for integers, ``any`` for other numbers."""
    choices: tuple[str, ...] = ()
    hint: str = ""
    error: str | None = None

    @property
    def input_id(self) -> str:
        return "field-" + self.name.replace(".", "-")

    @property
    def bounds(self) -> str:
        """The range in words, for the hint beside a number input."""
        low, high = self.minimum, self.maximum
        if low is not None and high is not None:
            return f"{_number(low)} to {_number(high)}"
        if low is not None:
            return f"at least {_number(low)}"
        if high is not None:
            return f"at most {_number(high)}"
        return ""


@dataclass(frozen=True)
class JobForm:
    """A whole form: its fields in order, and a problem that is no single field's."""

    kind: Literal["template", "image"]
    fields: tuple[FormField, ...]
    error: str | None = None
    template: str | None = None

    def get(self, name: str) -> FormField:
        return next(f for f in self.fields if f.name == name)

    @property
    def arg_fields(self) -> tuple[FormField, ...]:
        return tuple(f for f in self.fields if f.name.startswith(ARG_PREFIX))

    @property
    def option_fields(self) -> tuple[FormField, ...]:
        return tuple(f for f in self.fields if not f.name.startswith(ARG_PREFIX))

    @property
    def has_errors(self) -> bool:
        return self.error is not None or any(f.error for f in self.fields)

    def with_errors(self, errors: Mapping[str, str], general: str | None = None) -> JobForm:
        """The same form with ``errors`` beside their fields; one naming no field of this
        form goes above it."""
        unplaced = [message for name, message in errors.items() if not self._has(name)]
        above = "; ".join([*([general] if general else []), *unplaced]) or None
        fields = tuple(replace(f, error=errors.get(f.name, f.error)) for f in self.fields)
        return replace(self, fields=fields, error=above)

    def _has(self, name: str) -> bool:
        return any(f.name == name for f in self.fields)


@dataclass(frozen=True)
class ImageRef:
    """An image reference as the form gave it, resolved to a digest or to why it is not one."""

    digest: str | None
    problem: str | None = None


@dataclass(frozen=True)
class Checked:
    """A form's values as a run body, or the problems that keep it from being one."""

    body: RunBody | None
    errors: dict[str, str] = field(default_factory=dict)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _arg_field(arg: TemplateArg, entered: Mapping[str, str]) -> FormField:
    name = ARG_PREFIX + arg.name
    default = "" if arg.default is None else _text(arg.default)
    plain = FormField(
        name,
        arg.name,
        "text",
        value=entered.get(name, default),
        required=arg.required,
        hint=arg.description,
    )
    if arg.type in ("int", "float"):
        step = "1" if arg.type == "int" else "any"
        return replace(plain, widget="number", step=step, minimum=arg.minimum, maximum=arg.maximum)
    if arg.type == "bool":
        return replace(plain, widget="select", choices=("true", "false"))
    if arg.type == "choice":
        return replace(plain, widget="select", choices=arg.choices)
    return plain


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _option_fields(
    specs: Sequence[str], entered: Mapping[str, str], max_timeout: int | None
) -> tuple[FormField, ...]:
    return (
        FormField(
            "spec",
            "Spec",
            "select",
            value=entered.get("spec", specs[0] if specs else ""),
            required=True,
            choices=tuple(specs),
            hint="the hardware the job runs on",
        ),
        FormField(
            "branch", "Branch", "text", value=entered.get("branch", ""), hint="main if empty"
        ),
        FormField(
            "testbed",
            "Testbed",
            "text",
            value=entered.get("testbed", ""),
            hint="localhost if empty",
        ),
        FormField(
            "adapter",
            "Adapter",
            "select",
            value=entered.get("adapter", DEFAULT_ADAPTER),
            required=True,
            choices=tuple(sorted(adapters.ADAPTERS)),
            hint="how the job's output is read into metrics",
        ),
        FormField(
            "iter",
            "Iterations",
            "number",
            value=entered.get("iter", "1"),
            required=True,
            minimum=1,
            maximum=MAX_ITER,
            step="1",
        ),
        FormField(
            "timeout",
            "Timeout (s)",
            "number",
            value=entered.get("timeout", ""),
            minimum=1,
            maximum=max_timeout,
            step="1",
            hint="the template's limit if empty" if max_timeout else "one hour if empty",
        ),
    )


def template_form(
    template: Template, specs: Sequence[str], entered: Mapping[str, str] | None = None
) -> JobForm:
    """The form for ``template``: its arguments (defaults filled in) then the job options;
    ``entered`` values (a submitted form) replace the defaults."""
    values = entered or {}
    args = tuple(_arg_field(arg, values) for arg in template.args.values())
    options = _option_fields(specs, values, template.timeout)
    return JobForm("template", args + options, template=template.name)


def image_form(specs: Sequence[str], entered: Mapping[str, str] | None = None) -> JobForm:
    """The form for an image job: the image (a digest, or a tag in the project's registry)
    then the job options."""
    values = entered or {}
    image = FormField(
        "image",
        "Image",
        "text",
        value=values.get("image", ""),
        required=True,
        hint="sha256:<64 hex> or a tag pushed to this project's registry",
    )
    return JobForm("image", (image, *_option_fields(specs, values, None)))


def _options(form: Mapping[str, str]) -> dict[str, Any]:
    """The job options as the run body spells them; an empty optional field is left out."""
    job: dict[str, Any] = {"iter": form.get("iter", "").strip() or "1"}
    if form.get("timeout", "").strip():
        job["timeout"] = form["timeout"].strip()
    body: dict[str, Any] = {
        "spec": form.get("spec", ""),
        "settings": {"adapter": form.get("adapter") or DEFAULT_ADAPTER},
        "job": job,
    }
    for name in ("branch", "testbed"):
        if form.get(name, "").strip():
            body[name] = form[name].strip()
    return body


_FIELD_OF_LOCATION = {
    ("spec",): "spec",
    ("branch",): "branch",
    ("testbed",): "testbed",
    ("image",): "image",
    ("settings", "adapter"): "adapter",
    ("job", "iter"): "iter",
    ("job", "timeout"): "timeout",
}


def _body(raw: dict[str, Any], errors: dict[str, str]) -> Checked:
    try:
        body = RunBody.model_validate(raw)
    except ValidationError as exc:
        for problem in exc.errors():
            location = tuple(str(part) for part in problem["loc"])
            name = _FIELD_OF_LOCATION.get(location, ".".join(location) or "form")
            errors.setdefault(name, problem["msg"])
        return Checked(None, errors)
    return Checked(None, errors) if errors else Checked(body, errors)


def check_template_form(project: str, template: Template, form: Mapping[str, str]) -> Checked:
    """The run body for a submitted template form, or every field's problem at once."""
    errors: dict[str, str] = {}
    args: dict[str, int | float | bool | str] = {}
    for arg in template.args.values():
        name = ARG_PREFIX + arg.name
        raw = form.get(name, "")
        if raw == "":
            if arg.required:
                errors[name] = f"argument {arg.name!r} is required"
            continue
        try:
            args[arg.name] = arg.coerce(raw)
        except TemplateError as exc:
            errors[name] = str(exc)
    raw_body = {"project": project, "template": template.name, "args": args, **_options(form)}
    return _body(raw_body, errors)


def check_image_form(project: str, form: Mapping[str, str], image: ImageRef) -> Checked:
    """The run body for a submitted image form whose image reference resolved to ``image``."""
    errors: dict[str, str] = {}
    if image.digest is None:
        errors["image"] = image.problem or "no such image"
    return _body({"project": project, "image": image.digest or "", **_options(form)}, errors)
