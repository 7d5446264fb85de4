"""``benchrunner org|project|spec <verb>``: organizations, projects and hardware specs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

import typer

from benchrunner.api.organizations import Organization
from benchrunner.api.organizations import Project as ApiProject
from benchrunner.api.specs import Spec
from benchrunner.cli import output
from benchrunner.cli.config import resolve
from benchrunner.cli.member_cmds import member_app
from benchrunner.cli.options import (
    LIST_PER_PAGE,
    Host,
    Json,
    Name,
    OrgRef,
    Page,
    PerPage,
    Ref,
    Token,
)
from benchrunner.cli.sizes import parse_size

org_app = typer.Typer(help="Organizations and their members.", no_args_is_help=True)
org_app.add_typer(member_app, name="member")
project_app = typer.Typer(help="Projects of an organization.", no_args_is_help=True)
spec_app = typer.Typer(
    help="Hardware specs that jobs ask for and runners offer.", no_args_is_help=True
)

Slug = Annotated[str | None, typer.Option(help="Slug; derived from the name if not given.")]
Archived = Annotated[bool, typer.Option("--archived", help="List archived ones instead.")]


# -- organizations ------------------------------------------------------------------------------


def _org_record(org: Organization) -> None:
    output.print_record(
        [
            ("slug", org.slug),
            ("name", org.name),
            ("uuid", org.uuid),
            ("plan", org.plan),
            ("claimed", org.claimed),
            ("created", output.when(org.created)),
        ]
    )


@org_app.command("create")
def org_create(
    name: Name,
    plan: Annotated[
        Literal["free", "team", "enterprise"],
        typer.Option(help="Plan; fixes job priority. Only an admin may set team or enterprise."),
    ] = "free",
    slug: Slug = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Create an organization; you become its leader."""
    with resolve(host, token).client() as client:
        output.show(client.create_organization(name, plan, slug=slug), as_json, _org_record)


