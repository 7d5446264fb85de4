"""Bisection through a real server and a real runner process: a git repository built here,
each commit's work.txt giving the length of a CPU-bound loop that a template runs; one commit
makes it longer, another makes the job fail. The server's duets name the commit that did it,
skipping the failing one; a range without a change ends with no culprit.

The change is twice the work: on this shared machine (load average 15 on two cores) one round
of a duet of two equal loops reads anywhere from 0.8 to 1.3, so a 5 % change takes hundreds of
rounds a step to place, far beyond a system test's minutes. The search itself is the same for
any size of change (its decisions are table-tested for a 6 % one)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchrunner.api.bisections import Bisection
from benchrunner.server.bisection.advance import NO_CULPRIT
from tests.harness import Deployment, cli, deploy, wait_progressing, wait_until
from tests.system import test_webhooks
from tests.system.test_webhooks import Receiver

WORK = 300_000
"""Iterations of the loop: about 30 ms of CPU; each round's time is the processes' start."""
SLOWER_BY = 2
SLOWER_AT = 11
FAILS_AT = 8
COMMITS = 17
MARGIN = "0.2"
receiver = test_webhooks.receiver
"""A real HTTP receiver of webhook deliveries (the fixture of the webhook tests)."""


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _repository(path: Path) -> list[str]:
    """Commits c0 .. c16: c11 on runs ``SLOWER_BY`` times the iterations, c8 alone fails."""
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    hashes = []
    for index in range(COMMITS):
        work = WORK * SLOWER_BY if index >= SLOWER_AT else WORK
        (path / "work.txt").write_text("fail\n" if index == FAILS_AT else f"{work}\n")
        (path / "notes.txt").write_text(f"commit {index}\n")
        _git(path, "add", "work.txt", "notes.txt")
        _git(path, "commit", "-q", "-m", f"commit {index}")
        hashes.append(_git(path, "rev-parse", "HEAD"))
    return hashes


def _progress(deployment: Deployment, uuid: str) -> Any:
    with deployment.admin() as client:
        found = client.get_bisection(deployment.project, uuid)
    return found.jobs_used, [(s.status, s.rounds) for s in found.steps]


def _ended(deployment: Deployment, uuid: str) -> Bisection | None:
    with deployment.admin() as client:
        found = client.get_bisection(deployment.project, uuid)
    return found if found.state != "running" else None


def test_a_bisection_names_the_commit_that_made_the_loop_slower(
    deployment: Deployment, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    commits = _repository(repo)
    deployment.runner_process("r1").start()
    env = deployment.cli_env(tmp_path)
    ran = cli(
        "bisect", "--good", commits[0], "--bad", "main", "--benchmark", "work",
        "--measure", "latency", "--template", "bench.gitwork", "--arg", f"repo={repo}",
        "--arg", "commit={commit}", "--adapter", "json", "--margin", MARGIN,
        "--spec", deployment.spec, "--repo", str(repo), "--interval", "0.5", "--rounds", "6",
        env=env, check=False, timeout=170,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"first bad commit {commits[SLOWER_AT]}" in ran.stdout, ran.stdout

    with deployment.admin() as client:
        (listed,) = client.list_bisections(deployment.project)
        found = client.get_bisection(deployment.project, listed.uuid)
    assert found.state == "done"
    assert found.candidates == commits[1:]
    assert found.result is not None
    culprit = found.result.culprit
    assert culprit is not None
    assert culprit.commit == commits[SLOWER_AT]
    assert culprit.parent == commits[SLOWER_AT - 1]
    assert culprit.lower_value is not None and culprit.upper_value is not None
    assert culprit.ratio is not None
    assert 1 < culprit.lower_value <= culprit.ratio <= culprit.upper_value
    steps = found.steps
    check = steps[0]
    assert (check.kind, check.commit, check.baseline) == ("check", commits[-1], commits[0])
    assert check.verdict == "different" and (check.ratio or 0) > 1
    # The first probe falls on the failing commit: skipped, its neighbours tried instead.
    (failed,) = [s for s in steps if s.commit == commits[FAILS_AT]]
    assert failed.status == "skipped" and "failed" in (failed.reason or ""), failed
    searched = {s.commit: s.verdict for s in steps if s.kind == "search"}
    assert all(v == "same" for c, v in searched.items() if commits.index(c) < SLOWER_AT and v)
    assert all(v == "different" for c, v in searched.items() if commits.index(c) >= SLOWER_AT)
    (confirm,) = [s for s in steps if s.kind == "confirm"]
    assert (confirm.commit, confirm.baseline) == (commits[SLOWER_AT], commits[SLOWER_AT - 1])
    assert confirm.verdict == "different"
    assert all(j.status in ("processed", "failed") for s in steps for j in s.jobs)
    assert found.jobs_used == sum(len(s.jobs) for s in steps) <= found.job_budget
    shown = cli("bisect", "show", found.uuid, env=env).stdout
    assert commits[SLOWER_AT] in shown and "confirm" in shown

    # Good and bad before the change: the first duet finds them the same, and it ends there.
    with deployment.admin() as client:
        started = client.create_bisection(
            deployment.project,
            {
                "benchmarks": ["work"],
                "measure": "latency",
                "good": commits[0],
                "bad": commits[5],
                "candidates": commits[1:6],
                "template": "bench.gitwork",
                "args": {"repo": str(repo), "commit": "{commit}"},
                "adapter": "json",
                "margin": 0.3,
                "spec": deployment.spec,
            },
        )
    same = wait_progressing(
        lambda: _ended(deployment, started.uuid),
        lambda: _progress(deployment, started.uuid),
        stall=60,
        message="the bisection without a change to end",
    )
    assert same.result is not None, same
    assert (same.result.culprit, same.result.reason) == (None, NO_CULPRIT), same
    assert [s.kind for s in same.steps] == ["check"]


@pytest.mark.engine_independent
def test_a_bisection_is_canceled_with_its_jobs_and_checked_when_started(
    deployment: Deployment, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    commits = _repository(repo)
    body: dict[str, Any] = {
        "benchmarks": ["work"],
        "measure": "latency",
        "good": commits[0],
        "bad": commits[-1],
        "candidates": commits[1:],
        "template": "bench.gitwork",
        "args": {"repo": str(repo), "commit": "{commit}"},
        "adapter": "json",
        "spec": deployment.spec,
    }
    with deployment.http() as api:
        refusals: list[tuple[dict[str, Any], str]] = [
            ({"args": {"repo": str(repo), "commit": "HEAD"}}, "must hold {commit}"),
            ({"template": "bench.nope"}, "unknown template"),
            ({"image": "bench:{commit}"}, "either image"),
            ({"template": None, "args": None, "image": "bench:{commit}"}, "no image"),
            ({"template": None, "args": None, "image": "bench:latest"}, "must hold {commit}"),
            ({"candidates": [commits[1], commits[1]]}, "repeated"),
        ]
        for change, message in refusals:
            sent = {k: v for k, v in {**body, **change}.items() if v is not None}
            answer = api.post(f"/v0/projects/{deployment.project}/bisections", json=sent)
            assert answer.status_code == 400, (change, answer.text)
            assert message in answer.json()["message"], (change, answer.text)
        unknown_alert = {**body, "alert": "0198e2ae-0000-7000-8000-000000000000"}
        answer = api.post(f"/v0/projects/{deployment.project}/bisections", json=unknown_alert)
        assert answer.status_code == 404 and "alert" in answer.json()["message"], answer.text
        anonymous = api.post(
            f"/v0/projects/{deployment.project}/bisections",
            json=body,
            headers={"Authorization": ""},
        )
        assert anonymous.status_code == 401, anonymous.text

    # No runner: the first duet waits in the queue until the cancel.
    with deployment.admin() as client:
        started = client.create_bisection(deployment.project, body)
        assert started.state == "running" and started.result is None

        def queued() -> list[Any]:
            found = client.get_bisection(deployment.project, started.uuid)
            return [j for s in found.steps for j in s.jobs]

        (job,) = wait_progressing(queued, lambda: 0, stall=30, message="the first duet's job")
        canceled = client.cancel_bisection(deployment.project, started.uuid)
        assert canceled.state == "canceled"
        assert canceled.result is not None
        assert (canceled.result.reason or "").startswith("canceled by ")
        assert client.get_job(deployment.project, job.uuid).status == "canceled"
        assert client.get_job(deployment.project, job.uuid).config.duet is not None
    with deployment.http() as api:
        again = api.post(f"/v0/projects/{deployment.project}/bisections/{started.uuid}/cancel")
        assert again.status_code == 409, again.text


def test_a_bisection_starts_only_while_its_organizations_queue_has_room(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'benchrunner.db'}"
    with deploy(tmp_path, url, env={"BENCHRUNNER_MAX_PENDING_PER_ORGANIZATION": "1"}) as ours:
        headers = {"Authorization": f"Bearer {ours.server.token}"}
        with httpx.Client(base_url=ours.server.url, headers=headers, timeout=60) as http:
            queued = http.post(
                "/v0/run", json={"project": ours.project, "spec": "small", "template": "bench.noop"}
            )
            assert queued.status_code == 201, queued.text
            refused = http.post(
                f"/v0/projects/{ours.project}/bisections",
                json={
                    "benchmarks": ["noop"],
                    "measure": "latency",
                    "good": "abc123",
                    "bad": "def456",
                    "candidates": ["def456"],
                    "spec": "small",
                    "template": "bench.gitwork",
                    "args": {"repo": str(tmp_path), "commit": "{commit}"},
                },
            )
    assert refused.status_code == 429, refused.text
    assert "max_pending_per_organization" in refused.text


def _alert_bisection(deployment: Deployment, alert: str) -> dict[str, Any] | None:
    with deployment.admin() as client:
        found = client.get_alert(deployment.project, alert)
    return None if found.bisection is None else found.bisection.model_dump(mode="json")


def test_a_bisect_thresholds_alert_starts_a_bisection_by_itself(
    tmp_path: Path, receiver: Receiver
) -> None:
    """Two reports at c0 and c1, a bisect threshold, then a run at c6 (c4 on is four times
    the work) alerts: its range first holds c6 alone (nothing to bisect, so the alert says
    why), then a PATCH gives c2..c6, and the server bisects by itself, the template's commit
    argument taking each commit; the culprit shows on the alert, in `alert show`, and comes
    to a real receiver as ``alert.bisected``. The threshold confirms nothing: at a load of 15 a
    confirmation duet of these short loops can end unknown, and confirmations have tests of
    their own. It alerts on reports the noise guard finds noisy, which a loaded machine's are
    (the guard has tests of its own), and the four times leave the alert clear of a loaded
    machine's slower baseline: a sibling thread's load stretches even CPU time by a third."""
    slower_at = 4
    slower_by = 4
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    commits = []
    for index in range(7):
        (repo / "work.txt").write_text(f"{WORK * slower_by if index >= slower_at else WORK}\n")
        (repo / "notes.txt").write_text(f"commit {index}\n")
        _git(repo, "add", "work.txt", "notes.txt")
        _git(repo, "commit", "-q", "-m", f"commit {index}")
        commits.append(_git(repo, "rev-parse", "HEAD"))
    url = f"sqlite:///{tmp_path / 'benchrunner.db'}"
    fast = {"BENCHRUNNER_WEBHOOK_ALLOW_PRIVATE": "true", "BENCHRUNNER_WEBHOOK_POLL_INTERVAL": "0.5"}
    with deploy(tmp_path, url, env=fast) as deployment:
        deployment.runner_process("r1").start()
        env = deployment.cli_env(tmp_path)
        with deployment.admin() as client:
            client.create_webhook(deployment.project, receiver.url, events=["alert.bisected"])

        def run(index: int, *extra: str) -> None:
            ran = cli(
                "run", "--spec", deployment.spec, "--template", "bench.gitwork",
                "--arg", f"repo={repo}", "--arg", f"commit={commits[index]}",
                "--hash", commits[index], "--branch", "main", "--testbed", "localhost",
                "--adapter", "json", "--wait", *extra,
                env=env, check=False, timeout=120,
            )  # fmt: skip
            assert ran.returncode == 0, ran.stdout + ran.stderr

        run(0)
        made = cli(
            "threshold", "create", "--branch", "main", "--testbed", "localhost",
            "--measure", "latency", "--test", "percentage", "--upper-boundary", "0.5",
            "--min-sample-size", "2", "--bisect", "--confirm", "0", "--alert-when-noisy",
            env=env,
        ).stdout  # fmt: skip
        assert "its alerts start a bisection" in made, made
        run(1)
        run(6, "--bisect-range", commits[6])

        with deployment.admin() as client:
            (alert,) = client.list_alerts(deployment.project)
        skipped = wait_until(
            lambda: (
                (_alert_bisection(deployment, alert.uuid) or {}).get("state") == "skipped"
                and _alert_bisection(deployment, alert.uuid)
            ),
            timeout=30,
            message="the alert's bisection to be found impossible",
        )
        assert "only commit" in skipped["reason"], skipped
        shown = cli("alert", "show", alert.uuid, env=env).stdout
        assert "not bisected" in shown, shown

        with deployment.admin() as client:
            client.update_report(deployment.project, alert.report, bisect_range=commits[2:])

        def ended() -> dict[str, Any] | None:
            found = _alert_bisection(deployment, alert.uuid)
            return found if found and found["state"] not in ("pending", "running") else None

        def progress() -> Any:
            found = _alert_bisection(deployment, alert.uuid) or {}
            return found.get("state"), found.get("text")

        done = wait_progressing(ended, progress, stall=60, message="the alert's bisection")
        assert done["state"] == "done", done
        assert done["result"]["culprit"]["commit"] == commits[slower_at], done
        assert done["text"].startswith(f"caused by {commits[slower_at][:7]}, +"), done
        with deployment.admin() as client:
            found = client.get_bisection(deployment.project, done["uuid"])
        assert (found.good, found.bad) == (commits[1], commits[6])
        assert found.candidates == commits[2:]
        assert found.template == "bench.gitwork"
        assert found.args == {"repo": str(repo), "commit": "{commit}"}
        assert found.alert == alert.uuid
        shown = cli("alert", "show", alert.uuid, env=env).stdout
        assert f"bisection {done['uuid']}: caused by {commits[slower_at][:7]}" in shown, shown

        (delivered,) = wait_until(
            lambda: receiver.bodies(), timeout=30, message="the alert.bisected delivery"
        )
        assert delivered["event"] == "alert.bisected"
        assert delivered["alert"]["uuid"] == alert.uuid
        assert delivered["alert"]["bisection"]["uuid"] == done["uuid"]
        assert delivered["alert"]["bisection"]["text"] == done["text"]
