"""The stages MVPO adds to GiGPO, timed alone (:mod:`mvpo_train.study.potential_stages`)."""

from __future__ import annotations

from mvpo_train.study.potential_stages import PREPARED, prepare, stages, time_stages
from mvpo_train.study.synthetic import synthetic_batch


def test_a_prepared_batch_is_a_new_copy_holding_the_inputs_of_every_stage():
    base = synthetic_batch(1)
    b = prepare(base)
    assert b is not base and b.anchor is not base.anchor
    assert all(k in b.__dict__ for k in PREPARED)
    for name, stage in stages().items():  # every stage runs on it
        assert stage(b) is not None, name


def test_every_stage_is_timed():
    times = time_stages(synthetic_batch(1), repeats=1)
    assert list(times) == list(stages()) and all(t > 0 for t in times.values())
