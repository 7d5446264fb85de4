"""``Database``'s units are checked where they are called: mypy compares the arguments given to
``write``, ``read`` and their kin with the unit's own signature, and gives back the unit's result
type. The check is mypy itself, run on a snippet of right and wrong call sites; a signature that
let the arguments through untyped (``*args: Any``) would lose the expected errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

from mypy import api

SNIPPET = textwrap.dedent(
    """\
    from typing import assert_type

    from sqlalchemy.engine import Connection

    from benchrunner.server.store.engine import Database


    def unit(conn: Connection, count: int, name: str) -> float:
        return 1.0


    async def calls(db: Database) -> None:
        assert_type(await db.write(unit, 1, "a"), float)
        assert_type(await db.read(unit, count=1, name="a"), float)
        assert_type(db.write_sync(unit, 1, name="a"), float)
        await db.write(unit, "a", 1)  # WRONG arg-type arg-type
        await db.read(unit, 1)  # WRONG call-arg
        await db.write_each(unit, 1, name=2)  # WRONG arg-type
        await db.write_lazy(unit, 1, "a", 3)  # WRONG call-arg
        db.read_sync(unit, 1, "a", colour="red")  # WRONG call-arg
        assert_type(await db.read(unit, 1, "a"), int)  # WRONG assert-type
    """
)


def _expected() -> list[tuple[int, str]]:
    wanted: list[tuple[int, str]] = []
    for number, line in enumerate(SNIPPET.splitlines(), start=1):
        if "# WRONG" in line:
            wanted.extend((number, code) for code in line.split("# WRONG")[1].split())
    return wanted


def _errors(report: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for line in report.splitlines():
        if ": error: " not in line:
            continue
        number = int(line.split(":")[1])
        code = line.rsplit("[", 1)[1].rstrip("]")
        found.append((number, code))
    return found


def test_mypy_checks_each_units_arguments_and_result_at_its_call_site(tmp_path: Path) -> None:
    snippet = tmp_path / "call_sites.py"
    snippet.write_text(SNIPPET)
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nstrict = True\npython_version = 3.11\n")
    report, errors, _status = api.run(
        [
            f"--config-file={config}",
            f"--cache-dir={tmp_path / 'cache'}",
            "--no-error-summary",
            "--show-error-codes",
            str(snippet),
        ]
    )
    assert errors == ""
    assert sorted(_errors(report)) == sorted(_expected()), report
