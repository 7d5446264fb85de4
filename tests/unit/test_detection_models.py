from __future__ import annotations

import math

import pytest

from benchrunner.detection import Model, ModelError, TestKind, parse_test, validate

T = TestKind


@pytest.mark.parametrize(
    "model",
    [
        Model(T.STATIC, lower_boundary=-5.0),
        Model(T.STATIC, upper_boundary=5.0),
        Model(T.STATIC, lower_boundary=3.0, upper_boundary=3.0),
        Model(T.PERCENTAGE, upper_boundary=0.0),
        Model(T.PERCENTAGE, lower_boundary=0.1, upper_boundary=12.5),
        Model(T.PERCENTAGE, min_sample_size=2, max_sample_size=2, upper_boundary=0.1),
        Model(T.Z_SCORE, upper_boundary=0.5),
        Model(T.Z_SCORE, lower_boundary=0.977, upper_boundary=0.9999999999999999),
        Model(T.T_TEST, min_sample_size=5, max_sample_size=64, window=1, upper_boundary=0.99),
        Model(T.LOG_NORMAL, window=2**32 - 1, lower_boundary=0.95),
        Model(T.IQR, upper_boundary=0.0),
        Model(T.IQR, lower_boundary=1.5, upper_boundary=3),
        Model(T.DELTA_IQR, max_sample_size=2**32 - 1, upper_boundary=2.0),
        Model(T.CHANGE_POINT, max_pvalue=1.0, min_magnitude=0.0),
        Model(T.CHANGE_POINT, min_sample_size=10, window=86400, max_pvalue=0.05),
    ],
)
def test_valid_models_pass_unchanged(model: Model) -> None:
    checked = validate(model)
    assert checked.test is model.test
    for name in ("min_sample_size", "max_sample_size", "window", "lower_boundary"):
        assert getattr(checked, name) == getattr(model, name)
    assert checked.upper_boundary == model.upper_boundary


def test_change_point_gets_its_defaults() -> None:
    checked = validate(Model(T.CHANGE_POINT))
    assert (checked.max_pvalue, checked.min_magnitude) == (0.001, 0.0)
    kept = validate(Model(T.CHANGE_POINT, max_pvalue=0.01, min_magnitude=0.05))
    assert (kept.max_pvalue, kept.min_magnitude) == (0.01, 0.05)


def test_a_test_given_by_name_is_parsed() -> None:
    model = Model("t", upper_boundary=0.99)  # type: ignore[arg-type]
    assert validate(model).test is T.T_TEST


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        *((kind.value, kind) for kind in TestKind),
        ("z", T.Z_SCORE),
        ("t", T.T_TEST),
    ],
)
def test_parse_test(name: str, kind: TestKind) -> None:
    assert parse_test(name) is kind


def test_parse_test_names_the_accepted_tests() -> None:
    with pytest.raises(ModelError, match=r"'zscore' is not one of: static, .*delta_iqr.*, z, t"):
        parse_test("zscore")


