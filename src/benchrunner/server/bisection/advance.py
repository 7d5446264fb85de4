"""One move of a bisection, in one transaction: its steps updated from what their jobs gave,
then the next duets started or its outcome written (``search`` decides).

Every move re-reads the bisection whole, so a move is safe to repeat: the driver runs one
whenever a job may have finished, and a missed wake-up is caught by the next one."""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.api.bisections import MAX_ROUNDS
from benchrunner.core.states import JobStatus
from benchrunner.core.templates import TemplateError, TemplateRegistry
from benchrunner.detection.duet import another_duet
from benchrunner.server.bisection import rows, search
from benchrunner.server.bisection.jobs import duet_job_create
from benchrunner.server.processing.webhooks import emit_alert_event

CHECK, SEARCH, CONFIRM = "check", "search", "confirm"
NO_CULPRIT = "no culprit: good and bad measure the same"
_UNDER_WAY = frozenset(
    {JobStatus.PENDING, JobStatus.CLAIMED, JobStatus.RUNNING, JobStatus.COMPLETED}
)


@dataclass
class Moved:
    """What a move did: the specs it created jobs for (their dispatchers are woken), and
    whether the bisection ended."""

    spec_ids: set[int] = field(default_factory=set)
    ended: bool = False


@dataclass
class _Move:
    conn: Connection
    b: Any
    now: dt.datetime
    templates: TemplateRegistry
    registry_url: str
    broadcast: Callable[[int], tuple[str, str] | None]
    jobs_used: int
    moved: Moved = field(default_factory=Moved)

    @property
    def budget_left(self) -> bool:
        return self.jobs_used < int(self.b.job_budget)

    def start_job(self, step_id: int, baseline: Any, contender: Any, rounds: int) -> str | None:
        """Create the step's next duet job; why not (a template that no longer takes the
        arguments), or None."""
        try:
            job_id, _ = duet_job_create(
                self.conn,
                self.b,
                baseline,
                contender,
                rounds,
                self.now,
                templates=self.templates,
                registry_url=self.registry_url,
                notify=self.broadcast(self.b.spec_id),
            )
        except TemplateError as exc:
            return str(exc)
        rows.job_link(self.conn, step_id, job_id)
        self.jobs_used += 1
        rows.bisection_update(self.conn, self.b.id, jobs_used=self.jobs_used, modified=self.now)
        self.moved.spec_ids.add(self.b.spec_id)
        return None

    def start_step(self, kind: str, contender: Any, baseline: Any) -> None:
        step_id = rows.step_add(
            self.conn,
            self.b.id,
            kind,
            contender.position,
            contender.commit,
            baseline.commit,
            self.b.rounds,
            self.now,
        )
        refused = self.start_job(step_id, baseline, contender, self.b.rounds)
        if refused is not None:
            rows.step_update(self.conn, step_id, status=rows.SKIPPED, reason=refused)

    def finish(self, **outcome: Any) -> None:
        rows.bisection_update(
            self.conn, self.b.id, state=rows.DONE, finished=self.now, modified=self.now, **outcome
        )
        self.moved.ended = True
        if self.b.alert_id is not None:
            emit_alert_event(self.conn, "alert.bisected", [int(self.b.alert_id)], self.now)


def advance(
    conn: Connection,
    bisection_id: int,
    now: dt.datetime,
    *,
    templates: TemplateRegistry,
    registry_url: str,
    broadcast: Callable[[int], tuple[str, str] | None],
) -> Moved:
    """Move the bisection on (nothing when it is not running)."""
    # The guarded write first: on PostgreSQL it holds the row, so a cancel committing meanwhile
    # either ends it before this move or waits for it and sees the jobs it created.
    if not rows.bisection_update(conn, bisection_id, modified=now):
        return Moved()
    b = rows.bisection_by_id(conn, bisection_id)
    move = _Move(conn, b, now, templates, registry_url, broadcast, b.jobs_used)
    commits = {c.position: c for c in rows.commits_of(conn, bisection_id)}
    jobs_of: dict[int, list[Any]] = defaultdict(list)
    for j in rows.jobs_of(conn, bisection_id):
        jobs_of[j.step_id].append(j)
    for step in rows.steps_of(conn, bisection_id):
        if step.status == rows.RUNNING:
            _update_step(move, step, jobs_of[step.id], commits)
    steps = rows.steps_of(conn, bisection_id)
    _decide(move, steps, commits)
    return move.moved


def _benchmarks(b: Any) -> list[str]:
    return list(json.loads(b.benchmarks))


def _verdict(
    b: Any, kind: str, figures: dict[str, tuple[float, float, float]]
) -> tuple[search.Verdict, str]:
    """The step's verdict from its duet's figures, and the benchmark whose figures it shows."""
    if kind == CHECK:
        verdicts = {
            name: search.check_verdict(figures[name][1], figures[name][2], b.margin)
            for name in _benchmarks(b)
        }
        different = [n for n, v in verdicts.items() if v == "different"]
        if different:
            return "different", different[0]
        first = _benchmarks(b)[0]
        return ("same" if all(v == "same" for v in verdicts.values()) else "unknown"), first
    followed = b.followed
    _, lower, upper = figures[followed]
    return search.level_verdict(lower, upper, b.bad_ratio), followed


