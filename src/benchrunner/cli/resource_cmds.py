"""``benchrunner org|project|spec|runner <verb>``: the administration resources."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Literal

import typer

from benchrunner.cli import output
from benchrunner.cli.config import resolve
from benchrunner.cli.options import LIST_PER_PAGE, Host, Json, Page, PerPage, Token
from benchrunner.cli.sizes import parse_size
from benchrunner.client import JsonObject

org_app = typer.Typer(help="Organizations.", no_args_is_help=True)
project_app = typer.Typer(help="Projects of an organization.", no_args_is_help=True)
spec_app = typer.Typer(help="Hardware specs that jobs ask for and runners offer.",
                       no_args_is_help=True)
runner_app = typer.Typer(help="Run a runner agent, or administer runners.", no_args_is_help=True)

Slug = Annotated[str | None, typer.Option(help="Slug; derived from the name if not given.")]
Archived = Annotated[bool, typer.Option("--archived", help="List archived ones instead.")]


def _show(data: JsonObject, as_json: bool, render: Callable[[JsonObject], None]) -> None:
    if as_json:
        output.print_json(data)
    else:
        render(data)


# -- organizations ------------------------------------------------------------------------------


def _org_record(org: JsonObject) -> None:
    output.print_record(
        [(k, org.get(k)) for k in ("slug", "name", "uuid", "plan", "claimed", "created")]
    )


@org_app.command("create")
def org_create(
    name: str,
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
        _show(client.create_organization(name, plan, slug=slug), as_json, _org_record)


@org_app.command("list")
def org_list(
    page: Page = 1, per_page: PerPage = LIST_PER_PAGE,
    host: Host = None, token: Token = None, as_json: Json = False,
) -> None:
    """Organizations you belong to (all of them for an admin)."""
    with resolve(host, token).client() as client:
        found = client.list_organizations(page=page, per_page=per_page)
    if as_json:
        output.print_json(found)
        return
    rows = [(o["slug"], o["name"], o["plan"], o["claimed"], o["uuid"]) for o in found]
    output.print_table(("slug", "name", "plan", "claimed", "uuid"), rows,
                       title="Organizations", total=found.total)


@org_app.command("show")
def org_show(ref: str, host: Host = None, token: Token = None, as_json: Json = False) -> None:
    """One organization, by slug or UUID."""
    with resolve(host, token).client() as client:
        _show(client.get_organization(ref), as_json, _org_record)


# -- projects -----------------------------------------------------------------------------------


def _project_record(project: JsonObject) -> None:
    fields = ("slug", "name", "uuid", "organization", "visibility", "created")
    output.print_record([(k, project.get(k)) for k in fields])


@project_app.command("create")
def project_create(
    org: str,
    name: str,
    visibility: Annotated[Literal["public", "private"], typer.Option()] = "public",
    slug: Slug = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Create a project in organization ORG (slug or UUID)."""
    with resolve(host, token).client() as client:
        _show(client.create_project(org, name, visibility, slug=slug), as_json, _project_record)


@project_app.command("list")
def project_list(
    org: str, page: Page = 1, per_page: PerPage = LIST_PER_PAGE,
    host: Host = None, token: Token = None, as_json: Json = False,
) -> None:
    """Projects of organization ORG."""
    with resolve(host, token).client() as client:
        found = client.list_projects(org, page=page, per_page=per_page)
    if as_json:
        output.print_json(found)
        return
    rows = [(p["slug"], p["name"], p["visibility"], p["uuid"]) for p in found]
    output.print_table(("slug", "name", "visibility", "uuid"), rows,
                       title="Projects", total=found.total)


@project_app.command("show")
def project_show(ref: str, host: Host = None, token: Token = None, as_json: Json = False) -> None:
    """One project, by slug or UUID."""
    with resolve(host, token).client() as client:
        _show(client.get_project(ref), as_json, _project_record)


# -- specs --------------------------------------------------------------------------------------


