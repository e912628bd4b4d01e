"""The synthetic ALFWorld-like batch of the estimator benchmarks (:mod:`mvpo_train.study.synthetic`)."""

from __future__ import annotations

import numpy as np

from mvpo_train.credit import get_estimator
from mvpo_train.study.synthetic import fresh, process_times, synthetic_batch, time_major


def test_the_same_arguments_give_the_same_batch():
    a, b = synthetic_batch(2, seed=3), synthetic_batch(2, seed=3)
    assert len(a) == 2 * 8 * 50 and a.n_traj == 16
    assert (a.anchor == b.anchor).all() and (a.reward == b.reward).all()
    assert not (synthetic_batch(2, seed=4).anchor == a.anchor).all()
    # a win pays 1.0 on the last step only; every trajectory ends terminated or truncated
    last = a.t == 49
    assert set(a.reward[~last]) == {0.0} and (a.terminated | a.truncated)[last].all()
    assert any(len(m) for m in a.milestones)


def test_fresh_copies_and_the_rollout_order_give_the_same_advantages():
    batch = synthetic_batch(2)
    copy = fresh(batch)
    assert copy.anchor is not batch.anchor and (copy.anchor == batch.anchor).all()
    assert copy.anchor[0] is not batch.anchor[0]  # new string objects, equal text
    shuffled = time_major(batch)
    assert (np.diff(shuffled.t) >= 0).all() and not (np.diff(batch.t) >= 0).all()
    adv, _ = get_estimator("mvpo")(batch)
    adv_t, _ = get_estimator("mvpo")(shuffled)
    order = np.lexsort((batch.traj, batch.t))
    np.testing.assert_allclose(adv_t, adv[order])


def test_process_times_interleaves_rounds_and_times_only_the_call():
    order: list[str] = []

    def setup(name: str):
        order.append(f"setup {name}")
        return lambda: order.append(f"call {name}")

    times = process_times(["a", "b"], setup, repeats=2)
    assert {k: len(v) for k, v in times.items()} == {"a": 2, "b": 2}
    assert all(t >= 0.0 for v in times.values() for t in v)
    assert order == ["setup a", "call a", "setup b", "call b"] * 2
