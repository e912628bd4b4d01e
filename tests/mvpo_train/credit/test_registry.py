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
