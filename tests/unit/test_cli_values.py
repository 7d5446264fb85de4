"""Pure parts of the CLI: sizes, template arguments, results files, local set-up values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer

from benchrunner.api.server import TemplateArg
from benchrunner.cli.local_setup import architecture, memory_total
from benchrunner.cli.run_cmds import parse_template_args, read_results
from benchrunner.cli.sizes import format_size, parse_size
from benchrunner.cli.template_cmds import describe_arg
from benchrunner.cli.up import client_url


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("4096", 4096),
        ("1", 1),
        ("2GiB", 2 * 1024**3),
        ("512MiB", 512 * 1024**2),
        ("512 mib", 512 * 1024**2),
        ("10G", 10 * 1000**3),
        ("10GB", 10 * 1000**3),
        ("1.5KiB", 1536),
        ("3k", 3000),
        ("1TiB", 1024**4),
        (" 7b ", 7),
    ],
)
def test_parse_size_accepts(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "G", "2XB", "-1G", "0", "0.1b", "1e9", "2 GiB extra"])
def test_parse_size_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="invalid size"):
        parse_size(text)


def test_parse_size_passes_bytes_through() -> None:
    assert parse_size(1_048_576) == 1_048_576


@pytest.mark.parametrize(
    ("size", "text"),
    [(1, "1 B"), (1536, "1.5 KiB"), (2 * 1024**3, "2 GiB"), (10**10, "9.3 GiB")],
)
def test_format_size(size: int, text: str) -> None:
    assert format_size(size) == text


@pytest.mark.parametrize(
    ("items", "args"),
    [
        ([], {}),
        (["ms=20"], {"ms": "20"}),
        (["label=a=b", "n=1"], {"label": "a=b", "n": "1"}),
        (["empty="], {"empty": ""}),
        (["_x1=true"], {"_x1": "true"}),
    ],
)
def test_template_args_parse(items: list[str], args: dict[str, str]) -> None:
    assert parse_template_args(items) == args


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["ms"], "not name=value"),
        (["=20"], "not name=value"),
        (["1ms=2"], "not name=value"),
        (["m-s=2"], "not name=value"),
        (["ms=1", "ms=2"], "given twice"),
    ],
)
def test_template_args_refuse(items: list[str], message: str) -> None:
    with pytest.raises(typer.BadParameter, match=message):
        parse_template_args(items)


def test_read_results_inline_and_file(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text('{"from": {"file": {"value": 1}}}')
    inline = '  {"inline": {"x": {"value": 2}}}'
    assert read_results([inline, str(path)]) == [inline, path.read_text()]
    missing = tmp_path / "missing.json"
    with pytest.raises(ValueError, match=f"^--results {missing}: no such file") as refused:
        read_results([str(missing)])
    assert "Errno" not in str(refused.value)
    with pytest.raises(ValueError, match=f"^--results {tmp_path}: cannot be read: Is a dir"):
        read_results([str(tmp_path)])


@pytest.mark.parametrize(
    ("machine", "arch"),
    [("x86_64", "x86_64"), ("AMD64", "x86_64"), ("aarch64", "aarch64"), ("arm64", "aarch64")],
)
def test_architecture(machine: str, arch: str) -> None:
    assert architecture(machine) == arch


def test_architecture_refuses_others() -> None:
    with pytest.raises(ValueError, match="unsupported architecture"):
        architecture("riscv64")


def test_memory_total_reads_meminfo(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemFree:  10 kB\nMemTotal:       16384 kB\n")
    assert memory_total(meminfo) == 16384 * 1024


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:8080"),
        ("0.0.0.0", "http://127.0.0.1:8080"),
        ("::", "http://[::1]:8080"),
        ("example.org", "http://example.org:8080"),
    ],
)
def test_client_url(host: str, url: str) -> None:
    assert client_url(host, 8080) == url


@pytest.mark.parametrize(
    ("arg", "text"),
    [
        (
            {"type": "int", "required": False, "min": 0, "max": 60000, "default": 10},
            "x: int 0..60000 = 10",
        ),
        ({"type": "int", "min": 1, "required": True}, "x: int 1..- (required)"),
        (
            {"type": "choice", "required": False, "choices": ["fast", "slow"], "default": "fast"},
            "x: choice fast|slow = fast",
        ),
        ({"type": "bool", "required": False, "default": False}, "x: bool = no"),
    ],
)
def test_template_arguments_are_described_in_one_line(arg: dict[str, Any], text: str) -> None:
    assert describe_arg("x", TemplateArg.model_validate(arg)) == text