@pytest.mark.parametrize(
    ("model", "message"),
    [
        # static: the boundaries are the limits, nothing else applies
        (Model(T.STATIC), "static model needs a lower_boundary, an upper_boundary or both"),
        (Model(T.STATIC, lower_boundary=5, upper_boundary=3), r"lower_boundary \(5.0\) .* upper"),
        (Model(T.STATIC, min_sample_size=2, upper_boundary=1), "static model takes no min_sample"),
        (Model(T.STATIC, max_sample_size=2, upper_boundary=1), "static model takes no max_sample"),
        (Model(T.STATIC, window=60, upper_boundary=1), "static model takes no window"),
        (Model(T.STATIC, upper_boundary=math.inf), "upper_boundary must be a finite number"),
        (Model(T.STATIC, lower_boundary=math.nan), "lower_boundary must be a finite number"),
        (Model(T.STATIC, upper_boundary=1, max_pvalue=0.1), "static model takes no max_pvalue"),
        # sample sizes and window, alike for every statistical test
        (Model(T.T_TEST, upper_boundary=0.9), None),
        (Model(T.T_TEST), "the t_test test needs a lower_boundary, an upper_boundary or both"),
        (
            Model(T.T_TEST, min_sample_size=1, upper_boundary=0.9),
            "min_sample_size must be an integer from 2 to 4294967295, got 1",
        ),
        (
            Model(T.IQR, max_sample_size=0, upper_boundary=1),
            "max_sample_size must be an integer from 2 to 4294967295, got 0",
        ),
        (
            Model(T.IQR, max_sample_size=2**32, upper_boundary=1),
            "max_sample_size must be an integer from 2 to 4294967295",
        ),
        (
            Model(T.PERCENTAGE, min_sample_size=10, max_sample_size=5, upper_boundary=0.1),
            r"max_sample_size \(5\) must be greater than or equal to min_sample_size \(10\)",
        ),
        (
            Model(T.PERCENTAGE, window=0, upper_boundary=0.1),
            "window must be an integer from 1 to 4294967295 seconds, got 0",
        ),
        (
            Model(T.PERCENTAGE, window=1.5, upper_boundary=0.1),  # type: ignore[arg-type]
            "window must be an integer",
        ),
        (
            Model(T.PERCENTAGE, min_sample_size=True, upper_boundary=0.1),
            "min_sample_size must be an integer",
        ),
        # boundaries per test
        (
            Model(T.PERCENTAGE, lower_boundary=-0.1),
            "lower_boundary of percentage must be a fraction >= 0",
        ),
        (
            Model(T.Z_SCORE, upper_boundary=0.49),
            r"upper_boundary of z_score must be .* in \[0.5, 1.0\)",
        ),
        (
            Model(T.Z_SCORE, upper_boundary=1.0),
            r"z_score must be .* \(0.977 is two standard deviations\), got 1.0",
        ),
        (Model(T.T_TEST, lower_boundary=0.0), r"lower_boundary of t_test .* got 0.0"),
        (Model(T.LOG_NORMAL, upper_boundary=1.5), r"upper_boundary of log_normal .* \[0.5, 1.0\)"),
        (Model(T.IQR, upper_boundary=-1), "upper_boundary of iqr must be a multiplier"),
        (
            Model(T.DELTA_IQR, lower_boundary=-0.5),
            "lower_boundary of delta_iqr must be a multiplier .* >= 0",
        ),
        (Model(T.IQR, upper_boundary=1, min_magnitude=0.1), "min_magnitude is a parameter of"),
        (Model(T.Z_SCORE, upper_boundary=0.9, max_pvalue=0.1), "max_pvalue is a parameter of"),
        # change_point
        (Model(T.CHANGE_POINT, upper_boundary=0.9), "change_point model takes no upper_boundary"),
        (Model(T.CHANGE_POINT, lower_boundary=0.9), "change_point model takes no lower_boundary"),
        (Model(T.CHANGE_POINT, max_pvalue=0.0), r"max_pvalue must be in \(0, 1\], got 0.0"),
        (Model(T.CHANGE_POINT, max_pvalue=1.01), r"max_pvalue must be in \(0, 1\]"),
        (Model(T.CHANGE_POINT, max_pvalue=math.nan), "max_pvalue must be a finite number"),
        (Model(T.CHANGE_POINT, min_magnitude=-0.1), "min_magnitude must be a relative change >= 0"),
        (
            Model(T.CHANGE_POINT, min_sample_size=1),
            "min_sample_size must be an integer from 2",
        ),
        (Model("bogus", upper_boundary=1), "test 'bogus' is not one of"),  # type: ignore[arg-type]
    ],
)
def test_validation(model: Model, message: str | None) -> None:
    if message is None:
        assert validate(model) == model
        return
    with pytest.raises(ModelError, match=message):
        validate(model)


def test_model_error_is_a_value_error() -> None:
    assert issubclass(ModelError, ValueError)
