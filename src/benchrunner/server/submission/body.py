"""What a ``POST /v0/run`` body (``api.run.RunBody``) says: which mode it asks for, the branch,
hash and testbed it reports to, and its threshold models, each checked into a 400 that names
the field.

| image | template | spec | results | mode                                   |
|-------|----------|------|---------|----------------------------------------|
| -     | -        | -    | set     | direct: parse now into a report        |
| set   | -        | set  | -       | runner: image job                      |
| set   | -        | -    | -       | runner: image job on the fallback spec |
| -     | set      | set  | -       | runner: template job                   |
| -     | -/set    | set  | -       | duet job: + ``baseline``, ``contender``|
| anything else                     | 400 naming the fields                  |

A duet's sides and options are read in ``duet_body``.
Every optional field may be absent or ``null`` (Bencher's CLI writes ``null`` for what it
does not set). ``image`` is a digest or a tag, in any registry form (``core.image_refs``); a
tag is resolved to its digest when the job is created.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from benchrunner.adapters.values import MAX_MEASURE_NAME
from benchrunner.api.run import RunBody, RunJob
from benchrunner.core.image_refs import ImageRef
from benchrunner.core.versions import is_git_hash
from benchrunner.detection.models import Model
from benchrunner.server.http.errors import bad_request
from benchrunner.server.http.model_bodies import checked_model
from benchrunner.server.submission.duet_body import DuetPlan, duet_plan
from benchrunner.server.submission.images import checked_image_ref

MAX_FILE_PATH = 4096
MAX_FILE_PATHS = 255  # Bencher's limit on a job's file_paths


@dataclass(frozen=True)
class RunMode:
    """What a valid body asks for once the validation table has been applied."""

    mode: Literal["direct", "image", "template"]
    image: ImageRef | None
    """An image job's image; an image duet's baseline."""
    spec: str | None
    """None for an image job: the fallback spec."""
    options: RunJob
    duet: DuetPlan | None = None

    @property
    def images(self) -> tuple[ImageRef, ...]:
        """Every image the job runs: its image, or an image duet's two sides."""
        if self.duet is not None and self.duet.images is not None:
            return self.duet.images
        return () if self.image is None else (self.image,)


def file_path_problem(path: str, kind: Literal["image", "template"]) -> str | None:
    """Why ``path`` may not name a file to collect for a job of ``kind``, or None.

    A template job's files are on the runner's host, relative to the job's working directory and
    inside it: an absolute path would read the runner's own files, and ``..`` climbs out. An
    image job's files are in its container's root filesystem, where a path means what it means
    inside the container (Bencher's CLI sends ``--file /tmp/results.json`` as it is): absolute
    paths and ``..`` are the runner's to resolve, confined to that root, refusing per file a
    path or symlink that leads out of it."""
    if not path:
        return "is empty"
    if "\x00" in path:
        return "contains a NUL character"
    if len(path) > MAX_FILE_PATH:
        return f"is longer than {MAX_FILE_PATH} characters"
    if kind == "image":
        return None
    if path.startswith("/"):
        return "is absolute; give a path relative to the job's working directory"
    if ".." in PurePosixPath(path).parts:
        return "climbs out of the job's working directory with '..'"
    return None


def check_file_paths(paths: list[str] | None, kind: Literal["image", "template"]) -> None:
    paths = paths or []
    if len(paths) > MAX_FILE_PATHS:
        raise bad_request(f"job.file_paths has {len(paths)} paths; at most {MAX_FILE_PATHS}")
    for index, path in enumerate(paths):
        problem = file_path_problem(path, kind)
        if problem is not None:
            raise bad_request(f"job.file_paths[{index}] {path!r} {problem}")


