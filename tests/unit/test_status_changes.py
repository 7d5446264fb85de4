"""A job's status changes in one place: in the store only ``transitions.transition`` writes the
job table's ``status``, and outside the store only the move module
(``benchrunner.server.moves.move``) calls the store's functions that change it, so that every
move leaves its event, its log line and its notifications (docs/decisions/job-lifecycle.md).
Read from the source's syntax trees, so that a new module is held to it without being named
here."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import benchrunner

SOURCE = Path(benchrunner.__file__).parent
STORE = "benchrunner.server.store"
WRITER = "benchrunner.server.store.transitions"
"""The one module whose statements set a job's status."""
MOVES = "benchrunner.server.moves"
TRANSITION_LOG = "benchrunner.server.logs.transition_log"
LOGGED = frozenset({"job_moved"})
"""The log line and counters of a move, which only the move module writes."""


@dataclass(frozen=True)
class Module:
    name: str
    tree: ast.Module


def _modules() -> Iterator[Module]:
    for path in sorted(SOURCE.rglob("*.py")):
        parts = path.relative_to(SOURCE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield Module(name, ast.parse(path.read_text(), str(path)))


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _is_job_update(node: ast.expr) -> bool:
    """``job.update()`` (or ``tables.job.update()``) somewhere down a call chain."""
    while isinstance(node, ast.Call | ast.Attribute):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "update":
                table = func.value
                named = table.attr if isinstance(table, ast.Attribute) else None
                if isinstance(table, ast.Name):
                    named = table.id
                if named == "job":
                    return True
            node = func
        else:
            node = node.value
    return False


def status_writes(tree: ast.Module) -> list[int]:
    """The lines of ``job.update()...values(status=...)`` statements."""
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "values"
            and any(k.arg == "status" for k in node.keywords)
            and _is_job_update(node.func.value)
        ):
            lines.append(node.lineno)
    return lines


def _called(function: ast.FunctionDef) -> set[str]:
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                names.add(func.id)
            elif isinstance(func, ast.Attribute):
                names.add(func.attr)
    return names


def status_changers(store: list[Module]) -> frozenset[str]:
    """The store's functions that change a job's status: ``transition`` and every function of
    the store that calls one of them."""
    functions = [
        node
        for module in store
        for node in module.tree.body
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
    ]
    changers = {"transition"}
    grown = True
    while grown:
        found = {f.name for f in functions if _called(f) & changers}
        grown = not found <= changers
        changers |= found
    return frozenset(changers)


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` of a chain of names, or None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def uses(tree: ast.Module, package: str, names: frozenset[str]) -> list[str]:
    """Where ``tree`` reaches one of ``names`` of a module of ``package``: imported by name,
    or as an attribute of the module imported."""
    found: list[str] = []
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if _within(node.module, package) and alias.name in names:
                    found.append(f"line {node.lineno}: imports {full}")
                elif _within(full, package):
                    aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _within(alias.name, package):
                    aliases.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in names:
            dotted = _dotted(node.value)
            if dotted is not None and (dotted.split(".")[0] in aliases or _within(dotted, package)):
                found.append(f"line {node.lineno}: calls {node.attr}")
    return found


def test_only_the_store_transition_writes_a_job_status() -> None:
    writes = {
        module.name: lines
        for module in _modules()
        if module.name != WRITER and (lines := status_writes(module.tree))
    }
    assert writes == {}


def test_outside_the_store_only_the_move_module_changes_a_status() -> None:
    modules = list(_modules())
    changers = status_changers([m for m in modules if _within(m.name, STORE)])
    assert {"transition", "job_claim"} <= changers
    found = {
        module.name: where
        for module in modules
        if not _within(module.name, STORE) and not _within(module.name, MOVES)
        if (where := uses(module.tree, STORE, changers))
    }
    assert found == {}


def test_only_the_move_module_logs_a_move() -> None:
    found = {
        module.name: where
        for module in _modules()
        if not _within(module.name, MOVES) and module.name != TRANSITION_LOG
        if (where := uses(module.tree, TRANSITION_LOG, LOGGED))
    }
    assert found == {}


def test_the_checks_find_a_status_changed_by_hand() -> None:
    by_hand = ast.parse(
        "from benchrunner.server.store import transitions\n"
        "from benchrunner.server.store.claims import job_claim\n"
        "import sqlalchemy as sa\n"
        "from benchrunner.server.store.tables import job\n"
        "def fail(conn, job_id, now):\n"
        "    transitions.transition(conn, job_id, 4, now, [])\n"
        "    conn.execute(job.update().where(job.c.id == job_id).values(status=4))\n"
    )
    changers = frozenset({"transition", "job_claim"})
    assert uses(by_hand, STORE, changers) == [
        "line 2: imports benchrunner.server.store.claims.job_claim",
        "line 6: calls transition",
    ]
    assert status_writes(by_hand) == [7]
    logged = ast.parse(
        "from benchrunner.server.logs import transition_log\ntransition_log.job_moved()\n"
    )
    assert uses(logged, TRANSITION_LOG, LOGGED) == ["line 2: calls job_moved"]
