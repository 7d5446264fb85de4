"""Approved scripts (docs/decisions/templates.md) in a TOML file read by both server and runner.

A template is an argv list; an argv item that is exactly ``{name}`` is replaced by the value of
argument ``name``. Nothing is ever passed through a shell, and no other substitution happens.

    [templates."bench.sleep"]
    command = ["python3", "-c", "...", "{ms}"]
    timeout = 60
    [templates."bench.sleep".args.ms]
    type = "int"      # int | float | bool | string | choice
    min = 0
    max = 60000
    default = 10      # makes the argument optional
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

ArgType = Literal["int", "float", "bool", "string", "choice"]
ArgValue = int | float | bool | str
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
MAX_STRING_ARG = 4096
DEFAULT_TIMEOUT = 3600


class TemplateError(ValueError):
    """A template file, a template name or an argument is not acceptable; the text says why."""


@dataclass(frozen=True)
class TemplateArg:
    name: str
    type: ArgType
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    default: ArgValue | None = None
    description: str = ""

    @property
    def required(self) -> bool:
        return self.default is None

    def coerce(self, value: object) -> ArgValue:
        """Check one value against this argument's type and bounds; strings are parsed."""
        where = f"argument {self.name!r}"
        if self.type == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("true", "false"):
                return value.lower() == "true"
            raise TemplateError(f"{where} must be a bool (true or false), got {value!r}")
        if self.type in ("int", "float"):
            number = _number(value, integer=self.type == "int", where=where)
            if self.minimum is not None and number < self.minimum:
                raise TemplateError(f"{where} must be >= {_fmt(self.minimum)}, got {number}")
            if self.maximum is not None and number > self.maximum:
                raise TemplateError(f"{where} must be <= {_fmt(self.maximum)}, got {number}")
            return number
        if not isinstance(value, str):
            raise TemplateError(f"{where} must be a string, got {value!r}")
        if self.type == "choice" and value not in self.choices:
            raise TemplateError(f"{where} must be one of {list(self.choices)}, got {value!r}")
        if len(value) > MAX_STRING_ARG or "\x00" in value:
            raise TemplateError(f"{where} is too long or contains a NUL byte")
        return value

    def describe(self) -> dict[str, object]:
        out: dict[str, object] = {"type": self.type, "required": self.required}
        if self.minimum is not None:
            out["min"] = self.minimum
        if self.maximum is not None:
            out["max"] = self.maximum
        if self.choices:
            out["choices"] = list(self.choices)
        if self.default is not None:
            out["default"] = self.default
        if self.description:
            out["description"] = self.description
        return out


@dataclass(frozen=True)
class Template:
    name: str
    command: tuple[str, ...]
    args: Mapping[str, TemplateArg] = field(default_factory=dict)
    timeout: int = DEFAULT_TIMEOUT
    description: str = ""

    def resolve_args(self, given: Mapping[str, object]) -> dict[str, ArgValue]:
        """Every argument typed and range-checked, defaults filled in, unknown names refused."""
        unknown = sorted(set(given) - set(self.args))
        if unknown:
            raise TemplateError(
                f"template {self.name!r} has no argument(s) {unknown}; "
                f"it takes {sorted(self.args) or 'none'}"
            )
        resolved: dict[str, ArgValue] = {}
        for name, arg in self.args.items():
            if name in given:
                resolved[name] = arg.coerce(given[name])
            elif arg.default is not None:
                resolved[name] = arg.default
            else:
                raise TemplateError(f"template {self.name!r} requires argument {name!r}")
        return resolved

    def argv(self, given: Mapping[str, object]) -> list[str]:
        """The command with whole-item placeholders replaced; never a shell string."""
        values = self.resolve_args(given)
        out: list[str] = []
        for item in self.command:
            match = _PLACEHOLDER.fullmatch(item)
            out.append(_render(values[match.group(1)]) if match else item)
        return out

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name,
            "description": self.description,
            "command": list(self.command),
            "timeout": self.timeout,
            "args": {name: arg.describe() for name, arg in self.args.items()},
        }


def _fmt(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)


