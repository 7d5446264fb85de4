"""A duet job's output -> its verdict: each iteration parsed by the report's adapter, the
rounds paired by side, the ratios estimated (``detection.duet``). Folding does not apply: each
round must stay a round of its own."""

from __future__ import annotations

import logging

from benchrunner import adapters
from benchrunner.core.duet_order import BASELINE, Side, order_text
from benchrunner.detection.duet import METHOD, SeriesKey, estimate_duet
from benchrunner.protocol import JsonDuet, JsonJobOutput
from benchrunner.server.processing.results import iteration_texts, unread_output
from benchrunner.server.store.duets import NewDuet

log = logging.getLogger(__name__)

RoundValues = dict[int, dict[SeriesKey, float]]


def measure_duet(
    adapter: str, output: JsonJobOutput, settings: adapters.Settings, duet: JsonDuet
) -> tuple[NewDuet | None, str | None]:
    """The duet's verdict, or why there is none (an iteration the adapter cannot parse, an
    output without tagged iterations)."""
    tagged = [r for r in output.results if r.side is not None and r.round is not None]
    if not tagged:
        return None, "the duet job produced no iterations tagged with a side"
    sides: dict[Side, RoundValues] = {"baseline": {}, "contender": {}}
    for index, result in enumerate(tagged):
        assert result.side is not None and result.round is not None
        found: list[adapters.Measurement] = []
        for where, text in iteration_texts(result, index):
            try:
                found.extend(adapters.parse(adapter, text, settings))
            except adapters.AdapterError as exc:
                return None, unread_output(adapter, where, text, exc)
            except Exception as exc:  # an adapter bug must not wedge the job in `completed`
                log.exception("adapter %s crashed", adapter)
                return None, f"iteration {index}: adapter {adapter!r} failed: {exc!r}"
        sides[result.side][result.round] = {
            (m.benchmark, m.measure): m.value for m in adapters.kept(found)
        }
    estimates = estimate_duet(
        sides[BASELINE],
        sides["contender"],
        confidence=duet.confidence,
        resamples=duet.resamples,
        seed=duet.seed,
        margin=None,  # judged where it is stored, against each result's own margin
    )
    sequence = order_text([(r.round, r.side) for r in tagged if r.round is not None and r.side])
    verdict = NewDuet(
        seed=duet.seed,
        rounds=len(set(sides[BASELINE]) | set(sides["contender"])),
        sequence=sequence,
        method=METHOD,
        resamples=duet.resamples,
        confidence=duet.confidence,
        margin=duet.margin,
        estimates=estimates,
    )
    return verdict, None
