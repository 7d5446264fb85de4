"""Which ``job.file_paths`` a run body may name: a template job's files are on the runner's
host, inside the job's working directory; an image job's are in its container's root, where the
runner resolves them (``runner/confined.py``), so only what no path can be is refused here."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from benchrunner.api.run import RunBody
from benchrunner.server.http.errors import ApiError
from benchrunner.server.submission.body import (
    MAX_FILE_PATH,
    MAX_FILE_PATHS,
    file_path_problem,
    validate_mode,
)

Kind = Literal["image", "template"]

# path -> (problem for a template job, problem for an image job); None: accepted
RULES: list[tuple[str, str | None, str | None]] = [
    ("results.json", None, None),
    ("out/./results.json", None, None),
    ("./out/x..y", None, None),
    ("/tmp/results.json", "is absolute", None),
    ("/proc/self/environ", "is absolute", None),
    ("../results.json", "climbs out", None),
    ("out/../../results.json", "climbs out", None),
    ("..", "climbs out", None),
    ("", "is empty", "is empty"),
    ("out\x00.json", "NUL", "NUL"),
    ("/" + "a" * MAX_FILE_PATH, "is longer than", "is longer than"),
]


@pytest.mark.parametrize(("path", "template", "image"), RULES)
def test_each_kind_refuses_what_it_cannot_read(
    path: str, template: str | None, image: str | None
) -> None:
    expectations: tuple[tuple[Kind, str | None], ...] = (("template", template), ("image", image))
    for kind, expected in expectations:
        problem = file_path_problem(path, kind)
        if expected is None:
            assert problem is None, (kind, path)
        else:
            assert problem is not None and expected in problem, (kind, path, problem)


def _body(kind: Kind, paths: list[str], *, duet: bool = False) -> RunBody:
    body: dict[str, Any] = {"spec": "small", "job": {"file_paths": paths}}
    if kind == "template":
        body["template"] = "bench.noop"
    side: dict[str, Any] = {"args": {}} if kind == "template" else {"image": "bench:v2"}
    if duet:
        body.update(baseline=side, contender=side)
    elif kind == "image":
        body["image"] = "bench:v1"
    return RunBody.model_validate(body)


@pytest.mark.parametrize(
    ("kind", "duet"), [("template", False), ("image", False), ("template", True), ("image", True)]
)
def test_a_body_is_judged_by_its_kind_duets_included(kind: Kind, duet: bool) -> None:
    body = _body(kind, ["/tmp/results.json"], duet=duet)
    if kind == "image":
        assert validate_mode(body).options.file_paths == ["/tmp/results.json"]
        return
    with pytest.raises(ApiError) as refused:
        validate_mode(body)
    assert refused.value.status == 400
    assert refused.value.message == (
        "job.file_paths[0] '/tmp/results.json' is absolute; give a path relative to the job's "
        "working directory"
    )


@pytest.mark.parametrize("kind", ["template", "image"])
def test_more_paths_than_bencher_takes_are_a_400(kind: Kind) -> None:
    assert validate_mode(_body(kind, ["r.json"] * MAX_FILE_PATHS)).mode == kind
    with pytest.raises(ApiError) as refused:
        validate_mode(_body(kind, ["r.json"] * (MAX_FILE_PATHS + 1)))
    assert refused.value.message == (
        f"job.file_paths has {MAX_FILE_PATHS + 1} paths; at most {MAX_FILE_PATHS}"
    )
