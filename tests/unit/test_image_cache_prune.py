"""deploy/images/prune.sh: what build.sh removes from its cache when a layer's key changes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.harness import REPO

SCRIPT = REPO / "deploy" / "images" / "prune.sh"


def prune(cache: Path, pattern: str, keep: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), str(cache), pattern, keep], capture_output=True, text=True, check=False
    )


def filled(cache: Path) -> None:
    cache.mkdir()
    for name in ("venv-old.tar", "venv-new.tar", "debian-server-old.tar"):
        (cache / name).write_bytes(b"layer")
    for name in ("layout-venv-old", "layout-venv-new"):
        (cache / name / "blobs").mkdir(parents=True)
        (cache / name / "index.json").write_text("{}")


PRUNED = ["debian-server-old.tar", "layout-venv-new", "venv-new.tar"]
"""What ``filled`` leaves once its tars and its layouts of the venv are pruned."""


def prune_venv_entries(cache: Path) -> None:
    assert prune(cache, "venv-*.tar", "venv-new.tar").returncode == 0
    assert prune(cache, "layout-venv-*", "layout-venv-new").returncode == 0


def test_only_the_kind_named_loses_its_older_entries(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    filled(cache)
    prune_venv_entries(cache)
    assert sorted(path.name for path in cache.iterdir()) == PRUNED


def test_a_cache_reached_through_a_symbolic_link_is_pruned(tmp_path: Path) -> None:
    """A cache moved elsewhere and linked back (``~/.cache/benchrunner-images`` pointing to a
    larger disk, as the test suite links it to its own) is pruned where it really is."""
    real = tmp_path / "disk" / "images"
    real.parent.mkdir()
    filled(real)
    link = tmp_path / "benchrunner-images"
    link.symlink_to(real)
    prune_venv_entries(link)
    assert sorted(path.name for path in real.iterdir()) == PRUNED
    assert link.is_symlink()


def test_wrong_usage_is_named() -> None:
    done = subprocess.run([str(SCRIPT)], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "usage: prune.sh CACHE PATTERN KEEP" in done.stderr
