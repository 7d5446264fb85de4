"""The server's heap at start-up is out of the garbage collector's sight
(``app.factory.freeze_startup_heap``), and so are the judgment's statistics once the first
judgment loads them (``processing.statistics_heap``): a report's judgment meets no full
collection walking them. A server that never judges never imports them."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import gc, json, sys
from benchrunner.server.app.factory import freeze_startup_heap
from benchrunner.server.processing.statistics_heap import statistics_loaded
freeze_startup_heap()
at_start = {"stats_imported": "scipy.stats" in sys.modules, "frozen": gc.get_freeze_count()}
statistics_loaded()
frozen = gc.get_freeze_count()
import scipy.stats
statistics_loaded()
print(json.dumps({
    "at_start": at_start,
    "stats_tracked": any(o is scipy.stats.__dict__ for o in gc.get_objects()),
    "frozen": frozen,
    "frozen_after_a_second_call": gc.get_freeze_count(),
}))
"""


def test_the_judgments_statistics_are_loaded_by_the_first_judgment_and_frozen() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], check=True, capture_output=True, text=True, timeout=120
    )
    found = json.loads(done.stdout.splitlines()[-1])
    # The server's modules do not import SciPy's statistics themselves.
    assert found["at_start"]["stats_imported"] is False
    assert found["at_start"]["frozen"] > 100_000
    assert found["stats_tracked"] is False
    assert found["frozen"] > found["at_start"]["frozen"] + 20_000
    assert found["frozen_after_a_second_call"] == found["frozen"]
