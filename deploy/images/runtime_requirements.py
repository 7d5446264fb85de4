"""Print the entries of requirements.lock that a wheel needs at run time, hashes included.

The lock holds the development closure (the ``dev`` extra: pytest, mypy, playwright, ...); an
image wants only what ``benchrunner`` itself requires. The wheel's ``Requires-Dist`` lines
without an ``extra`` marker are the roots; the lock's ``# via`` notes are the edges (a package
is needed when something needed lists it). Runs on any Python 3.11, standard library only:

    python3 deploy/images/runtime_requirements.py requirements.lock dist/benchrunner-*.whl
"""

from __future__ import annotations

import re
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

_ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==")
_VIA_ONE = re.compile(r"^\s+# via ([A-Za-z0-9][A-Za-z0-9._\[\]-]*)")
_VIA_MANY = re.compile(r"^\s+#   ([A-Za-z0-9][A-Za-z0-9._\[\]-]*)")
_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(text: str) -> tuple[dict[str, str], dict[str, set[str]]]:
    """Each package's entry (its lines) and who needs it (its ``# via`` names)."""
    entries: dict[str, list[str]] = {}
    needed_by: dict[str, set[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        if match := _ENTRY.match(line):
            current = canonical(match.group(1))
            entries[current] = [line]
            needed_by[current] = set()
        elif current is not None and line.startswith("    --hash="):
            entries[current].append(line)
        elif current is not None and (match := _VIA_ONE.match(line) or _VIA_MANY.match(line)):
            needed_by[current].add(canonical(match.group(1).split("[")[0]))
    return {name: "\n".join(lines) for name, lines in entries.items()}, needed_by


def wheel_roots(wheel: Path) -> tuple[str, set[str]]:
    """The wheel's project name and the names it requires outside any extra."""
    with zipfile.ZipFile(wheel) as archive:
        metadata_name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(metadata_name).decode("utf-8"))
    roots = set()
    for requirement in metadata.get_all("Requires-Dist") or []:
        if "extra ==" in requirement.replace('"', "").replace("'", ""):
            continue
        if match := _NAME.match(requirement.strip()):
            roots.add(canonical(match.group(1)))
    return canonical(metadata["Name"]), roots


def runtime_closure(project: str, roots: set[str], needed_by: dict[str, set[str]]) -> list[str]:
    """Packages reachable from ``roots``: a root's own dependencies are the entries whose
    ``# via`` names it. The project itself (``via benchrunner (pyproject.toml)``) is left out
    of the edges, since through it every extra would come in."""
    needs: dict[str, set[str]] = {}
    for package, parents in needed_by.items():
        for parent in parents - {project}:
            needs.setdefault(parent, set()).add(package)
    wanted: set[str] = set()
    todo = sorted(roots)
    while todo:
        package = todo.pop()
        if package in wanted:
            continue
        wanted.add(package)
        todo.extend(sorted(needs.get(package, set()) - wanted))
    return sorted(wanted)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: runtime_requirements.py LOCK WHEEL", file=sys.stderr)
        return 2
    entries, needed_by = read_lock(Path(argv[1]).read_text(encoding="utf-8"))
    project, roots = wheel_roots(Path(argv[2]))
    missing = sorted(roots - entries.keys())
    if missing:
        print(f"{argv[1]}: no entry for {', '.join(missing)}", file=sys.stderr)
        return 1
    for package in runtime_closure(project, roots, needed_by):
        print(entries[package])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