@org_app.command("list")
def org_list(
    page: Page = 1,
    per_page: PerPage = LIST_PER_PAGE,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Organizations you belong to (all of them for an admin)."""
    with resolve(host, token).client() as client:
        found = client.list_organizations(page=page, per_page=per_page)
    if as_json:
        output.print_json(found)
        return
    rows = [(o.slug, o.name, o.plan, o.claimed, o.uuid) for o in found]
    output.print_table(
        ("slug", "name", "plan", "claimed", "uuid"), rows, title="Organizations", total=found.total
    )


@org_app.command("show")
def org_show(ref: Ref, host: Host = None, token: Token = None, as_json: Json = False) -> None:
    """One organization, by slug or UUID."""
    with resolve(host, token).client() as client:
        output.show(client.get_organization(ref), as_json, _org_record)


# -- projects -----------------------------------------------------------------------------------


def _project_record(project: ApiProject) -> None:
    output.print_record(
        [
            ("slug", project.slug),
            ("name", project.name),
            ("uuid", project.uuid),
            ("organization", project.organization),
            ("visibility", project.visibility),
            ("created", output.when(project.created)),
        ]
    )


@project_app.command("create")
def project_create(
    org: OrgRef,
    name: Name,
    visibility: Annotated[Literal["public", "private"], typer.Option()] = "public",
    slug: Slug = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Create a project in organization ORG (slug or UUID)."""
    with resolve(host, token).client() as client:
        output.show(
            client.create_project(org, name, visibility, slug=slug), as_json, _project_record
        )


@project_app.command("list")
def project_list(
    org: OrgRef,
    page: Page = 1,
    per_page: PerPage = LIST_PER_PAGE,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Projects of organization ORG."""
    with resolve(host, token).client() as client:
        found = client.list_projects(org, page=page, per_page=per_page)
    if as_json:
        output.print_json(found)
        return
    rows = [(p.slug, p.name, p.visibility, p.uuid) for p in found]
    output.print_table(
        ("slug", "name", "visibility", "uuid"), rows, title="Projects", total=found.total
    )


@project_app.command("show")
def project_show(ref: Ref, host: Host = None, token: Token = None, as_json: Json = False) -> None:
    """One project, by slug or UUID."""
    with resolve(host, token).client() as client:
        output.show(client.get_project(ref), as_json, _project_record)


# -- specs --------------------------------------------------------------------------------------


def _spec_record(spec: Spec) -> None:
    output.print_record(
        [
            ("slug", spec.slug),
            ("name", spec.name),
            ("uuid", spec.uuid),
            ("architecture", spec.architecture),
            ("cpu", spec.cpu),
            ("memory", output.size_cell(spec.memory)),
            ("disk", output.size_cell(spec.disk)),
            ("network", spec.network),
            ("noise guard", spec.noise_guard),
            ("noise cv limit", _limit_cell(spec.noise_cv_limit)),
            ("noise drift limit", _limit_cell(spec.noise_drift_limit)),
            ("archived", output.when(spec.archived)),
        ]
    )


def _limit_cell(value: object) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value * 100:g}%"
    return "server default"


NoiseGuardOption = Annotated[
    bool | None,
    typer.Option(
        "--noise-guard/--no-noise-guard",
        help="Whether runners calibrate the job cores around this spec's jobs (default: yes).",
        show_default=False,
    ),
]
NoiseCvLimit = Annotated[
    float | None,
    typer.Option(
        min=0.0,
        max=1e9,
        help="A report whose calibration varies more is noisy, as a fraction (0.02 is 2 %; "
        "default: the server's).",
        show_default=False,
    ),
]
NoiseDriftLimit = Annotated[
    float | None,
    typer.Option(
        min=0.0,
        max=1e9,
        help="A report whose calibration drifted more, either way, is noisy (0.05 is 5 %; "
        "default: the server's).",
        show_default=False,
    ),
]


def _noise_fields(
    guard: bool | None, cv_limit: float | None, drift_limit: float | None
) -> dict[str, object]:
    given = {
        "noise_guard": guard,
        "noise_cv_limit": cv_limit,
        "noise_drift_limit": drift_limit,
    }
    return {name: value for name, value in given.items() if value is not None}


@spec_app.command("create")
def spec_create(
    name: Name,
    arch: Annotated[Literal["x86_64", "aarch64"], typer.Option("--arch", help="Architecture.")],
    cpu: Annotated[int, typer.Option(min=1, help="Logical CPUs a job gets.")],
    memory: Annotated[
        int, typer.Option(parser=parse_size, metavar="SIZE", help="Memory, e.g. 2GiB, 512MiB, 10G.")
    ],
    disk: Annotated[int, typer.Option(parser=parse_size, metavar="SIZE", help="Disk, e.g. 20GiB.")],
    network: Annotated[bool, typer.Option(help="Whether jobs get network access.")] = False,
    slug: Slug = None,
    noise_guard: NoiseGuardOption = None,
    noise_cv_limit: NoiseCvLimit = None,
    noise_drift_limit: NoiseDriftLimit = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Create a hardware spec (admin)."""
    with resolve(host, token).client() as client:
        spec = client.create_spec(
            name,
            architecture=arch,
            cpu=cpu,
            memory=memory,
            disk=disk,
            network=network,
            slug=slug,
            noise=_noise_fields(noise_guard, noise_cv_limit, noise_drift_limit),
        )
    output.show(spec, as_json, _spec_record)


@spec_app.command("noise")
def spec_noise(
    ref: Ref,
    noise_guard: NoiseGuardOption = None,
    noise_cv_limit: NoiseCvLimit = None,
    noise_drift_limit: NoiseDriftLimit = None,
    default_limits: Annotated[
        bool, typer.Option(help="Set both limits back to the server's defaults.")
    ] = False,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Set a spec's noise guard: whether its runners calibrate, and when a report is noisy
    (admin)."""
    fields = _noise_fields(noise_guard, noise_cv_limit, noise_drift_limit)
    if default_limits:
        fields.update(noise_cv_limit=None, noise_drift_limit=None)
    with resolve(host, token).client() as client:
        output.show(client.update_spec(ref, noise=fields), as_json, _spec_record)


@spec_app.command("list")
def spec_list(
    archived: Archived = False,
    page: Page = 1,
    per_page: PerPage = LIST_PER_PAGE,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Hardware specs (admin)."""
    with resolve(host, token).client() as client:
        found = client.list_specs(archived=archived, page=page, per_page=per_page)
    if as_json:
        output.print_json(found)
        return
    spec_table(found, total=found.total)


def spec_table(specs: Sequence[Spec], total: int | None = None) -> None:
    rows = [
        (
            s.slug,
            s.architecture,
            s.cpu,
            output.size_cell(s.memory),
            output.size_cell(s.disk),
            s.network,
            s.uuid,
        )
        for s in specs
    ]
    output.print_table(
        ("slug", "arch", "cpu", "memory", "disk", "network", "uuid"),
        rows,
        title="Specs",
        total=total,
    )


@spec_app.command("show")
def spec_show(ref: Ref, host: Host = None, token: Token = None, as_json: Json = False) -> None:
    """One hardware spec, by slug or UUID (admin)."""
    with resolve(host, token).client() as client:
        output.show(client.get_spec(ref), as_json, _spec_record)


@spec_app.command("archive")
def spec_archive(ref: Ref, host: Host = None, token: Token = None, as_json: Json = False) -> None:
    """Archive a spec: no new jobs may ask for it (admin)."""
    with resolve(host, token).client() as client:
        output.show(client.update_spec(ref, archived=True), as_json, _spec_record)