def _update_step(move: _Move, step: Any, jobs: list[Any], commits: dict[int, Any]) -> None:
    conn, b = move.conn, move.b
    if not jobs:
        return
    latest = jobs[-1]
    status = JobStatus(latest.status)
    if status in _UNDER_WAY:
        return
    if status != JobStatus.PROCESSED:
        reason = f"job {latest.uuid} {status.wire}"
        rows.step_update(conn, step.id, status=rows.SKIPPED, reason=reason, modified=move.now)
        return
    figures = rows.duet_figures(conn, latest.report_id, b.measure)
    wanted = [b.followed] if step.kind != CHECK and b.followed else _benchmarks(b)
    missing = [name for name in wanted if name not in figures]
    if missing:
        error = rows.report_error(conn, latest.report_id)
        reason = f"job {latest.uuid} gave no {b.measure} ratio for {', '.join(missing)}"
        if error:
            reason += f": {error}"
        rows.step_update(conn, step.id, status=rows.SKIPPED, reason=reason, modified=move.now)
        return
    verdict, shown = _verdict(b, step.kind, figures)
    ratio, lower, upper = figures[shown]
    figures_of = {"ratio": ratio, "lower_value": lower, "upper_value": upper, "modified": move.now}
    rounds = step.rounds * 2
    if another_duet(verdict, rounds, MAX_ROUNDS) and move.budget_left:
        rows.step_update(conn, step.id, rounds=rounds, **figures_of)
        baseline = _commit_named(commits, step.baseline, below=step.position)
        refused = move.start_job(step.id, baseline, commits[step.position], rounds)
        if refused is None:
            return
        rows.step_update(conn, step.id, status=rows.SKIPPED, reason=refused)
        return
    rows.step_update(conn, step.id, status=rows.DONE, verdict=verdict, **figures_of)
    if step.kind == CHECK and verdict == "different":
        rows.bisection_update(conn, b.id, followed=shown, bad_ratio=ratio)
        move.b = rows.bisection_by_id(conn, b.id)


def _commit_named(commits: dict[int, Any], commit: str, *, below: int) -> Any:
    """The version ``commit`` at a position below ``below`` (a step's baseline)."""
    return next(c for p, c in sorted(commits.items()) if p < below and c.commit == commit)


def _fmt(ratio: float, lower: float, upper: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}% [{(lower - 1) * 100:+.1f}, {(upper - 1) * 100:+.1f}]"


def _decide(move: _Move, steps: list[Any], commits: dict[int, Any]) -> None:
    b = move.b
    count = len(commits) - 1
    good, bad = commits[-1], commits[count - 1]
    check = next((s for s in steps if s.kind == CHECK), None)
    if check is None:
        move.start_step(CHECK, bad, good)
        return
    if check.status == rows.RUNNING:
        return
    if check.status == rows.SKIPPED:
        move.finish(reason=f"undecided: bad against good could not be measured ({check.reason})")
        return
    if check.verdict == "same":
        move.finish(reason=NO_CULPRIT)
        return
    if check.verdict == "unknown":
        move.finish(
            reason="undecided: bad against good stayed unknown within the budget of "
            f"{b.job_budget} jobs ({_fmt(check.ratio, check.lower_value, check.upper_value)})"
        )
        return
    known: dict[int, search.Known] = {count - 1: "different"}
    for s in steps:
        if s.kind != SEARCH:
            continue
        if s.status == rows.RUNNING:
            known[s.position] = "pending"
        elif s.status == rows.DONE and s.verdict in ("same", "different"):
            known[s.position] = s.verdict
        else:
            known[s.position] = "skipped"
    next_move = search.next_move(count, known, rows.runner_slots(move.conn, b.spec_id))
    if isinstance(next_move, search.Probe):
        for position in next_move.positions:
            if not move.budget_left:
                break
            move.start_step(SEARCH, commits[position], good)
        if not move.budget_left and "pending" not in known.values() and not move.moved.spec_ids:
            low, high = search.bounds(count, known)
            move.finish(
                reason=f"undecided: the budget of {b.job_budget} jobs is spent; the first bad "
                f"commit is after {commits[low].commit} and at or before {commits[high].commit}"
            )
        return
    if isinstance(next_move, search.Wait):
        return
    if isinstance(next_move, search.Ambiguous):
        names = ", ".join(commits[p].commit for p in next_move.positions)
        move.finish(
            reason=f"undecided: the first bad commit is one of {names} (the commits before "
            "the last could not be measured)"
        )
        return
    _confirm(move, steps, commits, next_move.position)


def _confirm(move: _Move, steps: list[Any], commits: dict[int, Any], position: int) -> None:
    """The first bad commit found: named once its duet against its parent measures as bad
    against good did."""
    culprit, parent = commits[position], commits[position - 1]
    confirm = next((s for s in steps if s.kind == CONFIRM and s.position == position), None)
    if confirm is None:
        if not move.budget_left:
            move.finish(
                reason=f"undecided: {culprit.commit} looks like the first bad commit, but the "
                f"budget of {move.b.job_budget} jobs is spent before its duet against its parent"
            )
            return
        move.start_step(CONFIRM, culprit, parent)
        return
    if confirm.status == rows.RUNNING:
        return
    if confirm.status == rows.DONE and confirm.verdict == "different":
        move.finish(
            culprit=culprit.commit,
            culprit_parent=parent.commit,
            culprit_ratio=confirm.ratio,
            culprit_lower=confirm.lower_value,
            culprit_upper=confirm.upper_value,
        )
        return
    if confirm.status == rows.SKIPPED:
        why = f"its duet against its parent could not be measured ({confirm.reason})"
    elif confirm.verdict == "same":
        why = f"it measured as its parent {parent.commit} did: the change is spread over commits"
    else:
        why = "its duet against its parent stayed unknown within the budget"
    move.finish(reason=f"undecided: {culprit.commit} looks like the first bad commit, but {why}")
