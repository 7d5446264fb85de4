"""``benchrunner runner <verb>``: run the agent on this machine (``up``), or administer runners."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from typer.core import TyperCommand

from benchrunner.api.runners import Runner
from benchrunner.cli import output
from benchrunner.cli.config import normalize_host, resolve
from benchrunner.cli.options import (
    LIST_PER_PAGE,
    Host,
    Json,
    Name,
    Page,
    PerPage,
    Ref,
    SpecRef,
    Token,
)
from benchrunner.cli.resource_cmds import Archived, Slug, spec_table
from benchrunner.cli.runner_signing_cmds import keygen, set_key
from benchrunner.cli.sizes import parse_size
from benchrunner.cli.tune_cmds import HostRoot, parse_tune_mode, preflight, restore, run_tuned
from benchrunner.core.releases import UpdateChannel
from benchrunner.runner.options import DEFAULT_MAX_AGE
from benchrunner.runner.secret_file import read_owner_only

runner_app = typer.Typer(help="Run a runner agent, or administer runners.", no_args_is_help=True)

_AGENT = "Agent"
_KEY_FILE_LIMIT = 4096


def default_spool(runner: str) -> Path:
    # One directory per runner: a result spooled by one runner means nothing to another.
    return Path.home() / ".local" / "share" / "benchrunner" / "spool" / runner


def default_sandbox_dir(runner: str) -> Path:
    # One per runner: a runner removes the containers it finds in its own state directory.
    return Path.home() / ".local" / "share" / "benchrunner" / "sandbox" / runner


def runner_key(key: str | None, key_file: Path | None) -> str:
    """The runner token from ``--key`` or ``--key-file`` (exactly one). A key file must be a
    regular file that no one but its owner may read or write, like an SSH private key.
    Raises ValueError with the reason."""
    if (key is None) == (key_file is None):
        raise ValueError(
            "give the runner key once: --key-file FILE ($BENCHRUNNER_RUNNER_KEY_FILE) "
            "or --key ($BENCHRUNNER_RUNNER_KEY)"
        )
    if key is not None:
        return key.strip()
    assert key_file is not None
    data = read_owner_only(key_file, "key file", _KEY_FILE_LIMIT)
    text = data.decode("utf-8", errors="replace").strip()
    if not text or "\n" in text:
        raise ValueError(f"key file {key_file} must hold the runner key alone, on one line")
    return text


class _TuneFlagCommand(TyperCommand):
    """``--tune`` alone means ``--tune=strict``: Typer has no option whose value is optional."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # Any: Context moved in Typer
        bare = [
            i
            for i, arg in enumerate(args)
            if arg == "--tune" and (i + 1 == len(args) or args[i + 1].startswith("-"))
        ]
        args = ["--tune=strict" if i in bare else arg for i, arg in enumerate(args)]
        return super().parse_args(ctx, args)


runner_app.command("preflight")(preflight)
runner_app.command("restore")(restore)


