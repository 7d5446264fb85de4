"""Confirmation before alerting end to end (docs/how-to/thresholds-alerts.md), on SQLite with a
real server and a real runner: a runner job's crossing of a threshold with ``confirm: 2`` queues
two re-runs of the job; re-runs that cross too raise one alert naming them, re-runs back to
normal raise none and mark the metric suspected, re-runs that fail leave the alert raised; the
history holds each report once."""

from __future__ import annotations

import datetime as dt
import functools
import json
from pathlib import Path
from typing import Any

import pytest

from benchrunner.api.alerts import Alert, Confirmation
from benchrunner.api.jobs import Job
from benchrunner.api.thresholds import Threshold, ThresholdModelBody
from benchrunner.client import PerfQuery
from tests.harness import Deployment, cli, deploy, wait_until

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

# Each run takes the first value of the file and leaves the rest: the test decides what each of
# the jobs (the judged one, then its re-runs, in the order the one runner takes them) measures.
_PROGRAM = (
    "import json,sys; p=sys.argv[1]; v=open(p).read().split(); "
    "open(p,'w').write(chr(10).join(v[1:])); "
    "print(json.dumps({'parse': {'latency': {'value': float(v[0])}}}))"
)
QUEUED_VALUE = f"""
[templates."bench.queued_value"]
description = "Measure the first value of a file and take it off the file"
command = ["python3", "-c", {json.dumps(_PROGRAM)}, "{{file}}"]
timeout = 30

[templates."bench.queued_value".args.file]
type = "string"
"""


# A version of the program: it measures ``value`` unless the file holds values, of which it
# takes the first (a one-off blip of the judged run).
_VERSIONED = (
    "import json,sys; p=sys.argv[2]; v=open(p).read().split(); "
    "open(p,'w').write(chr(10).join(v[1:])); "
    "x=float(v[0]) if v else float(sys.argv[1]); "
    "print(json.dumps({'parse': {'latency': {'value': x}}}))"
)
VERSIONED = f"""
[templates."bench.versioned"]
description = "Measure a version's value, or a blip the file holds"
command = ["python3", "-c", {json.dumps(_VERSIONED)}, "{{value}}", "{{file}}", "{{version}}"]
timeout = 30

[templates."bench.versioned".args.value]
type = "float"

[templates."bench.versioned".args.file]
type = "string"

[templates."bench.versioned".args.version]
type = "string"
"""


def _quiet(deployment: Deployment) -> None:
    """No noise guard on the spec: on a loaded machine it could find a run noisy, and a noisy
    report's thresholds raise nothing, confirmed or not (docs/explanation/noise.md)."""
    with deployment.http() as client:
        answer = client.patch(f"/v0/specs/{deployment.spec}", json={"noise_guard": False})
    assert answer.status_code == 200, answer.text


