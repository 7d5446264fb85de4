"""rust_criterion on real Criterion.rs output: a tiny crate built once, offline, with Debian's
cargo, rustc and librust-criterion-dev (crates.io replaced by Debian's registry directory)."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchrunner.adapters import parse

CARGO = Path("/usr/bin/cargo")
RUSTC = Path("/usr/bin/rustc")  # Debian's; a rustup rustc earlier on PATH would not match cargo
REGISTRY = Path("/usr/share/cargo/registry")
SHORT_NAME = "fib 5"
LONG_NAME = "fib 15, a name longer than Criterion's 23-character column"  # printed on its own line
# Filled with the version of the Criterion crate Debian installed.
MANIFEST = """[package]
name = "tiny"
version = "0.1.0"
edition = "2018"

[dev-dependencies]
criterion = "={version}"

[[bench]]
name = "tiny"
harness = false

# A cold build of Criterion and its dependencies is most of the test's time: optimising buys
# nothing for a test that only reads what Criterion prints.
[profile.release]
opt-level = 0
debug = false
incremental = false
codegen-units = 16

[profile.bench]
opt-level = 0
debug = false
incremental = false
codegen-units = 16

# The same settings for build scripts and proc macros, so that the crates they share with
# Criterion (regex, memchr, serde, ...) are compiled once, not once for each.
[profile.bench.build-override]
opt-level = 0
debug = false
incremental = false
codegen-units = 16
"""
CARGO_CONFIG = f"""[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "{REGISTRY}"

[net]
offline = true
"""
# Criterion 0.3's --warm-up-time and --measurement-time take whole seconds: set them in code.
# Unoptimised, Criterion's analysis takes minutes with its default 100,000 bootstrap resamples.
BENCH_SOURCE = f"""use std::time::Duration;

use criterion::{{black_box, criterion_group, criterion_main, Criterion}};

fn fib(n: u64) -> u64 {{
    if n < 2 {{ n }} else {{ fib(n - 1) + fib(n - 2) }}
}}

fn benches(c: &mut Criterion) {{
    c.bench_function({json.dumps(SHORT_NAME)}, |b| b.iter(|| fib(black_box(5))));
    c.bench_function({json.dumps(LONG_NAME)}, |b| b.iter(|| fib(black_box(15))));
}}

criterion_group! {{
    name = group;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_millis(200))
        .nresamples(1000)
        .without_plots();
    targets = benches
}}
criterion_main!(group);
"""
# Criterion prints each number with five significant digits (format::short), so what it printed
# is within half a unit of the last digit, 5e-5 of the number, of what it wrote to JSON.
PRINTED = 5e-5


@dataclass(frozen=True)
class Estimate:
    """One benchmark's estimate, as Criterion wrote it in nanoseconds."""

    value: float
    lower: float
    upper: float


@dataclass(frozen=True)
class Run:
    stdout: str
    estimates: dict[str, Estimate]  # by benchmark name


def installed_criterion() -> str | None:
    """The version of the Criterion crate in Debian's registry (librust-criterion-dev), if any."""
    manifests = sorted(REGISTRY.glob("criterion-[0-9]*/Cargo.toml"))
    return manifests[-1].parent.name.removeprefix("criterion-") if manifests else None


def typical(estimates: dict[str, object]) -> Estimate:
    """The estimate Criterion prints on its ``time:`` line: the slope of the linear regression
    when it sampled linearly, else the mean (``Estimates::typical``)."""
    chosen = estimates.get("slope") or estimates["mean"]
    assert isinstance(chosen, dict)
    interval = chosen["confidence_interval"]
    return Estimate(chosen["point_estimate"], interval["lower_bound"], interval["upper_bound"])


def read_estimates(target: Path) -> dict[str, Estimate]:
    """Each benchmark's estimates from ``<target>/criterion/<name>/new/estimates.json``;
    Criterion cuts a folder's name to 64 bytes (the names here hold no character it would
    replace)."""
    return {
        name: typical(json.loads(path.read_text(encoding="utf-8")))
        for name in (SHORT_NAME, LONG_NAME)
        if (path := target / "criterion" / name[:64] / "new" / "estimates.json").exists()
    }


def build_cache() -> Path:
    """Cargo's target directory, kept between test runs like pip's cache: a cold build of
    Criterion's dependencies takes about two minutes on two cores, a warm one seconds. Cargo
    locks it, and rebuilds whatever changed."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "benchrunner" / "tests" / "criterion-target"


@pytest.fixture(scope="session")
def criterion_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    version = installed_criterion()
    if version is None or not CARGO.exists() or not RUSTC.exists():
        pytest.skip(
            "Debian's cargo and librust-criterion-dev are needed (tools/system-packages.sh)"
        )
    root = tmp_path_factory.mktemp("criterion")
    crate = root / "tiny"
    (crate / "benches").mkdir(parents=True)
    (crate / "src").mkdir()
    (crate / ".cargo").mkdir()
    (crate / "Cargo.toml").write_text(MANIFEST.replace("{version}", version), encoding="utf-8")
    (crate / ".cargo" / "config.toml").write_text(CARGO_CONFIG, encoding="utf-8")
    (crate / "src" / "lib.rs").write_text("", encoding="utf-8")
    (crate / "benches" / "tiny.rs").write_text(BENCH_SOURCE, encoding="utf-8")
    target = build_cache()
    # The caller's cargo settings (target dir, flags, toolchain) must not reach this build.
    environment = {
        name: value for name, value in os.environ.items() if not name.startswith(("CARGO", "RUST"))
    }
    environment |= {
        "CARGO_HOME": str(root / "cargo-home"),
        "CARGO_TARGET_DIR": str(target),
        "RUSTC": str(RUSTC),
        "CARGO_TERM_COLOR": "never",
    }
    done = subprocess.run(
        [str(CARGO), "bench", "--offline"],
        cwd=crate,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return Run(done.stdout, read_estimates(target))


def test_time_lines_read_as_criterion_estimated(criterion_run: Run) -> None:
    stdout = criterion_run.stdout
    assert f"\n{LONG_NAME}\n" in f"\n{stdout}"  # the long name really is on a line of its own
    assert f"\n{SHORT_NAME}" in f"\n{stdout}" and f"\n{SHORT_NAME}\n" not in f"\n{stdout}"
    found = parse("rust_criterion", stdout)
    assert [m.benchmark for m in found] == [SHORT_NAME, LONG_NAME]
    assert set(criterion_run.estimates) == {SHORT_NAME, LONG_NAME}
    for measurement in found:
        written = criterion_run.estimates[measurement.benchmark]
        assert measurement.measure == "latency"
        assert measurement.value == pytest.approx(written.value, rel=PRINTED)
        assert measurement.lower_value == pytest.approx(written.lower, rel=PRINTED)
        assert measurement.upper_value == pytest.approx(written.upper, rel=PRINTED)
        assert measurement.lower_value is not None and measurement.upper_value is not None
        assert 0 < measurement.lower_value <= measurement.value <= measurement.upper_value < 1e9
    short, long = (m.value for m in found)
    assert long > short  # fib(15) makes about 160 times fib(5)'s calls
    assert parse("rust", stdout) == found
    assert parse("magic", stdout) == found