@runner_app.command("up", cls=_TuneFlagCommand)
def up(
    runner: Annotated[
        str, typer.Option(envvar="BENCHRUNNER_RUNNER", help="This runner's slug or UUID.")
    ],
    key_file: Annotated[
        Path | None,
        typer.Option(
            envvar="BENCHRUNNER_RUNNER_KEY_FILE",
            metavar="FILE",
            show_default=False,
            help="File holding the runner token (bencher_runner_...), readable by its owner "
            "only (mode 0600). The preferred way: neither the environment nor the command "
            "line of a process is secret from the jobs it runs.",
        ),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option(
            envvar="BENCHRUNNER_RUNNER_KEY",
            show_default=False,
            help="Runner token itself; prefer --key-file. On the command line it is visible "
            "to every user of the machine.",
        ),
    ] = None,
    host: Annotated[
        str | None,
        typer.Option(
            show_default=False,
            help="Server URL, or several replicas' URLs separated by commas (tried in turn). "
            "Else $BENCHRUNNER_HOST, the config file, http://127.0.0.1:8080.",
        ),
    ] = None,
    templates: Annotated[
        Path | None,
        typer.Option(
            envvar="BENCHRUNNER_TEMPLATES",
            metavar="FILE",
            show_default=False,
            help="TOML file of the templates this machine approves; none: no template jobs.",
        ),
    ] = None,
    executor: Annotated[
        str,
        typer.Option(
            envvar="BENCHRUNNER_EXECUTOR",
            help="How jobs are isolated: process (template jobs) or sandbox (image jobs).",
        ),
    ] = "process",
    spool: Annotated[
        Path | None,
        typer.Option(
            envvar="BENCHRUNNER_SPOOL",
            metavar="DIR",
            show_default=False,
            help="Undelivered results [default: ~/.local/share/benchrunner/spool/<runner>].",
        ),
    ] = None,
    poll_timeout: Annotated[
        int,
        typer.Option(
            envvar="BENCHRUNNER_POLL_TIMEOUT",
            metavar="SECONDS",
            help="How long the server holds a ready runner before answering no-job.",
            rich_help_panel=_AGENT,
        ),
    ] = 30,
    transport: Annotated[
        str,
        typer.Option(
            envvar="BENCHRUNNER_TRANSPORT",
            help="channel: one WebSocket for everything; per-job: claim jobs with a long-poll "
            "and report each on its own WebSocket (the per-job endpoints).",
            rich_help_panel=_AGENT,
        ),
    ] = "channel",
    drain_grace: Annotated[
        float,
        typer.Option(
            envvar="BENCHRUNNER_DRAIN_GRACE",
            metavar="SECONDS",
            help="After SIGTERM, how long a running job may go on before it is canceled.",
            rich_help_panel=_AGENT,
        ),
    ] = 300.0,
    kill_grace: Annotated[
        float,
        typer.Option(
            envvar="BENCHRUNNER_KILL_GRACE",
            metavar="SECONDS",
            help="Between SIGTERM and SIGKILL of a canceled job's processes.",
            rich_help_panel=_AGENT,
        ),
    ] = 10.0,
    delivery_grace: Annotated[
        float,
        typer.Option(
            envvar="BENCHRUNNER_DELIVERY_GRACE",
            metavar="SECONDS",
            help="When stopping, how long the last results may take to be acknowledged before "
            "the runner exits and keeps them in the spool for its next start.",
            rich_help_panel=_AGENT,
        ),
    ] = 5.0,
    max_output_bytes: Annotated[
        int,
        typer.Option(
            envvar="BENCHRUNNER_MAX_OUTPUT_BYTES",
            parser=parse_size,
            metavar="SIZE",
            help="Output kept per stream and iteration [default: 1MiB].",
            show_default=False,
            rich_help_panel=_AGENT,
        ),
    ] = 1_048_576,
    once: Annotated[
        bool, typer.Option("--once", help="Exit after one job.", rich_help_panel=_AGENT)
    ] = False,
    sandbox_dir: Annotated[
        Path | None,
        typer.Option(
            envvar="BENCHRUNNER_SANDBOX_DIR",
            metavar="DIR",
            show_default=False,
            help="Sandbox image cache and job directories "
            "[default: ~/.local/share/benchrunner/sandbox/<runner>].",
            rich_help_panel=_AGENT,
        ),
    ] = None,
    oci_runtime: Annotated[
        str,
        typer.Option(
            envvar="BENCHRUNNER_OCI_RUNTIME",
            help="OCI runtime of the sandbox executor: runc or crun.",
            rich_help_panel=_AGENT,
        ),
    ] = "runc",
    tune: Annotated[
        str | None,
        typer.Option(
            "--tune",
            metavar="[=best-effort]",
            show_default=False,
            callback=parse_tune_mode,
            help="Tune the host for benchmarks while the runner lives (governor, turbo, SMT, "
            "THP, IRQs, workqueues, cpuset partition, C-states, ASLR for jobs) and restore it "
            "on exit. Alone: refuse to start if a setting cannot be applied; =best-effort: "
            "say so and go on.",
            rich_help_panel="Host tuning",
        ),
    ] = None,
    host_root: HostRoot = Path("/"),
    noise_guard: Annotated[
        bool,
        typer.Option(
            "--noise-guard/--no-noise-guard",
            envvar="BENCHRUNNER_NOISE_GUARD",
            help="Time a short fixed-work loop on the job cores right before and after each "
            "job; its variation and drift go into the job's output as `noise`. Off under "
            "--tune's cpuset partition, which the runner's own threads cannot enter.",
            rich_help_panel="Host tuning",
        ),
    ] = True,
    signing_key: Annotated[
        Path | None,
        typer.Option(
            envvar="BENCHRUNNER_SIGNING_KEY",
            metavar="FILE",
            show_default=False,
            help="Ed25519 private key (from `runner keygen`, mode 0600) that signs every "
            "result; required when the runner is registered with its public key.",
            rich_help_panel=_AGENT,
        ),
    ] = None,
    update: Annotated[
        bool,
        typer.Option(
            "--update/--no-update",
            envvar="BENCHRUNNER_UPDATE",
            help="Install the runner releases the server offers (Linux), between jobs, and "
            "restart as them. --no-update: never (the runner does not announce the `update` "
            "extension, so the server offers it none).",
            rich_help_panel=_AGENT,
        ),
    ] = True,
    update_channel: Annotated[
        UpdateChannel,
        typer.Option(
            envvar="BENCHRUNNER_UPDATE_CHANNEL",
            help="Which releases: stable (a newer version) or canary (the newest build, "
            "told by its checksum).",
            rich_help_panel=_AGENT,
        ),
    ] = "stable",
    noise_max_age: Annotated[
        float,
        typer.Option(
            envvar="BENCHRUNNER_NOISE_MAX_AGE",
            help="Seconds: the guard's calibration before a job is taken while the runner "
            "waits for work, and retaken when older than this.",
            rich_help_panel="Host tuning",
        ),
    ] = DEFAULT_MAX_AGE,
) -> None:
    """Connect to the server and run its jobs, one at a time, until SIGTERM or SIGINT.

    The first signal drains (no new jobs; a running job gets --drain-grace), a second one
    cancels the running job at once and reports it failed, a third exits at once (results not
    yet acknowledged stay in the spool for the next start). Exit code 0 after a drain, 1 after
    a third signal, 2 if the server refuses the runner or key, the configuration is unusable,
    or the host cannot be tuned as asked.
    A tuning state left by a killed tuned runner is restored first.
    """
    from benchrunner.runner.agent import EXIT_RESTART, RunnerOptions, run_agent
    from benchrunner.runner.cores import CorePlan
    from benchrunner.runner.self_update import reexec, start_affinity
    from benchrunner.runner.signals import StopRequests
    from benchrunner.runner.transport import transport_name

    options = RunnerOptions(
        host=",".join(normalize_host(h) for h in resolve(host, None).host.split(",") if h.strip()),
        runner=runner,
        key=runner_key(key, key_file),
        templates=templates,
        executor=executor,
        spool=spool or default_spool(runner),
        poll_timeout=poll_timeout,
        transport=transport_name(transport),
        drain_grace=drain_grace,
        kill_grace=kill_grace,
        delivery_grace=delivery_grace,
        max_output_bytes=max_output_bytes,
        once=once,
        sandbox_dir=sandbox_dir or default_sandbox_dir(runner),
        oci_runtime=oci_runtime,
        noise_guard=noise_guard,
        signing_key=signing_key,
        noise_max_age=noise_max_age,
        update=update,
        update_channel=update_channel,
    )
    options.validate()
    affinity = start_affinity()

    def run(cores: CorePlan, stops: StopRequests) -> int:
        options.cores = cores
        return run_agent(options, stops)

    code = run_tuned(host_root, tune, run)
    if code == EXIT_RESTART:
        reexec(affinity)  # after the host's tuning is restored: the new process tunes it again
    raise typer.Exit(code)