def validate_mode(body: RunBody) -> RunMode:
    nested = body.job or RunJob()
    for name in ("image", "spec"):
        top, inner = getattr(body, name), getattr(nested, name)
        if top is not None and inner is not None and top != inner:
            raise bad_request(
                f"{name} is given twice (top level and job.{name}) with different values"
            )
    image = body.image or nested.image
    spec = body.spec or nested.spec
    has_results = bool(body.results)
    duet_given = body.baseline is not None or body.contender is not None
    if body.duet is not None and not duet_given:
        raise bad_request("duet options need a baseline and a contender")
    if body.template is not None:
        if image is not None:
            raise bad_request("template and image are mutually exclusive: give one of them")
        if has_results:
            raise bad_request("cannot provide both results and template")
        if spec is None:
            raise bad_request("spec is required for template execution")
        if nested.env or nested.entrypoint or nested.cmd:
            raise bad_request("job.env, job.entrypoint and job.cmd are not allowed with a template")
        check_file_paths(nested.file_paths, "template")
        duet = duet_plan(
            body.baseline, body.contender, body.duet, template=True, iterations=nested.iter
        )
        return RunMode("template", None, spec, nested, duet)
    if body.args is not None:
        raise bad_request("args are only allowed together with template")
    if duet_given:
        return _image_duet(body, nested, image, spec, has_results)
    if image is not None and has_results:
        raise bad_request("cannot provide both results and image")
    if image is None and spec is not None:
        raise bad_request("image or template is required for runner execution (spec was given)")
    if image is not None:
        ref = checked_image_ref("image", image)
        check_file_paths(nested.file_paths, "image")
        return RunMode("image", ref, spec, nested)
    if not has_results:
        raise bad_request(
            "results are required for direct submission; for runner execution give "
            "image + spec or template + spec"
        )
    if body.job is not None:
        raise bad_request("job options need runner execution (image or template + spec)")
    if body.start_time is None or body.end_time is None:
        raise bad_request("start_time and end_time are required for direct submission")
    if body.start_time > body.end_time:
        raise bad_request("start_time must not be after end_time")
    return RunMode("direct", None, None, nested)


def _image_duet(
    body: RunBody, nested: RunJob, image: str | None, spec: str | None, has_results: bool
) -> RunMode:
    if image is not None:
        raise bad_request(
            "a duet names its images as baseline.image and contender.image, not image"
        )
    if has_results:
        raise bad_request("cannot provide both results and a duet")
    if spec is None:
        raise bad_request("spec is required for a duet")
    duet = duet_plan(
        body.baseline, body.contender, body.duet, template=False, iterations=nested.iter
    )
    assert duet is not None
    assert duet.images is not None
    check_file_paths(nested.file_paths, "image")
    return RunMode("image", duet.images[0], spec, nested, duet)


@dataclass(frozen=True)
class Target:
    """Branch, hash and testbed of a run: the body's, else the context's (Bencher's CLI fills
    ``bencher.dev/v0/branch/ref/name``, ``.../branch/hash`` and ``.../testbed/os``), else
    Bencher's defaults. A context value that is not a valid name or hash is not used."""

    branch: str
    hash: str | None
    testbed: str


CONTEXT_BRANCH = "bencher.dev/v0/branch/ref/name"
CONTEXT_HASH = "bencher.dev/v0/branch/hash"
CONTEXT_TESTBED = "bencher.dev/v0/testbed/os"
DEFAULT_BRANCH = "main"
DEFAULT_TESTBED = "localhost"


def run_target(body: RunBody) -> Target:
    context = body.context or {}

    def named(key: str, longest: int) -> str | None:
        value = context.get(key)
        return value if value and len(value) <= longest else None

    context_hash = context.get(CONTEXT_HASH)
    if context_hash is not None and not is_git_hash(context_hash):
        context_hash = None
    return Target(
        branch=body.branch or named(CONTEXT_BRANCH, 256) or DEFAULT_BRANCH,
        hash=body.hash or (context_hash.lower() if context_hash else None),
        testbed=body.testbed or named(CONTEXT_TESTBED, 64) or DEFAULT_TESTBED,
    )


def threshold_models(body: RunBody) -> dict[str, Model]:
    """The body's threshold models, validated: 400 naming the measure and parameter. A key
    names a measure (created on first use), so it must be a name the store can hold, as a
    result's measure must."""
    if body.thresholds is None or body.thresholds.models is None:
        return {}
    for key in body.thresholds.models:
        if not 1 <= len(key) <= MAX_MEASURE_NAME:
            raise bad_request(
                f"thresholds.models: a measure name must be 1-{MAX_MEASURE_NAME} characters, "
                f"got {len(key)}"
            )
    return {
        key: checked_model(found, f"thresholds.models.{key}")
        for key, found in body.thresholds.models.items()
    }
