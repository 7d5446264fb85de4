"""The history commands through the real CLI and a real server, on both engines: ``threshold``,
``alert``, ``baseline``, ``benchmark``/``branch``/``testbed``/``measure`` and ``perf``, over a
history that ``benchrunner run --results ... --threshold-*`` built, with a regression in it.

One server per engine and one history serve the whole module (a server start and the runs
cost more than the checks). Tests that change state put it back, except the baseline reset,
which checks from whatever alert status it finds.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.databases import ENGINES, fresh_database
from tests.harness import Deployment, cli, deploy

pytestmark = pytest.mark.engine_independent

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
VALUES = (  # (sort, search) latencies: steady, then sort regresses by half
    (100.0, 20.0),
    (102.0, 21.0),
    (98.0, 19.0),
    (150.0, 20.0),
)
SERIES = ("--branch", "main", "--testbed", "ci", "--benchmark", "sort", "--measure", "latency")


@dataclass(frozen=True)
class History:
    env: dict[str, str]
    tmp: Path
    reports: list[dict[str, Any]]

    def cli(self, *args: str, check: bool = True) -> Any:
        return cli(*args, env=self.env, check=check)

    def json(self, *args: str) -> Any:
        return json.loads(self.cli(*args, "--json").stdout)

    @property
    def regressed(self) -> dict[str, Any]:
        return self.reports[-1]


def _run(env: dict[str, str], tmp: Path, index: int, sort: float, search: float) -> Any:
    results = tmp / f"results-{index}.json"
    results.write_text(
        json.dumps({"sort": {"latency": {"value": sort}}, "search": {"latency": {"value": search}}})
    )
    answer = cli(
        "run",
        "--branch",
        "main",
        "--testbed",
        "ci",
        "--hash",
        f"{index + 1:x}" * 40,
        "--adapter",
        "json",
        "--results",
        str(results),
        "--threshold-measure",
        "latency",
        "--threshold-test",
        "percentage",
        "--threshold-upper-boundary",
        "0.1",
        "--json",
        env=env,
    )
    return json.loads(answer.stdout)


@pytest.fixture(scope="module", params=ENGINES)
def history(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[History]:
    tmp = tmp_path_factory.mktemp("cli-resources")
    with fresh_database(str(request.param), tmp) as url, deploy(tmp, url) as deployment:
        env = _env(deployment, tmp)
        reports = [_run(env, tmp, i, *values) for i, values in enumerate(VALUES)]
        yield History(env, tmp, reports)


def _env(deployment: Deployment, tmp: Path) -> dict[str, str]:
    return deployment.cli_env(tmp)


def test_the_history_raised_one_alert(history: History) -> None:
    assert [len(r["alerts"]) for r in history.reports] == [0, 0, 0, 1]
    (alert,) = history.regressed["alerts"]
    assert (alert["benchmark"]["name"], alert["limit"]) == ("sort", "upper")


def test_threshold_list_show_create_update_delete(history: History) -> None:
    (threshold,) = history.json("threshold", "list", "--branch", "main", "--measure", "latency")
    assert threshold["benchmark"] is None
    assert threshold["model"]["test"] == "percentage"
    table = history.cli("threshold", "list").stdout
    assert "percentage: upper 0.1" in table and "all benchmarks" in table

    shown = history.cli("threshold", "show", threshold["uuid"]).stdout
    assert threshold["uuid"] in shown and "Models" in shown and "current" in shown

    create = ("threshold", "create", "--branch", "main", "--testbed", "ci", "--measure", "latency")
    override = history.json(
        *create, "--benchmark", "search", "--test", "static", "--upper-boundary", "30"
    )
    assert override["benchmark"]["name"] == "search"
    assert override["model"]["upper_boundary"] == 30
    assert len(override["models"]) == 1
    listed = history.json("threshold", "list", "--benchmark", "search")
    assert [t["uuid"] for t in listed] == [override["uuid"]]

    again = history.cli(
        *create, "--benchmark", "search", "--test", "static", "--upper-boundary", "1", check=False
    )
    assert again.returncode == 1
    assert again.stderr.startswith("error: ") and "threshold already" in again.stderr

    invalid = history.cli(*create, "--test", "percentage", "--upper-boundary", "-1", check=False)
    assert invalid.returncode == 2, invalid.stderr
    assert "--upper-boundary of percentage must be a fraction" in invalid.stderr

    updated = history.json(
        "threshold", "update", override["uuid"], "--test", "iqr", "--upper-boundary", "3"
    )
    assert [m["test"] for m in updated["models"]] == ["iqr", "static"]
    assert updated["models"][0]["replaced"] is None and updated["models"][1]["replaced"]
    assert updated["model"]["test"] == "iqr"

    deleted = history.json("threshold", "delete", override["uuid"])
    assert deleted == {"uuid": override["uuid"], "deleted": True}
    gone = history.cli("threshold", "show", override["uuid"], check=False)
    assert gone.returncode == 1 and gone.stderr.startswith("error: ")
    assert len(history.json("threshold", "list")) == 1


def test_alert_list_show_dismiss_silence_activate(history: History) -> None:
    report = history.regressed["uuid"]
    (alert,) = history.json("alert", "list", "--report", report, "--benchmark", "sort")
    assert alert["uuid"] == history.regressed["alerts"][0]["uuid"]
    assert history.json("alert", "list", "--benchmark", "search") == []
    table = history.cli("alert", "list").stdout
    assert alert["uuid"] in table and "upper" in table and "150 ns" in table

    shown = history.cli("alert", "show", alert["uuid"]).stdout
    assert "crossed" in shown and "+50.00%" in shown, shown

    for verb, status in (("dismiss", "dismissed"), ("silence", "silenced"), ("activate", "active")):
        assert history.json("alert", verb, alert["uuid"])["status"] == status
        assert [a["uuid"] for a in history.json("alert", "list", "--status", status)] == [
            alert["uuid"]
        ]

    unknown = history.cli("alert", "show", "00000000-0000-4000-8000-000000000000", check=False)
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert unknown.stderr.startswith("error: ") and "alert" in unknown.stderr
    bad_status = history.cli("alert", "list", "--status", "gone", check=False)
    assert bad_status.returncode == 2


def test_dimension_lists_and_ignoring_a_benchmark(history: History) -> None:
    benchmarks = history.json("benchmark", "list")
    assert sorted(b["name"] for b in benchmarks) == ["search", "sort"]
    assert not any(b["ignored"] for b in benchmarks)
    assert [b["name"] for b in history.json("branch", "list")] == ["main"]
    assert [t["name"] for t in history.json("testbed", "list")] == ["ci"]
    (measure,) = history.json("measure", "list")
    assert measure["slug"] == "latency" and "ns" in measure["units"]
    assert "ns" in history.cli("measure", "list").stdout

    ignored = history.json("benchmark", "ignore", "sort")
    assert ignored["ignored"] is True
    table = history.cli("benchmark", "list").stdout
    assert "ignored" in table and "yes" in table
    said = history.cli("benchmark", "unignore", "sort").stdout
    assert "benchmark sort is judged again" in said
    unknown = history.cli("benchmark", "ignore", "nope", check=False)
    assert unknown.returncode == 1 and "nope" in unknown.stderr


def test_perf_as_tables_json_csv_and_png(history: History) -> None:
    found = history.json("perf", *SERIES)
    (series,) = found["results"]
    points = series["metrics"]
    assert [p["metric"]["value"] for p in points] == [v[0] for v in VALUES]
    assert "alert" in points[-1] and "boundary" in points[-1]
    assert [p["version"]["number"] for p in points] == [1, 2, 3, 4]

    table = history.cli("perf", *SERIES).stdout
    assert "sort · Latency (ns) · branch main · testbed ci" in table
    assert "150 ns" in table and "upper" in table and f"4 ({'4' * 7})" in table

    both = history.cli("perf", *SERIES, "--branch", "main", "--benchmark", "search", "--json")
    assert len(json.loads(both.stdout)["results"]) == 2

    rows = list(csv.DictReader(io.StringIO(history.cli("perf", *SERIES, "--csv").stdout)))
    assert [float(r["value"]) for r in rows] == [v[0] for v in VALUES]
    assert rows[-1]["alert"] == "upper"
    to_file = history.tmp / "perf.csv"
    history.cli("perf", *SERIES, "--csv", "--output", str(to_file))
    assert len(to_file.read_text().splitlines()) == len(VALUES) + 1

    image = history.tmp / "perf.png"
    wrote = history.cli("perf", *SERIES, "--image", str(image), "--title", "Sort latency")
    assert image.read_bytes().startswith(PNG_SIGNATURE)
    assert str(image) in wrote.stderr

    empty = history.json("perf", *SERIES, "--start", "2001-01-01", "--end", "2001-01-02")
    assert empty["results"][0]["metrics"] == []
    unknown = history.cli("perf", *SERIES[:6], "--measure", "nope", check=False)
    assert unknown.returncode == 1 and "nope" in unknown.stderr
    clash = history.cli("perf", *SERIES, "--json", "--csv", check=False)
    assert clash.returncode == 2


def test_baseline_reset_dismisses_the_active_alert(history: History) -> None:
    (alert,) = history.json("alert", "list")
    history.cli("alert", "activate", alert["uuid"])
    report = history.regressed["uuid"]
    reset = ("baseline", "reset", "--branch", "main", "--testbed", "ci", "--report", report)
    said = history.cli(*reset, "--measure", "latency").stdout
    assert "measure Latency" in said and "1 alert dismissed" in said, said
    assert history.json("alert", "show", alert["uuid"])["status"] == "dismissed"
    assert history.json(*reset)["dismissed"] == 0
    first = history.reports[0]["uuid"]
    elsewhere = ("baseline", "reset", "--branch", "main", "--testbed", "nope", "--report", first)
    unknown = history.cli(*elsewhere, check=False)
    assert unknown.returncode == 1 and "nope" in unknown.stderr
