"""Every server start (and every test that starts one) imports the app factory; the statistics
behind thresholds, calibrations and samples are imported when first judged, not then.

SciPy's ``stats`` module alone adds most of a second to each start, which the suite's hundreds
of servers would pay."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.engine_independent

HEAVY = ("scipy.stats", "matplotlib")


def test_the_app_factory_imports_no_statistics_module() -> None:
    probe = (
        "import sys, benchrunner.server.app.factory\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "", f"imported at start: {done.stdout.strip()}"
