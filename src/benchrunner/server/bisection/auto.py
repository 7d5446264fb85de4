"""Bisections started by themselves (docs/how-to/bisect.md): an alert of a threshold with
``bisect`` is marked pending in the transaction that raised it; the bisection driver then
starts its bisection here, as ``POST .../bisections`` would, or records why it cannot.

The question comes from the alert: its benchmark and measure; bad is the hash of the report
whose metric alerted, good the hash of the report before it on that branch and testbed; the
candidates between them are the ``bisect_range`` the run gave with the bad report. Each commit
runs by the bad report's own recipe: its job's template with every argument that holds the
bad hash holding ``{commit}`` instead, or else the run's ``bisect_image`` (a tag of the
project's registry holding ``{commit}``).

A queue over its cap leaves the alert pending, to be tried again on a later look."""

from __future__ import annotations

import datetime as dt
import json
import logging
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.api.bisections import DEFAULTS as DEFAULTS  # the console's search defaults
from benchrunner.api.run import COMMIT
from benchrunner.core.templates import TemplateError, TemplateRegistry
from benchrunner.protocol import JsonJobConfig
from benchrunner.server.bisection import rows
from benchrunner.server.bisection.jobs import template_args
from benchrunner.server.config import ServerSettings
from benchrunner.server.http.errors import ApiError
from benchrunner.server.store import accounts, alerts, registry, reports, runners
from benchrunner.server.store.tables import branch, job, project, report
from benchrunner.server.submission.backpressure import check_backlog

log = logging.getLogger(__name__)

BRANCH = "bisections"
ACTOR = "threshold"
LOOK_BATCH = 20
DEFAULT_TIMEOUT = 3600


class Skip(Exception):
    """Why the alert's bisection cannot start; recorded on the alert."""


def candidates_of(bisect_range: str | None, bad: str) -> list[str]:
    """The commits after good up to bad, oldest first, from a report's ``bisect_range`` (bad
    added when last is another); ``Skip`` without one or when it leaves nothing to search."""
    if not bisect_range:
        raise Skip(
            "the report gave no bisect_range (benchrunner run --bisect-range, or PATCH the "
            "report with one)"
        )
    found = [c for c in json.loads(bisect_range) if c]
    if not found or found[-1] != bad:
        found.append(bad)
    if len(found) < 2:
        raise Skip(f"{bad} is the only commit since the previous report: it is the change")
    return found


def commit_args(args: dict[str, Any] | None, bad: str) -> dict[str, Any] | None:
    """A template job's arguments with ``{commit}`` where they held the bad hash; None when
    none held it."""
    if not args:
        return None
    out = {k: v.replace(bad, COMMIT) if isinstance(v, str) else v for k, v in args.items()}
    return out if out != args else None


@dataclass(frozen=True)
class _Recipe:
    spec_id: int
    image: str | None
    template: str | None
    args: dict[str, Any] | None
    timeout: int


def _recipe(conn: Connection, bad_report: Any, templates: TemplateRegistry) -> _Recipe:
    ran = conn.execute(
        sa.select(job.c.spec_id, job.c.config).where(job.c.report_id == bad_report.id)
    ).first()
    config = None if ran is None else JsonJobConfig.model_validate_json(ran.config)
    if config is not None and config.template is not None:
        args = commit_args(dict(config.args or {}), bad_report.hash)
        if args is None:
            raise Skip(f"no argument of template {config.template!r} holds {bad_report.hash}")
        try:
            template = templates.get(config.template)
            template_args(template, args, bad_report.hash)
        except TemplateError as exc:
            raise Skip(f"template: {exc}") from None
        assert ran is not None
        timeout = min(config.timeout or template.timeout, template.timeout)
        return _Recipe(ran.spec_id, None, config.template, args, timeout)
    if bad_report.bisect_image is None:
        raise Skip(
            "no recipe: the report's job ran no template, and the run gave no bisect_image "
            "(benchrunner run --bisect-image 'NAME:{commit}')"
        )
    if ran is not None:
        spec_id = ran.spec_id
    else:
        fallback = runners.spec_fallback(conn)
        if fallback is None:
            raise Skip("the report ran without a job, and no fallback spec is marked")
        spec_id = fallback.id
    timeout = (config.timeout if config is not None else None) or DEFAULT_TIMEOUT
    return _Recipe(spec_id, bad_report.bisect_image, None, None, timeout)


def _good(conn: Connection, bad_report: Any) -> str:
    found = conn.execute(
        sa.select(report.c.hash)
        .where(
            report.c.branch_id == bad_report.branch_id,
            report.c.testbed_id == bad_report.testbed_id,
            report.c.start_time < bad_report.start_time,
            report.c.hash.is_not(None),
            report.c.hash != bad_report.hash,
        )
        .order_by(report.c.start_time.desc(), report.c.id.desc())
        .limit(1)
    ).scalar()
    if found is None:
        raise Skip("no earlier report on the branch and testbed has a hash: no good commit")
    return str(found)