def _history(deployment: Deployment, value: float, minute: int, spread: int = 1) -> None:
    """A direct result on main/ci at ``T0 + minute``: ``spread`` iterations around ``value``."""
    at = (T0 + dt.timedelta(minutes=minute)).isoformat()
    body = {
        "project": deployment.project,
        "branch": "main",
        "testbed": "ci",
        "start_time": at,
        "end_time": at,
        "settings": {"adapter": "json"},
        "results": [
            json.dumps({"parse": {"latency": {"value": value + i - spread // 2}}})
            for i in range(spread)
        ],
    }
    with deployment.admin() as client:
        client.run(body)


def _judged_run(
    deployment: Deployment,
    values: Path,
    iterations: int = 1,
    *,
    template: str = "bench.queued_value",
    args: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A runner job on main/ci measuring the file's first value (in each of ``iterations``);
    its report once processed (judged: docs/reference/thresholds.md, "When")."""
    with deployment.admin() as client:
        submitted = client.run(
            {
                "project": deployment.project,
                "branch": "main",
                "testbed": "ci",
                "spec": deployment.spec,
                "template": template,
                "args": {"file": str(values), **(args or {})},
                "settings": {"adapter": "json"},
                "job": {"iter": iterations},
            }
        )
    job = deployment.wait_status(str(submitted.job), "processed", timeout=120)
    with deployment.admin() as client:
        return client.get_report(deployment.project, job.report).model_dump(
            mode="json", exclude_unset=True
        )


def _versioned_run(deployment: Deployment, values: Path, value: float, name: str) -> dict[str, Any]:
    """A judged run of ``bench.versioned``'s version ``name``, measuring ``value`` (or the
    file's first value, when it holds any)."""
    args = {"value": value, "version": name}
    return _judged_run(deployment, values, template="bench.versioned", args=args)


def _alerts(deployment: Deployment, status: Any = None) -> list[Alert]:
    with deployment.admin() as client:
        return list(client.list_alerts(deployment.project, status=status))


def _confirmation(alert: Alert) -> Confirmation:
    assert alert.confirmation is not None, alert
    return alert.confirmation


def _decided(deployment: Deployment, report: str) -> Alert | None:
    """The report's alert once its confirmation runs have decided it."""
    for status in ("active", "suspected"):
        for found in _alerts(deployment, status):
            if found.raised_by == report:
                return found
    return None


def _versions(duet_job: Job) -> tuple[object, object]:
    """The ``version`` argument of the duet's baseline and of its contender."""
    duet = duet_job.config.duet
    assert duet is not None and duet.baseline.args and duet.contender.args
    return duet.baseline.args["version"], duet.contender.args["version"]


def _confirmed_by_one_duet(
    deployment: Deployment, report: dict[str, Any]
) -> tuple[Alert, Job, dict[str, Any]]:
    """The report's alert once decided, which must be active and confirmed by one duet; and
    that duet's job and report."""
    raised = wait_until(
        lambda: _decided(deployment, report["uuid"]), timeout=120, message="the step decided"
    )
    assert raised.status == "active"
    assert _confirmation(raised).outcome == "confirmed"
    [run] = _confirmation(raised).runs
    with deployment.admin() as client:
        return (
            raised,
            client.get_job(deployment.project, run.job),
            client.get_report(deployment.project, run.report).model_dump(
                mode="json", exclude_unset=True
            ),
        )


def _samples_threshold(deployment: Deployment, confirm: int | None = None) -> None:
    """A ``samples`` threshold on main/ci's latency, with ``confirm`` runs (None: the default)."""
    with deployment.admin() as client:
        client.create_threshold(
            deployment.project,
            branch="main",
            testbed="ci",
            measure="latency",
            model=ThresholdModelBody(test="samples"),
            confirm=confirm,
        )


def _quiet_history_under_10pct(deployment: Deployment, confirm: int | None = None) -> Threshold:
    """Four quiet reports of 100 on main/ci, then a 10 % latency threshold over them."""
    _quiet(deployment)
    for minute in range(1, 5):
        _history(deployment, 100, minute)
    with deployment.admin() as client:
        return client.create_threshold(
            deployment.project,
            branch="main",
            testbed="ci",
            measure="latency",
            model=ThresholdModelBody(test="percentage", upper_boundary=0.1, min_sample_size=3),
            confirm=confirm,
        )


def test_a_crossing_alerts_only_when_its_confirmation_runs_agree(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'benchrunner.db'}"
    with deploy(tmp_path, url, extra_templates=QUEUED_VALUE) as deployment:
        threshold = _quiet_history_under_10pct(deployment, confirm=2)
        assert threshold.confirm == 2
        deployment.runner_process("confirming").start()
        values = tmp_path / "values.txt"

        # A one-off blip: the re-runs measure the old level again.
        values.write_text("300\n100\n100\n")
        blip = _judged_run(deployment, values)
        suspected = wait_until(
            lambda: _decided(deployment, blip["uuid"]), timeout=120, message="the blip decided"
        )
        assert suspected.status == "suspected"
        assert _confirmation(suspected).outcome == "suspected"
        assert len(_confirmation(suspected).runs) == 2
        assert _alerts(deployment) == []  # not raised: listed only when asked for
        with deployment.admin() as client:
            shown = client.get_report(deployment.project, blip["uuid"])
        [[bench]] = shown.results
        assert bench.measures[0].confirmation == "suspected"
        assert [r.job for r in shown.confirmation_runs or []] == [
            r.job for r in _confirmation(suspected).runs
        ]
        for run in shown.confirmation_runs or []:
            with deployment.admin() as client:
                rerun = client.get_job(deployment.project, run.job)
                rerun_report = client.get_report(deployment.project, run.report)
            created = rerun.events[0]
            assert created.message == (
                f"confirmation of report {blip['uuid']}, metric parse (Latency)"
            ), created
            assert rerun_report.confirms == blip["uuid"]
            # The same version measured again, not a version of its own.
            assert rerun_report.branch.head is not None
            assert rerun_report.branch.head.version is not None
            version = rerun_report.branch.head.version.number
            assert version == blip["branch"]["head"]["version"]["number"]
            assert rerun_report.alerts == []  # a re-run is never judged itself
        assert values.read_text() == ""

        # A real step: both re-runs cross too, and one alert names them.
        values.write_text("300\n300\n300\n")
        step = _judged_run(deployment, values)
        raised = wait_until(
            lambda: _decided(deployment, step["uuid"]), timeout=120, message="the step decided"
        )
        assert raised.status == "active"
        assert _confirmation(raised).outcome == "confirmed"
        with deployment.admin() as client:
            shown = client.get_report(deployment.project, step["uuid"])
        assert [r.job for r in _confirmation(raised).runs] == [
            r.job for r in shown.confirmation_runs or []
        ]
        assert len(_confirmation(raised).runs) == 2
        # Judged against the four direct results and the blip, not the blip's re-runs (100s).
        [[bench]] = shown.results
        boundary = bench.measures[0].boundary
        assert boundary is not None and boundary.baseline == 140.0
        assert [a.uuid for a in _alerts(deployment)] == [raised.uuid]

        # Re-runs that measure nothing (they fail) leave the crossing as it stood: raised.
        values.write_text("300\nbroken\nbroken\n")
        unmeasured = _judged_run(deployment, values)
        stood = wait_until(
            lambda: _decided(deployment, unmeasured["uuid"]), timeout=120, message="the decision"
        )
        assert stood.status == "active"
        assert _confirmation(stood).outcome == "unconfirmed"
        for run in _confirmation(stood).runs:
            assert deployment.status(run.job) == "failed"

        # The history: four direct results and the three judged reports, each once.
        query = PerfQuery(
            branches=["main"],
            testbeds=["ci"],
            benchmarks=["parse"],
            measures=["latency"],
            start_time=T0,
            end_time=dt.datetime.now(dt.UTC) + dt.timedelta(days=1),
        )
        with deployment.admin() as client:
            perf = client.perf(deployment.project, query)
        [series] = perf.results
        reports = [m.report for m in series.metrics]
        assert len(reports) == 7 and len(set(reports)) == 7
        assert reports[-3:] == [blip["uuid"], step["uuid"], unmeasured["uuid"]]

        # A CI step (`run --wait --err`) waits for the re-runs and fails on a confirmed step,
        # though its job was processed while the alert was still held back.
        values.write_text("300\n300\n300\n")
        ci_step = cli(
            *("run", "--wait", "--err", "--spec", deployment.spec, "--adapter", "json"),
            *("--branch", "main", "--testbed", "ci", "--template", "bench.queued_value"),
            *("--arg", f"file={values}"),
            env=deployment.cli_env(tmp_path),
            check=False,
        )
        assert ci_step.returncode == 1, ci_step.stdout + ci_step.stderr
        assert "1 alert detected" in ci_step.stderr, ci_step.stderr
        assert values.read_text() == ""  # both re-runs ran before the step ended


def test_a_samples_answer_of_unknown_is_settled_by_the_reruns_samples(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'benchrunner.db'}"
    with deploy(tmp_path, url, extra_templates=QUEUED_VALUE) as deployment:
        _quiet(deployment)
        # Eight runs: two runs beyond all eight give the rank test p = 2/45, within 0.05.
        for minute in range(1, 9):
            _history(deployment, 100, minute, spread=4)
        _samples_threshold(deployment, confirm=1)
        deployment.runner_process("confirming").start()
        values = tmp_path / "values.txt"
        # One run beyond the limit could be a one-off (unknown); with the re-run, they differ.
        values.write_text("200\n201\n202\n203\n")
        judged = _judged_run(deployment, values, iterations=2)
        [first, *_] = [m for bench in judged["results"] for b in bench for m in b["measures"]]
        assert first["boundary"]["verdict"] == "unknown"
        raised = wait_until(
            lambda: _decided(deployment, judged["uuid"]), timeout=120, message="the decision"
        )
        assert raised.status == "active"
        assert _confirmation(raised).outcome == "confirmed"
        assert len(_confirmation(raised).runs) == 1
        # The step is the four samples' together: medians 100 and 201.5.
        assert raised.change is not None and raised.change.after == 201.5
        assert values.read_text() == ""


def test_a_crossing_after_another_version_is_confirmed_by_a_duet_against_it(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'benchrunner.db'}"
    with deploy(tmp_path, url, extra_templates=VERSIONED) as deployment:
        threshold = _quiet_history_under_10pct(deployment)
        assert threshold.confirm == 2  # the default
        deployment.runner_process("confirming").start()
        values = tmp_path / "values.txt"
        values.write_text("")
        version = functools.partial(_versioned_run, deployment, values)

        first = version(100, "v1")
        assert first["alerts"] == []

        # v2 measures as v1 does, but its judged run met a blip: the duet finds them the same.
        values.write_text("300\n")
        blip = version(100, "v2")
        suspected = wait_until(
            lambda: _decided(deployment, blip["uuid"]), timeout=120, message="the blip decided"
        )
        assert suspected is not None and suspected.status == "suspected"
        assert _confirmation(suspected).outcome == "suspected"
        [run] = _confirmation(suspected).runs  # one duet, not two re-runs
        with deployment.admin() as client:
            duet_job = client.get_job(deployment.project, run.job)
            duet_report = client.get_report(deployment.project, run.report)
        assert duet_job.events[0].message == (
            f"confirmation of report {blip['uuid']}, metric parse (Latency), "
            f"as a duet against report {first['uuid']} (job {first['job']})"
        )
        assert _versions(duet_job) == ("v1", "v2")
        assert duet_job.config.iter == 10  # 5 rounds per confirmation run
        assert duet_report.confirms == blip["uuid"]
        assert duet_report.duet is not None
        [result] = duet_report.duet.results
        figures = (result.ratio, result.lower_value, result.upper_value)
        assert figures == pytest.approx((1.0, 1.0, 1.0))
        assert result.margin.upper == 0.1  # the percentage threshold's boundary
        assert duet_report.alerts == [] and _alerts(deployment) == []

        # v3 is three times slower: the duet against v2 finds it different, and confirms.
        step = version(300, "v3")
        raised = wait_until(
            lambda: _decided(deployment, step["uuid"]), timeout=120, message="the step decided"
        )
        assert raised is not None and raised.status == "active"
        assert _confirmation(raised).outcome == "confirmed"
        [run] = _confirmation(raised).runs
        with deployment.admin() as client:
            duet_report = client.get_report(deployment.project, run.report)
        assert duet_report.duet is not None
        [result] = duet_report.duet.results
        figures = (result.ratio, result.lower_value, result.upper_value)
        assert figures == pytest.approx((3.0, 3.0, 3.0))
        assert [a.uuid for a in _alerts(deployment)] == [raised.uuid]  # no duet alert


def test_a_duet_that_answers_unknown_measures_more_rounds_pooled(tmp_path: Path) -> None:
    """Against a 10 % threshold, a duet whose rounds alternate ratios 1.0 and 1.2 straddles the
    margin: unknown. Another duet of the same sides follows, judged with the first pooled;
    while they stay unknown more follow, up to 50 rounds, and the alert is then suspected, as
    unknown after 50 rounds. A version whose second duet alone would be different (1.12 and
    1.3) but pooled with the first is not yet takes a third, which confirms it."""
    url = f"sqlite:///{tmp_path / 'benchrunner.db'}"
    with deploy(tmp_path, url, extra_templates=VERSIONED) as deployment:
        _quiet_history_under_10pct(deployment)
        deployment.runner_process("confirming").start()

        def version(name: str, queued: list[float]) -> dict[str, Any]:
            """A judged run of version ``name``, which measures 100 unless ``queued`` values
            remain: the judged run takes the first, each duet round's contender the next."""
            values = tmp_path / f"{name}.txt"
            values.write_text("\n".join(str(v) for v in queued))
            args = {"value": 100.0, "version": name}
            return _judged_run(deployment, values, template="bench.versioned", args=args)

        def decided(report: dict[str, Any]) -> Alert:
            found = wait_until(
                lambda: _decided(deployment, report["uuid"]), timeout=300, message="decided"
            )
            assert found is not None
            return found

        def first_events(alert: Alert) -> list[str]:
            with deployment.admin() as client:
                return [
                    str(client.get_job(deployment.project, run.job).events[0].message)
                    for run in _confirmation(alert).runs
                ]

        first = version("v1", [])
        assert first["alerts"] == []
        unknown = version("v2", [120.0, *[100.0, 120.0] * 25])
        suspected = decided(unknown)
        assert suspected.status == "suspected"
        assert _confirmation(suspected).outcome == "suspected"
        assert _confirmation(suspected).reason == "unknown after 50 rounds"
        events = first_events(suspected)
        assert len(events) == 5  # 10 rounds each: the 50 rounds of ten confirmation runs
        assert events[0].endswith(f"as a duet against report {first['uuid']} (job {first['job']})")
        for count, message in enumerate(events[1:], start=1):
            pooled = f" ({count} duets)" if count > 1 else ""
            assert (
                events[0]
                + (
                    ": another 10 rounds, as the duets so far left it unknown: parse (Latency): "
                    f"unknown after {count * 10} rounds{pooled}, ratio 1.095 ["
                )
                in message
            )
        assert (tmp_path / "v2.txt").read_text() == ""

        step = version("v3", [130.0, *[100.0, 120.0] * 5, *[112.0, 130.0] * 10])
        confirmed = decided(step)
        assert confirmed.status == "active"
        assert _confirmation(confirmed).outcome == "confirmed"
        assert _confirmation(confirmed).reason is None
        events = first_events(confirmed)
        assert len(events) == 3  # the second alone says different; pooled, it is unknown
        assert "unknown after 20 rounds (2 duets), ratio 1.161 [1.076, 1.252]" in events[2]
        assert [a.uuid for a in _alerts(deployment)] == [confirmed.uuid]


def test_a_samples_shift_within_a_wide_spread_is_settled_by_a_duet_against_the_version_before(
    tmp_path: Path,
) -> None:
    """On a history whose runs land on two levels (100 and 108), the limit is wide (3.5 spreads,
    about 20 %): runs 10 % and 16 % above its center are unknown, too noisy to tell from the runs
    alone. With the version before known (v2's), a duet tells, judged by half the threshold's
    ``min_magnitude``; with none known (v1, after direct results only), nothing is held back."""
    url = f"sqlite:///{tmp_path / 'benchrunner.db'}"
    with deploy(tmp_path, url, extra_templates=VERSIONED) as deployment:
        _quiet(deployment)
        for minute in range(1, 9):
            _history(deployment, 100 if minute % 2 else 108, minute)
        _samples_threshold(deployment)
        deployment.runner_process("confirming").start()
        values = tmp_path / "values.txt"
        values.write_text("")
        version = functools.partial(_versioned_run, deployment, values)

        def verdict(report: dict[str, Any]) -> str:
            [measure] = [m for bench in report["results"] for b in bench for m in b["measures"]]
            return str(measure["boundary"]["verdict"])

        first = version(110, "v1")  # 10 % above the center of 100: unknown, no duet to run
        assert verdict(first) == "unknown"
        assert _alerts(deployment, "pending") == [] and _alerts(deployment, "suspected") == []

        # 16 % above the center of 104, 10 % above v1, which measured below their midpoint
        step = version(121, "v2")
        assert verdict(step) == "unknown"
        _, duet_job, duet_report = _confirmed_by_one_duet(deployment, step)
        assert _versions(duet_job) == ("v1", "v2")
        [result] = duet_report["duet"]["results"]
        assert result["ratio"] == pytest.approx(1.1)
        assert result["margin"]["upper"] == pytest.approx(0.01)  # min_magnitude 2 %, halved


def test_a_samples_step_that_began_a_run_before_is_confirmed_against_the_old_level(
    tmp_path: Path,
) -> None:
    """v3 steps from 100 to 110 before the threshold exists; v4 stays at 110, and the samples
    test finds the step (v3 and v4 together, the alert on v3). The duet that confirms it runs
    v4 against the newest version that measured at the old level, v2, not against v3, which
    is at the new one and would find nothing."""
    url = f"sqlite:///{tmp_path / 'benchrunner.db'}"
    with deploy(tmp_path, url, extra_templates=VERSIONED) as deployment:
        _quiet(deployment)
        for minute in range(1, 9):
            _history(deployment, 100, minute)
        deployment.runner_process("confirming").start()
        values = tmp_path / "values.txt"
        values.write_text("")
        version = functools.partial(_versioned_run, deployment, values)

        version(100, "v1")
        version(100, "v2")
        version(110, "v3")
        _samples_threshold(deployment)
        step = version(110, "v4")
        _, duet_job, _ = _confirmed_by_one_duet(deployment, step)
        assert _versions(duet_job) == ("v2", "v4")