# -- administration (server runners: admins; --organization: that organization's leaders) ------

Organization = Annotated[
    str | None,
    typer.Option(
        "--organization",
        show_default=False,
        help="An organization's own runners (slug or UUID), which claim only its jobs; "
        "its leaders manage them. Else the server's runners (admins).",
    ),
]


def last_seen(runner: Runner) -> str:
    """When the runner was last heard from: ``last_seen_at``, else an older
    server's ``last_heartbeat_at`` or ``last_heartbeat``."""
    return output.when(runner.last_seen_at or runner.last_heartbeat_at or runner.last_heartbeat)


def _runner_record(runner: Runner) -> None:
    specs = ", ".join(s.slug for s in runner.specs) or None
    output.print_record(
        [
            ("slug", runner.slug),
            ("name", runner.name),
            ("uuid", runner.uuid),
            ("organization", runner.organization or "none: a server runner"),
            ("specs", specs),
            ("paused", runner.paused),
            ("signing key", runner.public_key),
            ("archived", output.when(runner.archived)),
            ("last seen", last_seen(runner)),
            (
                "os / arch / version",
                " / ".join(str(v or "-") for v in (runner.os, runner.arch, runner.version)),
            ),
        ]
    )


def _print_token(runner: str, token: str) -> None:
    output.out().print(f"token: {token}", soft_wrap=True, markup=False)
    output.warning("the token is shown only this once; store it now")
    output.note(
        "start the runner with the token in a file of mode 0600: "
        f"benchrunner runner up --runner {runner} --key-file <file> --host <server URL>"
    )