def _render(value: ArgValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _number(value: object, *, integer: bool, where: str) -> int | float:
    kind = "an int" if integer else "a number"
    if isinstance(value, bool):
        raise TemplateError(f"{where} must be {kind}, got {value!r}")
    if isinstance(value, str):
        try:
            value = int(value) if integer else float(value)
        except ValueError:
            raise TemplateError(f"{where} must be {kind}, got {value!r}") from None
    if integer and isinstance(value, float) and value.is_integer():
        value = int(value)
    if integer and not isinstance(value, int):
        raise TemplateError(f"{where} must be {kind}, got {value!r}")
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise TemplateError(f"{where} must be {kind}, got {value!r}")
    return value


class TemplateRegistry:
    """The templates of one TOML file, by name."""

    def __init__(self, templates: Mapping[str, Template]) -> None:
        self._templates = dict(templates)

    def __contains__(self, name: object) -> bool:
        return name in self._templates

    def __len__(self) -> int:
        return len(self._templates)

    def names(self) -> list[str]:
        return sorted(self._templates)

    def get(self, name: str) -> Template:
        try:
            return self._templates[name]
        except KeyError:
            known = ", ".join(self.names()) or "none"
            raise TemplateError(f"unknown template {name!r} (known: {known})") from None

    def all(self) -> list[Template]:
        return [self._templates[name] for name in self.names()]

    @classmethod
    def empty(cls) -> TemplateRegistry:
        return cls({})

    @classmethod
    def load(cls, path: Path) -> TemplateRegistry:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise TemplateError(f"cannot read templates file {path}: {exc}") from exc
        return cls.parse(data, source=str(path))

    @classmethod
    def parse(cls, data: Mapping[str, object], source: str = "<templates>") -> TemplateRegistry:
        section = data.get("templates", {})
        if not isinstance(section, dict):
            raise TemplateError(f"{source}: [templates] must be a table")
        return cls({name: _parse_template(name, body, source) for name, body in section.items()})


_ARG_TYPES = ("int", "float", "bool", "string", "choice")


def _parse_template(name: str, body: object, source: str) -> Template:
    where = f"{source}: template {name!r}"
    if not isinstance(body, dict):
        raise TemplateError(f"{where} must be a table")
    command = body.get("command")
    if (
        not isinstance(command, list)
        or not command
        or not all(isinstance(item, str) for item in command)
    ):
        raise TemplateError(f"{where}: command must be a non-empty list of strings")
    raw_args = body.get("args", {})
    if not isinstance(raw_args, dict):
        raise TemplateError(f"{where}: args must be a table")
    args = {arg: _parse_arg(arg, spec, where) for arg, spec in raw_args.items()}
    for item in command:
        match = _PLACEHOLDER.fullmatch(item)
        if match and match.group(1) not in args:
            raise TemplateError(f"{where}: command uses {item} but no such argument is defined")
    timeout = body.get("timeout", DEFAULT_TIMEOUT)
    if not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 1:
        raise TemplateError(f"{where}: timeout must be a positive integer of seconds")
    description = body.get("description", "")
    return Template(
        name=name,
        command=tuple(command),
        args=args,
        timeout=timeout,
        description=str(description),
    )


def _parse_arg(name: str, spec: object, where: str) -> TemplateArg:
    where = f"{where} argument {name!r}"
    if not isinstance(spec, dict):
        raise TemplateError(f"{where} must be a table")
    arg_type = spec.get("type")
    if arg_type not in _ARG_TYPES:
        raise TemplateError(f"{where}: type must be one of {list(_ARG_TYPES)}")
    choices = spec.get("choices", [])
    if arg_type == "choice" and (
        not isinstance(choices, list) or not choices or not all(isinstance(c, str) for c in choices)
    ):
        raise TemplateError(f"{where}: a choice needs a non-empty list of string choices")
    bounds: dict[str, float | None] = {}
    for key in ("min", "max"):
        value = spec.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise TemplateError(f"{where}: {key} must be a number")
        bounds[key] = value
    arg = TemplateArg(
        name=name,
        type=arg_type,
        minimum=bounds["min"],
        maximum=bounds["max"],
        choices=tuple(choices),
        description=str(spec.get("description", "")),
    )
    default = spec.get("default")
    if default is None:
        return arg
    try:
        checked = arg.coerce(default)
    except TemplateError as exc:
        raise TemplateError(f"{where}: default is invalid: {exc}") from None
    return TemplateArg(
        name=arg.name,
        type=arg.type,
        minimum=arg.minimum,
        maximum=arg.maximum,
        choices=arg.choices,
        default=checked,
        description=arg.description,
    )
