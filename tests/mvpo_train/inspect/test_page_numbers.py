"""The page's numbers are the estimators' own (docs/inspect.md): what the HTML embeds equals
``get_estimator(name)(batch)``, the trained one with its recorded config and pre-call state."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from mvpo_train.batch import StepBatch
from mvpo_train.credit import available_estimators, get_estimator, register_estimator
from mvpo_train.credit.gigpo import gigpo_parts
from mvpo_train.credit.grpo import GRPO
from mvpo_train.credit.mvpo import hit_names, potential_terms
from mvpo_train.inspect.data import build_inspect_data, loop_flags, parse_estimators
from mvpo_train.inspect.html import render_html
from mvpo_train.records import RecordError, read_batch_record, write_batch_record


def embedded(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="mvpo-data">(.*?)</script>', html, re.S)
    assert m, "no embedded data block"
    return json.loads(m.group(1))


def test_embedded_advantages_equal_the_estimators(recorded, batch):
    rec = read_batch_record(recorded)
    names = available_estimators()
    page = embedded(render_html(build_inspect_data(rec, names)))
    assert page["estimators"] == names and page["trained"] == "mvpo"
    rows = np.asarray(page["row_ids"])
    assert sorted(rows.tolist()) == list(range(len(batch)))
    for name in names:
        if name == "mvpo":  # the trained one: recorded config + pre-call state
            est = get_estimator("mvpo", **rec.estimator_config)
            est.load_state_dict(rec.estimator_state)
            expected, diag = est(batch)
            np.testing.assert_array_equal(expected, rec.advantages)
        else:
            expected, diag = get_estimator(name)(batch)
        np.testing.assert_array_equal(np.asarray(page["adv"][name]), expected[rows], err_msg=name)
        assert page["diag"][name]["zero_credit_ratio"] == diag["zero_credit_ratio"]
    # the trained MVPO is not the fresh one on this batch (its carried state is used)
    assert not np.array_equal(get_estimator("mvpo", gamma=0.9)(batch)[0], rec.advantages)
    d = page["diag"]["mvpo"]
    for key in ("grouping_ratio", "kappa", "amp_weights", "phi_success_mean", "phi_failure_mean"):
        assert key in d
    ema = 0.9 * rec.estimator_state["ema_success"] + 0.1 * float(batch.traj_success.mean())
    assert rec.estimator_state["ema_success"] > 0 and d["kappa"] == pytest.approx(1.0 - ema)


def test_phi_d_regions_and_routing_are_mvpos(recorded, batch):
    rec = read_batch_record(recorded)
    data = build_inspect_data(rec)
    est = rec.make_estimator()
    sb = batch.canonical()
    pot = potential_terms(sb, est.config, est.amp, hit_names(sb, est.amp))
    phi = np.empty(len(batch))
    phi[batch.order] = pot.phi
    d = np.empty(len(batch))
    d[batch.order] = pot.d
    np.testing.assert_array_equal(data.phi, phi)
    np.testing.assert_array_equal(data.d, d)
    parts = gigpo_parts(sb, est.config)
    zc = np.empty(len(batch), dtype=bool)
    zc[batch.order] = parts.zero_credit
    single = np.empty(len(batch), dtype=bool)
    single[batch.order] = parts.size < 2
    assert np.array_equal(data.routing == 1, zc)
    assert np.array_equal(data.routing == 2, single & ~zc)
    assert {0, 1, 2} <= set(data.routing.tolist())
    # region labels: same region <=> same Union-Find root within a group
    root = np.empty(len(batch), dtype=np.int64)
    root[batch.order] = pot.region
    for g in set(batch.group.tolist()):
        m = batch.group == g
        a, b = data.region[m], root[m]
        assert np.array_equal(a[:, None] == a[None, :], b[:, None] == b[None, :])


def test_zero_credit_rows_loops_and_group_filter(recorded, batch):
    rec = read_batch_record(recorded)
    data = build_inspect_data(rec, ["grpo", "mvpo"], groups=[0, 2])
    # group 0 failed everywhere: GRPO gives its rows exactly 0, MVPO repairs some of them
    g0 = sorted(set(batch.traj[batch.group == 0].tolist()))
    assert set(g0) <= set(data.zero_rows("grpo"))
    assert not set(g0) <= set(data.zero_rows("mvpo"))
    page = embedded(render_html(data))
    assert [g["group"] for g in page["groups"]] == [0, 2]
    assert set(page["rows"]["group"]) == {0, 2}
    assert len(page["row_ids"]) == int(np.isin(batch.group, [0, 2]).sum())
    for g in page["groups"]:  # won rows first
        wins = [tr["success"] for tr in g["trajs"]]
        assert wins == sorted(wins, reverse=True)
    with pytest.raises(ValueError, match="no rollout group 9"):
        build_inspect_data(rec, ["grpo"], groups=[9])


def test_loop_flags_follow_the_loop_rule():
    b = StepBatch.from_trajectories(
        [dict(group=0, rewards=[0] * 6, signatures=["a", "b", "c", "b", "d", "d"])]
    )
    loop, revisit = loop_flags(b)
    assert loop.tolist() == [False, True, True, True, True, True]
    assert revisit.tolist() == [False, False, False, True, False, True]


def test_text_cannot_break_out_of_the_page(recorded):
    html = render_html(build_inspect_data(read_batch_record(recorded), ["grpo"]))
    # the anchors hold "</script>" and "<b>&</b>": escaped inside the JSON block
    block = html.split('id="mvpo-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in block and "&" not in block
    assert "ünïcode\\u003c/script\\u003e" in block
    assert "http://" not in html and "https://" not in html  # no network asset


def test_a_tampered_record_is_an_error_not_a_page(tmp_path, batch):
    est = get_estimator("gigpo")
    adv, diag = est(batch)
    p = write_batch_record(tmp_path, 1, batch, estimator=est, advantages=adv + 1e-9)
    with pytest.raises(RecordError, match="differ"):
        build_inspect_data(read_batch_record(p))


def test_custom_estimator_and_custom_abstraction_need_no_code_change(tmp_path, batch, request):
    from mvpo_train.credit.registry import _REGISTRY

    # the registry is process-wide: leave it as found (tests/test_architecture.py lists it)
    request.addfinalizer(lambda: _REGISTRY.pop("inspect_test_half_grpo", None))

    @register_estimator("inspect_test_half_grpo", overwrite=True)
    class HalfGRPO(GRPO):
        name = "inspect_test_half_grpo"

        def compute(self, b):
            adv, diag = super().compute(b)
            return 0.5 * adv, {**diag, "my_stat": 42.0}

    # a custom abstraction is just other signature / milestone strings in the batch
    fields = {f: getattr(batch, f) for f in ("group", "traj", "t", "reward", "terminated",
              "truncated", "anchor", "action", "success")}  # fmt: skip
    sig = np.asarray([f"custom::{s.upper()}" for s in batch.signature], dtype=object)
    ms = [tuple(f"my_{m}" for m in x) for x in batch.milestones]
    b = StepBatch(**fields, signature=sig, milestones=ms)
    est = get_estimator("inspect_test_half_grpo")
    adv, diag = est(b)
    p = write_batch_record(tmp_path, 1, b, estimator=est, advantages=adv, diagnostics=diag)
    rec = read_batch_record(p)
    names = parse_estimators(None, rec.estimator_name)
    assert names == ["grpo", "gigpo", "mvpo", "inspect_test_half_grpo"]
    page = embedded(render_html(build_inspect_data(rec, names)))
    rows = np.asarray(page["row_ids"])
    np.testing.assert_array_equal(np.asarray(page["adv"]["inspect_test_half_grpo"]), adv[rows])
    assert page["diag"]["inspect_test_half_grpo"]["my_stat"] == 42.0
    assert all(s.startswith("custom::") for s in page["tables"]["sig"])
    assert page["tables"]["ms"] and all(m.startswith("my_") for m in page["tables"]["ms"])
    with pytest.raises(ValueError, match="unknown estimator 'nope'"):
        parse_estimators("grpo,nope", None)
