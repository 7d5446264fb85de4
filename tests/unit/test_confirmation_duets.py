"""Which earlier job a confirmation may run a duet against (docs/how-to/thresholds-alerts.md):
the same run but for its template arguments or image digest, and the duet's job config."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

from benchrunner.protocol import JsonJobConfig
from benchrunner.server.processing.confirmation_duets import duet_config, duet_sides, held_margin

PROJECT = uuid.UUID(int=1)


def _template(**args: int | str) -> JsonJobConfig:
    return JsonJobConfig(timeout=30, iter=3, template="bench.sort", args=args)


def _image(digest: str, **more: object) -> JsonJobConfig:
    config = {"timeout": 30, "registry": "r", "project": PROJECT, "digest": digest, **more}
    return JsonJobConfig.model_validate(config)


def test_a_duet_pairs_the_arguments_or_images_that_differ() -> None:
    sides = duet_sides(_template(commit="b", n=5), _template(commit="a", n=5))
    assert sides is not None
    assert (sides[0].args, sides[1].args) == ({"commit": "a", "n": 5}, {"commit": "b", "n": 5})
    sides = duet_sides(_image("sha256:b"), _image("sha256:a"))
    assert sides is not None and (sides[0].digest, sides[1].digest) == ("sha256:a", "sha256:b")


def test_nothing_to_pair_when_the_runs_are_alike_or_of_another_kind() -> None:
    assert duet_sides(_template(commit="a"), _template(commit="a")) is None  # the same version
    assert duet_sides(_image("sha256:a"), _image("sha256:a")) is None
    assert duet_sides(_template(commit="a"), _image("sha256:a")) is None
    other = JsonJobConfig(timeout=30, template="bench.other", args={"commit": "a"})
    assert duet_sides(_template(commit="b"), other) is None
    assert duet_sides(_image("sha256:b", env={"X": "1"}), _image("sha256:a")) is None
    longer = JsonJobConfig(timeout=60, iter=3, template="bench.sort", args={"commit": "a"})
    assert duet_sides(_template(commit="b"), longer) is None


def test_the_duets_config_runs_five_rounds_per_run_from_the_baselines_side() -> None:
    config = duet_config(_template(commit="b"), _template(commit="a"), 2, 0.1)
    assert config is not None and config.duet is not None
    assert (config.iter, config.args, config.duet.margin) == (10, {"commit": "a"}, 0.1)
    assert config.duet.contender.args == {"commit": "b"}
    assert duet_config(_template(commit="a"), _template(commit="a"), 2, 0.1) is None


def _held(upper: float | None, test: str = "percentage") -> SimpleNamespace:
    return SimpleNamespace(
        limit="upper", test=test, lower_boundary=None, upper_boundary=upper, min_magnitude=None
    )


def test_one_duet_takes_the_smallest_margin_and_none_of_a_boundary_past_a_duets() -> None:
    assert held_margin([_held(0.1), _held(0.05)]) == 0.05
    assert held_margin([_held(None, test="t_test")]) == 0.02  # no percentage: the default
    # A duet's margin is below 1: a 100 % boundary is confirmed by plain re-runs instead.
    assert held_margin([_held(1.0)]) is None
    assert held_margin([_held(1.0), _held(0.1)]) == 0.1
