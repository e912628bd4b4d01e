"""Estimator registry: built-ins, user registration, clear errors."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from mvpo_train.batch import StepBatch
from mvpo_train.credit import available_estimators, get_estimator, register_estimator
from mvpo_train.credit.common import BaseEstimator
from mvpo_train.credit.registry import _REGISTRY, Estimator

BUILTINS = ["beacon", "ecpo", "gigpo", "grpo", "mvpo", "progpo", "reinforce", "rloo"]


def test_builtins_are_registered_and_follow_the_protocol():
    assert set(BUILTINS) <= set(available_estimators())
    for name in BUILTINS:
        est = get_estimator(name)
        assert isinstance(est, Estimator) and est.name == name
        if name != "mvpo":
            assert est.state_dict() == {}
            est.load_state_dict({})


def test_user_estimator_from_outside_the_package():
    @dataclass(frozen=True)
    class HalfConfig:
        scale: float = 0.5

    @register_estimator("test_half_return")
    class HalfReturn(BaseEstimator):
        name = "test_half_return"
        Config = HalfConfig

        def compute(self, batch):
            return self.config.scale * batch.returns, {"zero_credit_ratio": 0.0}

    try:
        b = StepBatch.from_trajectories([dict(group=0, rewards=[0, 1])])
        adv, diag = get_estimator("test_half_return", scale=2.0)(b)
        np.testing.assert_array_equal(adv, [2.0, 2.0])
        assert diag["zero_adv_ratio"] == 0.0
        with pytest.raises(ValueError, match="already registered"):
            register_estimator("test_half_return", lambda **kw: None)
        register_estimator("test_half_return", HalfReturn, overwrite=True)
        with pytest.raises(TypeError, match="unknown config field"):
            get_estimator("test_half_return", nope=1)
    finally:
        _REGISTRY.pop("test_half_return", None)


def test_plain_function_factory():
    def factory(**config):
        return get_estimator("grpo", **config)

    register_estimator("test_grpo_alias", factory)
    try:
        assert get_estimator("test_grpo_alias", F_norm="1").config.F_norm == "1"
    finally:
        _REGISTRY.pop("test_grpo_alias", None)


def test_unknown_name_lists_available():
    with pytest.raises(KeyError, match="gigpo"):
        get_estimator("nope")


def test_estimators_reject_non_batches():
    with pytest.raises(TypeError, match="StepBatch"):
        get_estimator("grpo")({"reward": [1]})


@pytest.mark.parametrize(
    "kwargs, field",
    [({"gamma": "x"}, "gamma"), ({"eps": True}, "eps"), ({"ddof": 1.5}, "ddof")],
)
def test_a_config_value_of_the_wrong_type_names_the_field(kwargs, field):
    with pytest.raises(TypeError, match=f"config field '{field}' expects"):
        get_estimator("mvpo", **kwargs)
    assert get_estimator("mvpo", omega=2).config.omega == 2  # an int is a valid float


# ------------------------------------------------------------------ value checks (ranges, finiteness)


def _bounded_config():
    import dataclasses as dc

    @dc.dataclass
    class Cfg:
        a: float = dc.field(default=0.5, metadata={"ge": 0.0, "le": 1.0})
        b: float = dc.field(default=1.0, metadata={"gt": 0.0, "lt": 2.0})
        lambda_L: float = 0.5  # a FIELD_BOUNDS name, but not a built-in class: no range

    return Cfg


@pytest.mark.parametrize(
    ("key", "value", "ok"),
    [
        ("a", 0.0, True), ("a", 1.0, True), ("a", -1e-9, False), ("a", 1.0 + 1e-9, False),
        ("b", 1e-9, True), ("b", 0.0, False), ("b", 1.999, True), ("b", 2.0, False),
        ("a", 1, True), ("a", 2, False), ("lambda_L", -5.0, True), ("a", True, True),
    ],
)  # fmt: skip
def test_field_metadata_bounds_are_inclusive_or_strict_as_declared(key, value, ok):
    from mvpo_train.credit.registry import check_config_values

    if ok:
        check_config_values("x", {key: value}, _bounded_config())
    else:
        with pytest.raises(ValueError, match=rf"estimator 'x': config field '{key}' must be"):
            check_config_values("x", {key: value}, _bounded_config())


def test_builtin_fields_use_field_bounds_and_name_the_range():
    """Fields the estimators' own configs leave unchecked get the range of FIELD_BOUNDS."""
    with pytest.raises(ValueError, match=r"estimator 'beacon': config field 'c' must be >= 0"):
        get_estimator("beacon", c=-1.0)
    with pytest.raises(ValueError, match=r"'omega' must be >= 0, got -0.5"):
        get_estimator("beacon", omega=-0.5)
    with pytest.raises(ValueError, match=r"estimator 'rloo': config field 'eps' must be > 0"):
        get_estimator("rloo", eps=0.0)
    get_estimator("beacon", c=0.0, omega=0.0)  # the bounds themselves pass


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), -float("inf"), [1.0, float("nan")], {"k": [float("inf")]},
     (0.1, float("nan"))],
)  # fmt: skip
def test_non_finite_numbers_are_refused_anywhere_in_a_value(value):
    from mvpo_train.credit.registry import check_config_values

    with pytest.raises(ValueError, match=r"config field 'v' must be a finite number"):
        check_config_values("x", {"v": value})


def test_integers_beyond_64_bits_are_refused_before_the_factory():
    from mvpo_train.credit.registry import check_config_values

    check_config_values("x", {"v": 2**63, "w": -(2**63), "t": True})
    with pytest.raises(ValueError, match=r"'v' must be at most 2\*\*63 in size, got a 65-bit"):
        check_config_values("x", {"v": 2**64})
    with pytest.raises(ValueError, match=r"at most 2\*\*63"):
        get_estimator("mvpo", lambda_L=10**400)
