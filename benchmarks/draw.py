"""The program the corpus's runner jobs run (``alert_accuracy_confirmed``): one sample a run.

``draw.py STATE SERIES MEASURES SAMPLES LEVEL CV GAP OUTLIERS COMMIT`` prints one value in
Bencher Metric Format, ``{SERIES: {measure: {"value": v}} for each of MEASURES}``. The first
invocations for a COMMIT print the corpus's own samples (SAMPLES, comma-separated), one each,
so a run's job measures exactly what the corpus holds; every later one (a confirmation's
re-run, or a duet's round) draws a fresh sample of the run's distribution: LEVEL times
``1 + CV * N(0, 1)``, at the upper mode ``LEVEL * (1 + GAP)`` three times in ten, and with a
share OUTLIERS of samples 1.5 to 3 times that. Invocations are counted with one file each
under STATE/COMMIT, made exclusively, so concurrent ones never take the same number. Standard
library only: it starts in milliseconds.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

BIMODAL_UPPER = 0.3
"""The share of a bimodal series' runs at its upper mode (the corpus's, too)."""
DRAW_USAGE_ARGS = 9
"""The arguments ``main`` takes: STATE to COMMIT."""


def invocation(directory: Path) -> int:
    """This invocation's number for the commit: the first free one, taken exclusively."""
    directory.mkdir(parents=True, exist_ok=True)
    number = 0
    while True:
        try:
            os.close(os.open(directory / str(number), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            number += 1
            continue
        return number


def fresh(level: float, cv: float, gap: float, outliers: float) -> float:
    draw = random.SystemRandom()
    if gap and draw.random() < BIMODAL_UPPER:
        level *= 1 + gap
    value = level * (1 + cv * draw.gauss(0.0, 1.0))
    if outliers and draw.random() < outliers:
        value *= draw.uniform(1.5, 3.0)
    return max(value, 1e-3)


def main(argv: list[str]) -> int:
    if len(argv) != DRAW_USAGE_ARGS:
        print(__doc__, file=sys.stderr)
        return 2
    state, series, measures, samples, level, cv, gap, outliers, commit = argv
    given = [float(v) for v in samples.split(",") if v]
    number = invocation(Path(state) / commit)
    value = (
        given[number]
        if number < len(given)
        else fresh(float(level), float(cv), float(gap), float(outliers))
    )
    print(json.dumps({series: {m: {"value": value} for m in measures.split(",")}}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
