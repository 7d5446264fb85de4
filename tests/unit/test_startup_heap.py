"""The server's heap at start-up, the judgment's statistics included, is out of the garbage
collector's sight (``app.factory.freeze_startup_heap``), so that a report's judgment meets no
full collection walking them."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import gc, json, sys
from benchrunner.server.app.factory import freeze_startup_heap
before = "scipy.stats" in sys.modules
freeze_startup_heap()
import scipy.stats
print(json.dumps({
    "imported_before": before,
    "stats_tracked": any(o is scipy.stats.__dict__ for o in gc.get_objects()),
    "frozen": gc.get_freeze_count(),
}))
"""


def test_the_judgments_statistics_are_frozen_with_the_startup_heap() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], check=True, capture_output=True, text=True, timeout=120
    )
    found = json.loads(done.stdout.splitlines()[-1])
    # The premise: the server's modules do not import SciPy's statistics themselves.
    assert found["imported_before"] is False
    assert found["stats_tracked"] is False
    assert found["frozen"] > 100_000