def _digests(conn: Connection, project_id: int, image: str, versions: list[str]) -> list[Any]:
    tag_of = image.rpartition(":")[2]
    if COMMIT not in tag_of:
        raise Skip(f"bisect_image {image!r}: its tag must hold {{commit}}")
    found = []
    for commit in versions:
        manifest = registry.manifest_by_tag(conn, project_id, tag_of.replace(COMMIT, commit))
        found.append(None if manifest is None else manifest.digest)
    for name, digest, commit in (("good", found[0], versions[0]), ("bad", found[-1], versions[-1])):
        if digest is None:
            raise Skip(f"{name}: no image {image.replace(COMMIT, commit)!r} in the registry")
    return found


def start_for_alert(
    conn: Connection,
    alert_id: int,
    now: dt.datetime,
    *,
    settings: ServerSettings,
    templates: TemplateRegistry,
) -> int | None:
    """Start the pending alert's bisection (its id), or mark the alert skipped with why (None);
    ``ApiError`` 429 when its organization's queue is full (the alert stays pending)."""
    (row,) = alerts.alerts_by_ids(conn, [alert_id]) or [None]
    if row is None or not alerts.alert_claim_bisect(conn, alert_id):
        return None
    try:
        return _start(conn, row, now, settings, templates)
    except Skip as exc:
        alerts.alert_set_bisect(conn, alert_id, "skipped", str(exc))
        return None


def _start(
    conn: Connection,
    row: Any,
    now: dt.datetime,
    settings: ServerSettings,
    templates: TemplateRegistry,
) -> int:
    if row.boundary_id is None:
        raise Skip("a duet's alert compares two versions already")
    bad_report = conn.execute(
        sa.select(report).where(report.c.uuid == row.metric_report_uuid)
    ).one()
    if not bad_report.hash:
        raise Skip("the alerting report has no hash (benchrunner run --hash)")
    bad = str(bad_report.hash)
    candidates = candidates_of(bad_report.bisect_range, bad)
    good = _good(conn, bad_report)
    if good in candidates:
        raise Skip(f"bisect_range holds the previous report's hash {good}")
    recipe = _recipe(conn, bad_report, templates)
    versions = [good, *candidates]
    if recipe.image is not None:
        digests = _digests(conn, bad_report.project_id, recipe.image, versions)
    else:
        digests = [None] * len(versions)
    org, _ = accounts.organization_for_job(conn, _organization_of(conn, bad_report.project_id))
    check_backlog(conn, settings, org.id, org.slug)
    defaults = DEFAULTS
    bisection_id, _ = rows.bisection_add(
        conn,
        rows.NewBisection(
            project_id=bad_report.project_id,
            spec_id=recipe.spec_id,
            user_id=None,
            branch_id=reports.named_get_or_create(conn, branch, bad_report.project_id, BRANCH, now),
            testbed_id=bad_report.testbed_id,
            alert_id=int(row.id),
            measure=row.measure_name,
            benchmarks=[row.benchmark_name],
            adapter=bad_report.adapter,
            good=good,
            bad=bad,
            image=recipe.image,
            template=recipe.template,
            args=recipe.args,
            timeout=recipe.timeout,
            rounds=defaults["rounds"],
            margin=defaults["margin"],
            confidence=defaults["confidence"],
            job_budget=defaults["job_budget"],
            source_ip="",
            actor=f"{ACTOR} {row.threshold_uuid}",
            now=now,
        ),
        list(zip(versions, digests, strict=True)),
    )
    for position, (commit, digest) in enumerate(zip(versions[1:], digests[1:], strict=True)):
        if recipe.image is not None and digest is None:
            rows.step_add(
                conn, bisection_id, "search", position, commit, good, defaults["rounds"], now,
                status=rows.SKIPPED,
                reason=f"no image {recipe.image.replace(COMMIT, commit)!r} in the registry",
            )  # fmt: skip
    return bisection_id


def _organization_of(conn: Connection, project_id: int) -> int:
    return int(
        conn.execute(
            sa.select(project.c.organization_id).where(project.c.id == project_id)
        ).scalar_one()
    )


def _organization_of_alert(conn: Connection, alert_id: int) -> int:
    (row,) = alerts.alerts_by_ids(conn, [alert_id])
    project_id = conn.execute(
        sa.select(report.c.project_id).where(report.c.uuid == row.metric_report_uuid)
    ).scalar_one()
    return _organization_of(conn, int(project_id))


def start_pending(
    conn: Connection,
    now: dt.datetime,
    *,
    settings: ServerSettings,
    templates: TemplateRegistry,
) -> list[int]:
    """Start the bisections of the pending alerts (a batch of them, oldest first): the ids
    started. An organization whose queue is full keeps its alerts pending; the others' start."""
    started: list[int] = []
    full: set[int] = set()
    for alert_id in alerts.alerts_bisect_due(conn, LOOK_BATCH):
        if full and _organization_of_alert(conn, alert_id) in full:
            continue
        try:
            with conn.begin_nested():
                made = start_for_alert(conn, alert_id, now, settings=settings, templates=templates)
        except ApiError:
            full.add(_organization_of_alert(conn, alert_id))
            continue
        except Exception:  # a bug here must not hold back every later alert, nor the moves
            log.exception("starting alert %s's bisection failed", alert_id)
            alerts.alert_set_bisect(
                conn, alert_id, "skipped", "the server failed to start it (see its log)"
            )
            continue
        if made is not None:
            started.append(made)
    return started
