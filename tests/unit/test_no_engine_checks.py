"""The server asks its engine's ``Capabilities`` what differs between SQLite and PostgreSQL; it
never tests which engine it runs on (``capabilities``). A comparison with an engine's name
(``dialect.name == "postgresql"``, ``get_backend_name() != "sqlite"``) or a look at
``Database.sqlite`` outside the few places that choose the engine fails here: the difference it
needs becomes a field of ``Capabilities``."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import benchrunner.server

SERVER = Path(benchrunner.server.__file__).parent
ENGINE_NAMES = {"sqlite", "postgresql"}

ALLOWED = {
    "store/engine.py": "makes the engines: reads the URL and picks each one's capabilities",
    "store/capabilities.py": "names the engines whose abilities it holds",
    "admin/backup.py": "picks the backup tool from the URL, before any engine is made",
}
ALLOWED_UNDER = {
    "store/migrations/versions/": "a released migration stays as it ran",
}


def engine_checks(source: str) -> list[int]:
    """The lines of ``source`` that test which database engine they run on."""
    found: list[int] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(
                isinstance(operand, ast.Constant) and operand.value in ENGINE_NAMES
                for operand in operands
            ):
                found.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "sqlite":
            found.append(node.lineno)  # ``Database.sqlite``
        elif isinstance(node, ast.Name) and node.id == "is_sqlite":
            found.append(node.lineno)
    return sorted(set(found))


def _allowed(relative: str) -> bool:
    return relative in ALLOWED or any(relative.startswith(under) for under in ALLOWED_UNDER)


def test_no_server_module_tests_which_engine_it_runs_on() -> None:
    offenders = []
    for path in sorted(SERVER.rglob("*.py")):
        relative = path.relative_to(SERVER).as_posix()
        if _allowed(relative):
            continue
        offenders += [f"{relative}:{line}" for line in engine_checks(path.read_text())]
    assert offenders == [], "ask capabilities.of(conn) or db.capabilities instead"


def test_the_allowed_places_exist() -> None:
    for relative in ALLOWED:
        assert (SERVER / relative).is_file(), relative
    for under in ALLOWED_UNDER:
        assert (SERVER / under).is_dir(), under


def test_each_way_of_asking_for_the_engine_is_caught() -> None:
    source = textwrap.dedent(
        """\
        if conn.dialect.name == "postgresql":
            pass
        if "sqlite" != url.get_backend_name():
            pass
        if ctx.db.sqlite:
            pass
        engine = "sqlite" if is_sqlite(url) else "postgresql"
        if capabilities.of(conn).notifies:
            pass
        """
    )
    assert engine_checks(source) == [1, 3, 5, 7]
