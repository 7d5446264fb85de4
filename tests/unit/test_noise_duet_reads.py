"""What the console reads of noise and duets, on both engines: the reports page lists each report's
noise verdict and a duet report's ratio count; the perf read marks the points of noisy reports;
the duet read gives a series' ratios apart from its absolute points."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from benchrunner.core.tiers import Plan
from benchrunner.detection.duet import METHOD, DuetEstimate
from benchrunner.protocol import NoiseCalibration, NoiseGuard
from benchrunner.server.processing.noise import noise_view, stored_verdict, verdict
from benchrunner.server.store import accounts, duets, reports
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.perf import NOISY_VERDICT, PerfQuery, perf_plot_points
from benchrunner.server.store.report_reads import ReportFilter, report_page
from tests.databases import with_schema
from tests.new_reports import new_report_on

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
NOISY = verdict(
    NoiseGuard(
        before=NoiseCalibration(rounds=32, median_ns=40_000, cv=0.041),
        after=NoiseCalibration(rounds=32, median_ns=40_400, cv=0.01),
        drift=0.01,
    ),
    0.02,
    None,
)
QUIET = verdict(
    NoiseGuard(before=NoiseCalibration(rounds=32, median_ns=40_000, cv=0.004)), None, None
)


def test_a_stored_verdict_reads_back_with_its_reasons() -> None:
    assert NOISY is not None and QUIET is not None
    stored = NOISY.stored()
    assert NOISY_VERDICT in stored  # what the perf read matches in SQL
    assert NOISY_VERDICT not in QUIET.stored()
    again = stored_verdict(noise_view(stored))
    assert again is not None and again.noisy
    assert again.reasons == NOISY.reasons == ["cv 4.1% > limit 2.0%"]
    assert stored_verdict(None) is None
    assert stored_verdict({"verdict": "noisy"}) is None  # not this server's JSON


def test_reports_perf_and_duet_reads(database_url: str) -> None:
    assert NOISY is not None and QUIET is not None
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        with engine.begin() as conn:
            leader = accounts.user_get_or_create(conn, "n@x", "n", admin=False, now=T0).id
            org = accounts.organization_create(conn, "org", Plan.TEAM, T0, leader_id=leader)
            project = accounts.project_create(conn, org.id, "p", "public", T0).id
            made = {}
            for day, (name, noise) in enumerate(
                [("plain", None), ("quiet", QUIET), ("noisy", NOISY)]
            ):
                at = T0 + dt.timedelta(days=day)
                new = new_report_on(conn, project, "main", "box", "json", at)
                report_id, made[name] = reports.report_create(conn, new)
                values = [reports.MetricValue(0, "sort", "latency", 100.0 + day, None, None)]
                stored = reports.metrics_add(conn, report_id, project, values, at)
                noise_json = None if noise is None else noise.stored()
                reports.FINISH_AFTER_MOVE.alone.first(
                    conn,
                    reports.finish_params(
                        report_id, start_time=at, end_time=at, error=None, noise=noise_json
                    ),
                )
            at = T0 + dt.timedelta(days=3)
            duet_report, made["duet"] = reports.report_create(
                conn, new_report_on(conn, project, "main", "box", "json", at)
            )
            estimates = [
                DuetEstimate("sort", "latency", 8, 1.1, 1.05, 1.15, "upper"),
                DuetEstimate("hash", "latency", 8, 1.0, 0.98, 1.02, None),
            ]
            verdict_found = duets.NewDuet(42, 8, "AB BA", METHOD, 2000, 0.95, 0.02, estimates)
            duets.duet_add(conn, duet_report, project, verdict_found, at)

            listed, _ = report_page(conn, project, ReportFilter(), limit=10, offset=0)
            query = PerfQuery(
                branch_ids=[new.branch_id],
                testbed_ids=[new.testbed_id],
                benchmark_ids=[stored[0].benchmark_id],
                measure_ids=[stored[0].measure_id],
                start_time=T0,
                end_time=T0 + dt.timedelta(days=30),
            )
            points = perf_plot_points(conn, query)
            ratios = duets.duet_points(conn, query)
            up_to_it = duets.duet_points(conn, replace(query, end_time=at))
            before_it = duets.duet_points(conn, replace(query, end_time=at - dt.timedelta(1)))
    finally:
        engine.dispose()
    by_uuid = {row.uuid: row for row in listed}
    assert [by_uuid[made[n]].duet_results for n in ("plain", "quiet", "noisy", "duet")] == [
        None, None, None, 2,
    ]  # fmt: skip
    assert by_uuid[made["duet"]].metrics == 0
    assert by_uuid[made["plain"]].noise is None
    assert stored_verdict(noise_view(by_uuid[made["noisy"]].noise)) == NOISY
    # The absolute points: only the noisy report's marked; no duet ratio among them.
    assert [(p.value, p.noisy) for p in points] == [(100.0, False), (101.0, False), (102.0, True)]
    # The duet's ratio of the chosen benchmark only, in the time range.
    [ratio] = ratios
    assert (ratio.report_uuid, ratio.ratio, ratio.lower_value, ratio.limit) == (
        made["duet"], 1.1, 1.05, "upper",
    )  # fmt: skip
    assert (ratio.rounds, ratio.upper_value) == (8, 1.15)
    assert up_to_it == ratios and before_it == []
