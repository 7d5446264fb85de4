"""``benchmarks/draw.py``, the corpus's runner program: a run's first invocations print the
corpus's samples, later ones (re-runs, duet rounds) fresh draws of the run's distribution."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.draw import DRAW_USAGE_ARGS

DRAW = Path(__file__).parents[2] / "benchmarks" / "draw.py"


def _draw(state: Path, samples: str, commit: str = "c1", level: float = 1000.0) -> float:
    args = [str(state), "s", "ma,mb", samples, str(level), "0.01", "0", "0", commit]
    assert len(args) == DRAW_USAGE_ARGS
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(DRAW), *args], capture_output=True, text=True, check=True
    )
    printed = json.loads(done.stdout)
    assert set(printed["s"]) == {"ma", "mb"}
    assert printed["s"]["ma"]["value"] == printed["s"]["mb"]["value"]
    return float(printed["s"]["ma"]["value"])


def test_the_first_invocations_print_the_corpus_and_later_ones_draw_afresh(
    tmp_path: Path,
) -> None:
    given = [1001.5, 998.25, 1003.0]
    samples = ",".join(repr(v) for v in given)
    assert [_draw(tmp_path, samples) for _ in given] == given
    fresh = [_draw(tmp_path, samples, level=2000.0) for _ in range(3)]
    assert all(1800 < v < 2200 for v in fresh), fresh  # the level given, 1 % noise
    assert len(set(fresh)) == 3
    # another commit counts its own invocations
    assert _draw(tmp_path, samples, commit="c2") == given[0]


def test_wrong_arguments_print_the_usage(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(DRAW), str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and "draw.py STATE" in done.stderr
