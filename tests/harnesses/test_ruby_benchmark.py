"""ruby_benchmark on real reports of Ruby's benchmark library (Debian's ruby): Benchmark.bm,
bmbm and benchmark with totals; the script also writes the times Ruby measured, to compare."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from benchrunner.adapters import AdapterError, Settings, parse

SCRIPT = """
require "benchmark"
require "json"

measured = []
measured += Benchmark.bm(12) do |x|
  x.report("upto:") { 1.upto(20_000) { |i| i * 2 } }
  x.report("two words:") { 20_000.times { |i| i * 2 } }
end
measured += Benchmark.bmbm do |x|
  x.report("sort") { Array.new(2_000) { |i| (i * 7919) % 2_003 }.sort }
end
Benchmark.benchmark(Benchmark::CAPTION, 7, Benchmark::FORMAT, ">total:") do |x|
  a = x.report("each:") { (1..20_000).each { |i| i * 2 } }
  measured << a
  [a]
end
File.write(ARGV[0], JSON.generate(measured.map { |t| [t.label, t.real] }))
"""


@pytest.fixture(scope="session")
def ruby_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[tuple[str, float]]]:
    if shutil.which("ruby") is None:
        pytest.skip("ruby is needed (Debian's ruby, tools/system-packages.sh)")
    folder = tmp_path_factory.mktemp("ruby_benchmark")
    (folder / "bench.rb").write_text(SCRIPT, encoding="utf-8")
    measured = folder / "measured.json"
    done = subprocess.run(
        ["ruby", str(folder / "bench.rb"), str(measured)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    times = [(str(label), float(real)) for label, real in json.loads(measured.read_text())]
    return done.stdout, times


def test_reports_read_as_ruby_measured(ruby_run: tuple[str, list[tuple[str, float]]]) -> None:
    output, measured = ruby_run
    found = parse("ruby_benchmark", output)
    assert [m.benchmark for m in found] == ["upto:", "two words:", "sort", "each:", ">total:"]
    assert "Rehearsal" in output  # bmbm's rehearsal rows are not read, its report is
    by_label = {m.benchmark: m for m in found}
    for label, real in measured:
        measurement = by_label[label]
        assert measurement.measure == "latency"
        assert (measurement.lower_value, measurement.upper_value) == (None, None)
        # Ruby prints the real time with 6 decimals: within half a microsecond of what it measured.
        assert measurement.value == pytest.approx(real * 1e9, abs=500)
    assert by_label[">total:"].value == pytest.approx(by_label["each:"].value, abs=1000)
    assert parse("ruby", output) == found
    assert parse("magic", output) == found
    with pytest.raises(AdapterError, match="cannot be read"):
        parse("ruby_benchmark", output, Settings(average="mean"))