KeyFormat = Annotated[
    Literal["hex", "bencher"],
    typer.Option(
        "--key-format",
        help="The token's form: hex (bencher_runner_ + 64 hex) or bencher (bencher_runner_ + "
        "30 letters and digits, which Bencher's own runner binary requires).",
    ),
]


@runner_app.command("create")
def runner_create(
    name: Name,
    spec: Annotated[
        list[str] | None,
        typer.Option("--spec", help="Spec slug or UUID the runner offers; repeat for several."),
    ] = None,
    slug: Slug = None,
    public_key: Annotated[
        str | None,
        typer.Option(
            "--public-key",
            show_default=False,
            help="Ed25519 public key (base64url, from `runner keygen`): results must be signed.",
        ),
    ] = None,
    key_format: KeyFormat = "hex",
    organization: Organization = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Create a runner and print its token, which is shown only once."""
    with resolve(host, token).client() as client:
        runner = client.create_runner(
            name,
            spec or [],
            slug=slug,
            public_key=public_key,
            key_format=key_format,
            organization=organization,
        )
    if as_json:
        output.print_json(runner)
        return
    _runner_record(runner)
    _print_token(runner.slug, runner.token)


@runner_app.command("list")
def runner_list(
    archived: Archived = False,
    organization: Organization = None,
    page: Page = 1,
    per_page: PerPage = LIST_PER_PAGE,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Runners: every one (admin), or an organization's own (its members)."""
    with resolve(host, token).client() as client:
        found = client.list_runners(
            archived=archived, page=page, per_page=per_page, organization=organization
        )
    if as_json:
        output.print_json(found)
        return
    rows = [
        (
            r.slug,
            ", ".join(s.slug for s in r.specs),
            r.paused,
            last_seen(r),
            r.version,
            r.uuid,
        )
        for r in found
    ]
    output.print_table(
        ("slug", "specs", "paused", "last seen", "version", "uuid"),
        rows,
        title="Runners",
        total=found.total,
    )


@runner_app.command("show")
def runner_show(
    ref: Ref,
    organization: Organization = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """One runner, by slug or UUID."""
    with resolve(host, token).client() as client:
        output.show(client.get_runner(ref, organization=organization), as_json, _runner_record)


def _update(
    ref: str,
    organization: str | None,
    host: str | None,
    token: str | None,
    as_json: bool,
    *,
    paused: bool | None = None,
    archived: bool | None = None,
) -> None:
    with resolve(host, token).client() as client:
        updated = client.update_runner(
            ref, paused=paused, archived=archived, organization=organization
        )
    output.show(updated, as_json, _runner_record)


@runner_app.command("pause")
def runner_pause(
    ref: Ref,
    organization: Organization = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Stop offering jobs to a runner; its running job continues."""
    _update(ref, organization, host, token, as_json, paused=True)


@runner_app.command("unpause")
def runner_unpause(
    ref: Ref,
    organization: Organization = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Offer jobs to a paused runner again."""
    _update(ref, organization, host, token, as_json, paused=False)


@runner_app.command("archive")
def runner_archive(
    ref: Ref,
    organization: Organization = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Archive a runner: its token stops working and its channel is closed."""
    _update(ref, organization, host, token, as_json, archived=True)


@runner_app.command("rotate-token")
def runner_rotate_token(
    ref: Ref,
    key_format: KeyFormat = "hex",
    organization: Organization = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Issue a new runner token; the old one stops working at once."""
    with resolve(host, token).client() as client:
        rotated = client.rotate_runner_token(
            ref, bencher_format=key_format == "bencher", organization=organization
        )
    if as_json:
        output.print_json(rotated)
        return
    _print_token(ref, rotated.token)


@runner_app.command("add-spec")
def runner_add_spec(
    ref: Ref, spec: SpecRef, host: Host = None, token: Token = None, as_json: Json = False
) -> None:
    """Let runner REF take jobs that ask for SPEC (admin)."""
    with resolve(host, token).client() as client:
        client.add_runner_spec(ref, spec)
        specs = client.list_runner_specs(ref)
    if as_json:
        output.print_json(specs)
        return
    spec_table(specs)


@runner_app.command("remove-spec")
def runner_remove_spec(
    ref: Ref, spec: SpecRef, host: Host = None, token: Token = None, as_json: Json = False
) -> None:
    """Stop runner REF taking jobs that ask for SPEC (admin)."""
    with resolve(host, token).client() as client:
        client.remove_runner_spec(ref, spec)
        specs = client.list_runner_specs(ref)
    if as_json:
        output.print_json(specs)
        return
    spec_table(specs)


runner_app.command("keygen")(keygen)
runner_app.command("set-key")(set_key)
