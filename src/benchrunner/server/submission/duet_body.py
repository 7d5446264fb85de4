"""A duet's part of a ``POST /v0/run`` body: ``baseline`` and ``contender`` (each an ``image``,
a digest or a tag as the body's ``image`` takes, or a template's ``args``) and the optional
``duet`` options that say how the paired rounds are judged. Checked into a 400 naming the field.

    {"template": "bench.sleep", "spec": "s", "job": {"iter": 20},
     "baseline": {"args": {"ms": 10}}, "contender": {"args": {"ms": 11}},
     "duet": {"margin": 0.005, "confidence": 0.95}}

With a template, each side's ``args`` are laid over the body's ``args`` (which then hold what
both sides share). ``job.iter`` counts rounds (default ``DEFAULT_ROUNDS``, at least 2): each
round runs both sides once.

The duet's threshold is ``duet.margin``, a fraction: an alert is raised for a benchmark and
measure whose confidence interval of the contender/baseline ratio lies wholly above
``1 + margin`` or wholly below ``1 - margin`` (``detection.duet``). Without it, each
benchmark and measure takes its branch/testbed threshold's margins when that threshold's
model is a percentage, else 0 (``store.duets``).
"""

from __future__ import annotations

from dataclasses import dataclass

from benchrunner.api.run import RunDuetOptions, RunDuetSide
from benchrunner.core.image_refs import ImageRef
from benchrunner.server.http.errors import bad_request
from benchrunner.server.submission.images import checked_image_ref

DEFAULT_ROUNDS = 10
MIN_ROUNDS = 2


@dataclass(frozen=True)
class DuetPlan:
    """A valid duet: each side's image (image duets) or arguments (template duets)."""

    baseline: RunDuetSide
    contender: RunDuetSide
    options: RunDuetOptions
    rounds: int
    images: tuple[ImageRef, ImageRef] | None = None
    """An image duet's baseline and contender images, parsed (a tag is resolved to its digest
    when the job is created, as the body's ``image`` is)."""


def duet_plan(
    baseline: RunDuetSide | None,
    contender: RunDuetSide | None,
    options: RunDuetOptions | None,
    *,
    template: bool,
    iterations: int | None,
) -> DuetPlan | None:
    """The body's duet, or None when it names none; 400 for a half or ill-formed duet."""
    if baseline is None and contender is None:
        if options is not None:
            raise bad_request("duet options need a baseline and a contender")
        return None
    if baseline is None or contender is None:
        raise bad_request("a duet needs both baseline and contender")
    images: list[ImageRef] = []
    for name, side in (("baseline", baseline), ("contender", contender)):
        if template:
            if side.image is not None:
                raise bad_request(f"{name}.image is not allowed with a template: give {name}.args")
            if side.args is None:
                raise bad_request(f"{name}.args is required for a template duet")
        else:
            if side.args is not None:
                raise bad_request(f"{name}.args is only allowed with a template")
            if side.image is None:
                raise bad_request(f"{name}.image is required (or give a template and args)")
            images.append(checked_image_ref(f"{name}.image", side.image))
    rounds = DEFAULT_ROUNDS if iterations is None else iterations
    if rounds < MIN_ROUNDS:
        raise bad_request(f"a duet needs job.iter of at least {MIN_ROUNDS} rounds, got {rounds}")
    sides = (images[0], images[1]) if images else None
    return DuetPlan(baseline, contender, options or RunDuetOptions(), rounds, sides)
