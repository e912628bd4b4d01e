"""Config validation bounds (docs/training.md "Reliability", docs/estimators.md §0 and §3).

The registry's range check (``FIELD_BOUNDS``) and the ``Config`` dataclasses' own checks are
two layers: each is tested alone here, so neither can hide a wrong bound of the other.
"""

from __future__ import annotations

import dataclasses

import pytest

from mvpo_train.credit import get_estimator, register_estimator
from mvpo_train.credit.common import StepConfig
from mvpo_train.credit.gigpo import GiGPO
from mvpo_train.credit.mvpo import MVPO
from mvpo_train.credit.registry import _REGISTRY, FIELD_BOUNDS, check_config_values


def _bounded_builtin_fields() -> list[tuple[str, type, str, dict[str, float]]]:
    """``(estimator, Config, field, bounds)`` for every built-in field that FIELD_BOUNDS covers."""
    get_estimator("grpo")  # loads the built-ins
    out = []
    for name in sorted(_REGISTRY):
        cls = getattr(_REGISTRY[name], "Config", None)
        if not dataclasses.is_dataclass(cls) or not cls.__module__.startswith("mvpo_train.credit."):
            continue
        for f in dataclasses.fields(cls):
            if f.name in FIELD_BOUNDS and not set(f.metadata) & {"gt", "ge", "lt", "le"}:
                out.append((name, cls, f.name, FIELD_BOUNDS[f.name]))
    return out


FIELDS = _bounded_builtin_fields()


def test_the_documented_ranges_cover_the_builtin_fields():
    covered = {field for _, _, field, _ in FIELDS}
    unit = {"gamma", "gamma_m", "gamma_phi", "gamma_ms", "beta", "eta", "w_min", "kappa_min"}
    assert (
        unit | {"omega", "c_succ", "lambda_L", "k", "c", "eps", "similarity_threshold"} <= covered
    )


@pytest.mark.parametrize(("est", "cls", "field", "bounds"), FIELDS, ids=lambda x: str(x))
def test_field_bounds_refuse_values_outside_the_documented_range(est, cls, field, bounds):
    """[0, 1] for discounts and steps, (0, 1] for the similarity, > 0 for eps, >= 0 for weights:
    the registry check alone (without the Config's own checks) refuses a value outside."""
    outside = []
    for op, b in bounds.items():
        if op in ("ge", "le"):
            check_config_values(est, {field: b}, cls)  # an inclusive bound passes
        outside.append({"ge": b - 0.5, "gt": b, "le": b + 0.5, "lt": b}[op])
    for value in outside:
        with pytest.raises(
            ValueError, match=rf"^estimator '{est}': config field '{field}' must be"
        ):
            check_config_values(est, {field: value}, cls)


def test_unit_interval_message_names_both_bounds():
    with pytest.raises(ValueError, match=r"'gamma' must be >= 0 and <= 1, got 1.5$"):
        check_config_values("gigpo", {"gamma": 1.5}, StepConfig)
    with pytest.raises(ValueError, match=r"'similarity_threshold' must be > 0 and <= 1, got 1.5$"):
        check_config_values("gigpo", {"similarity_threshold": 1.5}, StepConfig)


def test_configs_check_the_unit_interval_without_the_registry():
    """An estimator built directly (not through get_estimator) still refuses a discount outside
    [0, 1]: BaseConfig's own check, FIELD_BOUNDS does not run there."""
    for cls in (GiGPO, MVPO):
        for bad in (1.5, -0.5):
            with pytest.raises(ValueError, match=rf"gamma must be in \[0, 1\], got {bad}"):
                cls(gamma=bad)
    assert GiGPO(gamma=1.0).config.gamma == 1.0 and GiGPO(gamma=0.0).config.gamma == 0.0
    with pytest.raises(ValueError, match=r"gamma must be in \[0, 1\]"):
        StepConfig(gamma=1.0 + 1e-9)


def test_mvpo_weight_floor_may_reach_uniform_weights():
    """``w_min * M <= 1``: at equality every AMP weight is the floor 1/M, which is allowed."""
    names = ("a", "b", "c", "d")
    assert get_estimator("mvpo", w_min=0.25, milestone_names=names).config.w_min == 0.25
    assert get_estimator("mvpo", w_min=0.5, milestone_names=names[:2]).config.w_min == 0.5
    with pytest.raises(ValueError, match=r"w_min \* len\(milestone_names\) must be <= 1"):
        get_estimator("mvpo", w_min=0.26, milestone_names=names)


@pytest.mark.parametrize("name", ["", 3, None])
def test_register_estimator_refuses_an_empty_or_non_string_name(name):
    with pytest.raises(ValueError, match=r"^register_estimator: name must be a non-empty str$"):
        register_estimator(name, lambda **kw: None)
    assert name not in _REGISTRY


def test_self_referencing_values_are_checked_without_recursion_error():
    """A YAML anchor can make a value that contains itself: the finiteness check stops at a
    bounded depth instead of recursing forever, and still finds a NaN near the top."""
    d: dict = {}
    d["self"] = d
    lst: list = []
    lst.append(lst)
    check_config_values("x", {"d": d, "l": lst, "t": (lst, d)})
    bad: dict = {"x": float("nan")}
    bad["self"] = bad
    with pytest.raises(ValueError, match=r"config field 'v' must be a finite number, got nan"):
        check_config_values("x", {"v": bad})
