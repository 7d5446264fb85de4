"""The perf route sends its view as built (``http.answers.sent_as_built``): the view must be
what ``api.perf.Perf`` gives back, field for field and in its order, for every kind of point
(unjudged, judged, alerted, noisy, with samples, drawn by the samples test)."""

from __future__ import annotations

import dataclasses
import json

from benchmarks.perf_answer import measure, resolved

from benchrunner.api.perf import Perf
from benchrunner.core.samples import Samples
from benchrunner.server.routes.perf import perf_view


def _round_trip(view: dict[str, object]) -> str:
    return json.dumps(Perf.model_validate(view).model_dump(mode="json", exclude_unset=True))


ALERT_EVERY = 97


def test_a_judged_and_alerted_series_is_its_model() -> None:
    view = perf_view(resolved(ALERT_EVERY + 1))
    points = view["results"][0]["metrics"]
    assert points[0]["alert"] is not None and points[1]["alert"] is None
    assert _round_trip(view) == json.dumps(view)


def test_unjudged_noisy_points_with_samples_are_their_model() -> None:
    found = resolved(3)
    found.points[0].threshold_uuid = None
    found.points[0].alert_uuid = None
    found.points[1].noisy = 1
    found.points[2].boundary_verdict = "different"
    found.points[2].test = "samples"
    found.points[2].max_pvalue = 0.01
    found.points[2].min_magnitude = 0.02
    samples = {p.metric_id: Samples((1.0, 2.5), 2, 1.0, 2.5) for p in found.points}
    view = perf_view(dataclasses.replace(found, samples=samples))
    first, second, third = view["results"][0]["metrics"]
    assert (first["threshold"], first["boundary"], first["alert"]) == (None, None, None)
    assert second["noisy"] is True and "noisy" not in third
    assert third["boundary"]["verdict"] == "different"
    assert third["samples"] == {
        "values": [1.0, 2.5],
        "count": 2,
        "min": 1.0,
        "max": 2.5,
        "cut": False,
    }
    assert _round_trip(view) == json.dumps(view)


def test_the_benchmark_sends_the_views_bytes_and_prices_validation() -> None:
    figures = measure(points=20, repeats=1)
    assert figures["validated"] > 0 and figures["bytes"] > 0