def _spec_record(spec: JsonObject) -> None:
    output.print_record([
        ("slug", spec.get("slug")),
        ("name", spec.get("name")),
        ("uuid", spec.get("uuid")),
        ("architecture", spec.get("architecture")),
        ("cpu", spec.get("cpu")),
        ("memory", output.size_cell(spec.get("memory"))),
        ("disk", output.size_cell(spec.get("disk"))),
        ("network", spec.get("network")),
        ("archived", spec.get("archived")),
    ])


@spec_app.command("create")
def spec_create(
    name: str,
    arch: Annotated[Literal["x86_64", "aarch64"], typer.Option("--arch", help="Architecture.")],
    cpu: Annotated[int, typer.Option(min=1, help="Logical CPUs a job gets.")],
    memory: Annotated[int, typer.Option(parser=parse_size, metavar="SIZE",
                                        help="Memory, e.g. 2GiB, 512MiB, 10G.")],
    disk: Annotated[int, typer.Option(parser=parse_size, metavar="SIZE",
                                      help="Disk, e.g. 20GiB.")],
    network: Annotated[bool, typer.Option(help="Whether jobs get network access.")] = False,
    slug: Slug = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Create a hardware spec (admin)."""
    with resolve(host, token).client() as client:
        spec = client.create_spec(
            name, architecture=arch, cpu=cpu, memory=memory, disk=disk, network=network, slug=slug
        )
    _show(spec, as_json, _spec_record)


@spec_app.command("list")
def spec_list(
    archived: Archived = False, page: Page = 1, per_page: PerPage = LIST_PER_PAGE,
    host: Host = None, token: Token = None, as_json: Json = False,
) -> None:
    """Hardware specs (admin)."""
    with resolve(host, token).client() as client:
        found = client.list_specs(archived=archived, page=page, per_page=per_page)
    if as_json:
        output.print_json(found)
        return
    _spec_table(found, total=found.total)


def _spec_table(specs: Sequence[JsonObject], total: int | None = None) -> None:
    rows = [
        (s["slug"], s["architecture"], s["cpu"], output.size_cell(s["memory"]),
         output.size_cell(s["disk"]), s["network"], s["uuid"])
        for s in specs
    ]
    output.print_table(("slug", "arch", "cpu", "memory", "disk", "network", "uuid"), rows,
                       title="Specs", total=total)


@spec_app.command("show")
def spec_show(ref: str, host: Host = None, token: Token = None, as_json: Json = False) -> None:
    """One hardware spec, by slug or UUID (admin)."""
    with resolve(host, token).client() as client:
        _show(client.get_spec(ref), as_json, _spec_record)


@spec_app.command("archive")
def spec_archive(ref: str, host: Host = None, token: Token = None, as_json: Json = False) -> None:
    """Archive a spec: no new jobs may ask for it (admin)."""
    with resolve(host, token).client() as client:
        _show(client.update_spec(ref, archived=True), as_json, _spec_record)


# -- runners (administration; `runner up` lives in runner_cmds) --------------------------------


def _runner_record(runner: JsonObject) -> None:
    specs = ", ".join(s["slug"] for s in runner.get("specs", [])) or None
    output.print_record([
        ("slug", runner.get("slug")),
        ("name", runner.get("name")),
        ("uuid", runner.get("uuid")),
        ("specs", specs),
        ("paused", runner.get("paused")),
        ("archived", runner.get("archived")),
        ("last heartbeat", runner.get("last_heartbeat")),
        ("os / arch / version",
         " / ".join(str(runner.get(k) or "-") for k in ("os", "arch", "version"))),
    ])


def _print_token(runner: str, token: str) -> None:
    output.out().print(f"token: {token}", soft_wrap=True, markup=False)
    output.warning("the token is shown only this once; store it now")
    output.note(f"start the runner with: BENCHRUNNER_RUNNER_KEY=<token> "
                f"benchrunner runner up --runner {runner} --host <server URL>")


@runner_app.command("create")
def runner_create(
    name: str,
    spec: Annotated[list[str] | None, typer.Option(
        "--spec", help="Spec slug or UUID the runner offers; repeat for several.")] = None,
    slug: Slug = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Create a runner (admin) and print its token, which is shown only once."""
    with resolve(host, token).client() as client:
        runner = client.create_runner(name, spec or [], slug=slug)
    if as_json:
        output.print_json(runner)
        return
    _runner_record(runner)
    _print_token(runner["slug"], runner["token"])


@runner_app.command("list")
def runner_list(
    archived: Archived = False, page: Page = 1, per_page: PerPage = LIST_PER_PAGE,
    host: Host = None, token: Token = None, as_json: Json = False,
) -> None:
    """Runners (admin)."""
    with resolve(host, token).client() as client:
        found = client.list_runners(archived=archived, page=page, per_page=per_page)
    if as_json:
        output.print_json(found)
        return
    rows = [
        (r["slug"], ", ".join(s["slug"] for s in r["specs"]), r["paused"], r["last_heartbeat"],
         r["version"], r["uuid"])
        for r in found
    ]
    output.print_table(("slug", "specs", "paused", "last heartbeat", "version", "uuid"), rows,
                       title="Runners", total=found.total)


@runner_app.command("show")
def runner_show(ref: str, host: Host = None, token: Token = None, as_json: Json = False) -> None:
    """One runner, by slug or UUID (admin)."""
    with resolve(host, token).client() as client:
        _show(client.get_runner(ref), as_json, _runner_record)


def _update(ref: str, host: str | None, token: str | None, as_json: bool, **fields: bool) -> None:
    with resolve(host, token).client() as client:
        _show(client.update_runner(ref, **fields), as_json, _runner_record)


@runner_app.command("pause")
def runner_pause(ref: str, host: Host = None, token: Token = None, as_json: Json = False) -> None:
    """Stop offering jobs to a runner; its running job continues (admin)."""
    _update(ref, host, token, as_json, paused=True)


@runner_app.command("unpause")
def runner_unpause(
    ref: str, host: Host = None, token: Token = None, as_json: Json = False
) -> None:
    """Offer jobs to a paused runner again (admin)."""
    _update(ref, host, token, as_json, paused=False)


@runner_app.command("archive")
def runner_archive(
    ref: str, host: Host = None, token: Token = None, as_json: Json = False
) -> None:
    """Archive a runner: its token stops working and its channel is closed (admin)."""
    _update(ref, host, token, as_json, archived=True)


@runner_app.command("rotate-token")
def runner_rotate_token(
    ref: str, host: Host = None, token: Token = None, as_json: Json = False
) -> None:
    """Issue a new runner token; the old one stops working at once (admin)."""
    with resolve(host, token).client() as client:
        rotated = client.rotate_runner_token(ref)
    if as_json:
        output.print_json(rotated)
        return
    _print_token(ref, rotated["token"])


@runner_app.command("add-spec")
def runner_add_spec(
    ref: str, spec: str, host: Host = None, token: Token = None, as_json: Json = False
) -> None:
    """Let runner REF take jobs that ask for SPEC (admin)."""
    with resolve(host, token).client() as client:
        client.add_runner_spec(ref, spec)
        specs = client.list_runner_specs(ref)
    if as_json:
        output.print_json(specs)
        return
    _spec_table(specs)


@runner_app.command("remove-spec")
def runner_remove_spec(
    ref: str, spec: str, host: Host = None, token: Token = None, as_json: Json = False
) -> None:
    """Stop runner REF taking jobs that ask for SPEC (admin)."""
    with resolve(host, token).client() as client:
        client.remove_runner_spec(ref, spec)
        specs = client.list_runner_specs(ref)
    if as_json:
        output.print_json(specs)
        return
    _spec_table(specs)
