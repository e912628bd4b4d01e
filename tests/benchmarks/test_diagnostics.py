"""``benchmarks/diagnostics.py``: the tables are computed right from the runs on disk.

Two tiny synthetic run sets (metrics.jsonl + config.yaml written here) with known values: the
early zero-advantage mean and spread, the phase shares, the Phi sign check, the partial-run
notes and the "not run yet" section; then the WebShop env of the script on the real engine.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from .helpers import load_benchmark


@pytest.fixture(scope="module")
def diag():
    yield load_benchmark("diagnostics", register=True)
    sys.modules.pop("diagnostics", None)


def _write_run(path: Path, rows: list[dict], planned: int, torn: bool = False) -> None:
    path.mkdir(parents=True)
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if torn:
        text += '{"iteration": 99, "succ'  # a line being written
    (path / "metrics.jsonl").write_text(text)
    (path / "config.yaml").write_text(f"iterations: {planned}\nestimator: x\nlr: 0.001\n")


def _row(it: int, zero_adv: float, **extra) -> dict:
    base = {
        "iteration": it,
        "success": 0.1 * it,
        "adv/zero_adv_ratio": zero_adv,
        "adv/zero_credit_ratio": min(1.0, zero_adv + 0.1),
        "time/rollout": 6.0,
        "time/logp_ref": 0.5,
        "time/advantage": 0.5,
        "time/update": 2.0,
        "time/total": 10.0,
    }
    return {**base, **extra}


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    base = tmp_path / "study"
    _write_run(base / "grpo-seed0", [_row(1, 1.0), _row(2, 0.8), _row(3, 0.6)], planned=3)
    # seed 1 asked for 5 iterations and stopped after 3, with a torn 4th line
    _write_run(base / "grpo-seed1", [_row(i, 0.5) for i in (1, 2, 3)], planned=5, torn=True)
    mvpo = [
        _row(1, 0.4, **{"adv/phi_success_mean": 1.0, "adv/phi_failure_mean": 0.0,
                        "adv/kappa": 1.0, "adv/amp_weights/seen": 0.2, "adv/singleton_ratio": 0.25}),
        _row(2, 0.3, **{"adv/phi_success_mean": None, "adv/phi_failure_mean": 0.1,
                        "adv/kappa": 0.8, "adv/amp_weights/seen": 0.3}),
        _row(3, 0.2, **{"adv/phi_success_mean": 0.2, "adv/phi_failure_mean": 0.5,
                        "adv/kappa": 0.6, "adv/amp_weights/seen": 0.4, "adv/singleton_ratio": 0.5,
                        "time/eval": 3.0}),
    ]  # fmt: skip
    _write_run(base / "mvpo-seed0", mvpo, planned=3)
    return base


def test_tables_are_computed_from_the_runs(diag, runs: Path) -> None:
    rs = diag.load_runset("alfworld", runs, ("grpo", "gigpo", "mvpo"), (0, 1))
    s = diag.summarize(rs, early=2)
    za = s["arms"]["grpo"]["adv/zero_adv_ratio"]
    assert za["per_seed"] == {0: pytest.approx(0.9), 1: pytest.approx(0.5)}
    assert za["mean"] == pytest.approx(0.7)
    assert (za["min"], za["max"]) == (pytest.approx(0.5), pytest.approx(0.9))
    assert s["arms"]["grpo"]["zero_adv_first_iteration"] == pytest.approx(0.75)
    # zero-credit = min(1, zero-adv + 0.1): seed 0 (1.0 + 0.9) / 2, seed 1 0.6
    assert s["arms"]["grpo"]["adv/zero_credit_ratio"]["mean"] == pytest.approx(0.775)
    # phases: 6 + 0.5 + 0.5 + 2 of 10 s; 1 s is "other"; no eval timed
    ph = s["arms"]["grpo"]["phases"]
    assert ph["rollout"] == (pytest.approx(6.0), pytest.approx(0.6))
    assert ph["update"] == (pytest.approx(2.0), pytest.approx(0.2))
    assert ph["other"] == (pytest.approx(1.0), pytest.approx(0.1))
    assert "eval" not in ph
    # mvpo evaluated once (3 s, outside time/total): 1 s per iteration of 11 s
    ph = s["arms"]["mvpo"]["phases"]
    assert ph["eval"] == (pytest.approx(1.0), pytest.approx(1 / 11))
    assert ph["rollout"] == (pytest.approx(6.0), pytest.approx(6 / 11))
    assert ph["total"][0] == pytest.approx(11.0)
    # Phi: iteration 2 lacks a successful trajectory; iteration 3 flips
    phi = s["arms"]["mvpo"]["phi"]
    assert phi["iterations_with_both"] == 2
    assert phi["flips"] == [(0, 3)]
    assert phi["gap_mean"] == pytest.approx((1.0 - 0.3) / 2)
    assert s["arms"]["mvpo"]["adv/kappa"] == {"first": 1.0, "last": pytest.approx(0.6)}
    assert s["arms"]["mvpo"]["amp_weights"]["seen"]["last"] == pytest.approx(0.4)
    # step-group grouping ratio = 1 - singleton ratio
    assert s["arms"]["mvpo"][diag.STEP_GROUPING] == {"first": 0.75, "last": 0.5}
    assert diag.STEP_GROUPING not in s["arms"]["grpo"]
    assert "grpo" in s["arms"] and "gigpo" not in s["arms"]
    # partial: grpo seed 1 has 3 of 5 iterations; gigpo has no run; mvpo seed 1 missing
    notes = "\n".join(s["partial"])
    assert "seed 1: 3/5" in notes and "`gigpo`: seeds not found [0, 1]" in notes
    assert "`mvpo`: seeds not found [1]" in notes


def test_a_run_in_progress_counts_where_it_has_iterations(diag, tmp_path: Path) -> None:
    """Early window: a run shorter than k is left out; curves: mean over the seeds that have
    the iteration (the longer run alone past the shorter one's end)."""
    base = tmp_path / "study"
    _write_run(base / "mvpo-seed0", [_row(i, z) for i, z in ((1, 0.2), (2, 0.4), (3, 0.6))], 3)
    _write_run(base / "mvpo-seed1", [_row(1, 0.8)], planned=3)  # still running
    rs = diag.load_runset("alfworld", base, ("mvpo",), (0, 1))
    s = diag.summarize(rs, early=2)
    a = s["arms"]["mvpo"]
    assert s["early"] == 2 and a["early_seeds"] == [0] and a["seeds"] == [0, 1]
    assert a["adv/zero_adv_ratio"]["per_seed"] == {0: pytest.approx(0.3)}
    assert a["zero_adv_first_iteration"] == pytest.approx(0.5)  # both runs have iteration 1
    c = diag.curve(rs.rows("mvpo"), "adv/zero_adv_ratio")
    assert c["mean"].tolist() == pytest.approx([0.5, 0.4, 0.6])
    assert (c["lo"][0], c["hi"][0]) == (pytest.approx(0.2), pytest.approx(0.8))
    assert diag.summarize(rs, early=9)["early"] == 3  # at most the longest run


def test_analyze_only_writes_md_json_and_figure(diag, runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "res" / "diag.md"
    rc = diag.main(
        ["--analyze-only", "--alfworld-base", str(runs), "--alfworld-seeds", "0", "1",
         "--webshop-base", str(tmp_path / "none"), "--early", "2", "--out", str(out)]
    )  # fmt: skip
    assert rc == 0
    md = out.read_text()
    assert "| grpo | 2 of 2 | 3..3 | 0.750 | 0.700 (0.500..0.900; 0.900, 0.500)" in md
    assert "| 0.100 | 0.150 (0.150..0.150; 0.150, 0.150) |" in md  # success: it. 1, first 2
    assert "6.00 (60.0%)" in md
    assert "**flips** in 1 of 2 iterations" in md
    assert "**Partial run set**" in md
    # the planned iterations differ (3 vs 5): said, with the runs of each value
    assert "`iterations` differs between runs: 3 in grpo-seed0, mvpo-seed0; 5 in grpo-seed1" in md
    assert "Settings shared by the runs (their `config.yaml`): `lr` 0.001." in md
    assert md.count("**Not run yet**") == 2  # both WebShop sets
    assert (out.parent / "diag_alfworld.png").stat().st_size > 10_000
    assert not (out.parent / "diag_webshop.png").exists()
    data = json.loads(out.with_suffix(".json").read_text())
    assert data[0]["arms"]["mvpo"]["phi"]["flips"] == [[0, 3]]


def test_instruction_search_webshop_on_the_real_env(diag) -> None:
    import gymnasium as gym

    diag.register_diag_envs()
    env = gym.make(diag.DIAG_WEBSHOP_ID, diag_reward="success")
    _, info = env.reset(seed=0)
    assert info["admissible_actions"] == [f"search[{info['task']}]"]
    _, reward, terminated, _, info = env.step(info["admissible_actions"][0])
    assert not terminated and reward == 0.0
    assert info["state"]["visible_asins"]  # the instruction found products
    assert diag.SEARCH_TEMPLATE not in info["admissible_actions"]
    with pytest.raises(ValueError, match="diag_reward"):
        gym.make(diag.DIAG_WEBSHOP_ID, diag_reward="binary")


def test_success_reward_pays_only_a_won_episode(diag) -> None:
    """The expert's actions replayed: ``success`` pays 1.0 exactly when WebShop's score is 1.0
    (else 0.0), ``original`` pays the score, every earlier step pays 0."""
    import gymnasium as gym

    from mvpo_envs.webshop.expert import expert_episode

    diag.register_diag_envs()
    raw = gym.make("mvpo/WebShop-v0")
    wins = 0
    for task in range(4):
        score, actions = expert_episode(raw, task)
        for mode in ("success", "original"):
            env = gym.make(diag.DIAG_WEBSHOP_ID, diag_reward=mode)
            env.reset(options={"task_index": task})
            rewards = [env.step(a)[1] for a in actions]
            assert rewards[:-1] == [0.0] * (len(actions) - 1)
            expected = (1.0 if score == 1.0 else 0.0) if mode == "success" else score
            assert rewards[-1] == pytest.approx(expected)
        wins += score == 1.0
    assert wins >= 1  # the success branch was exercised


def test_the_sweeps_quick_runs_are_a_marked_preview(diag, runs: Path, tmp_path: Path) -> None:
    """Study incomplete: the ``--quick`` runs are shown too, marked as a preview; study
    complete (or no preview asked): no preview."""
    out = tmp_path / "res" / "diag.md"
    rest = ["--webshop-base", str(tmp_path / "none"), "--out", str(out)]
    # not started
    args = ["--analyze-only", "--alfworld-base", str(tmp_path / "study-not-started"), *rest]
    assert diag.main([*args, "--alfworld-preview", str(runs)]) == 0
    md = out.read_text()
    assert "## alfworld-quick" in md and "**Preview only**" in md
    assert "made by `python benchmarks/learning.py --quick`" in md
    assert "| grpo | 1 of 1 | 3..3 | 1.000 |" in md  # seed 0 only
    assert "### Zero-advantage and zero-credit ratio, first 3 iterations" in md  # 5 > 3 done
    assert md.count("**Not run yet**") == 3  # the study and both WebShop sets
    assert (out.parent / "diag_alfworld-quick.png").is_file()
    # the study incomplete (gigpo and mvpo-learned have no run): the preview stays
    study = ["--analyze-only", "--alfworld-base", str(runs), "--alfworld-seeds", "0", *rest]
    assert diag.main([*study, "--alfworld-preview", str(runs)]) == 0
    assert "**Partial run set**" in out.read_text() and "## alfworld-quick" in out.read_text()
    # the study complete: every arm's seed 0 has its planned iterations: no preview
    done = tmp_path / "done"
    for arm in diag.ALFWORLD_ARMS:
        _write_run(done / f"{arm}-seed0", [_row(1, 0.5), _row(2, 0.5)], planned=2)
    complete = ["--analyze-only", "--alfworld-base", str(done), "--alfworld-seeds", "0", *rest]
    assert diag.main([*complete, "--alfworld-preview", str(runs)]) == 0
    md = out.read_text()
    assert "Complete: every asked seed has its planned iterations." in md
    assert "## alfworld-quick" not in md and "**Preview only**" not in md
    assert not (out.parent / "diag_alfworld-quick.png").exists()  # no figure of a dropped set
    assert diag.main([*args, "--alfworld-preview", ""]) == 0
    md = out.read_text()
    assert "**Preview only**" not in md and md.count("**Not run yet**") == 3


def test_literal_sep_is_read_as_text_and_other_text_is_unchanged(diag) -> None:
    """WebShop's ``" [SEP] "`` observations: the package's encoder reads a literal ``[SEP]`` as
    text, so the script's bridge is not applied (and leaves the tokenizer alone)."""
    from mvpo_train.encoder_policy import SegmentEmbedder

    original = SegmentEmbedder.ids
    emb = SegmentEmbedder.__new__(SegmentEmbedder)
    from transformers import AutoTokenizer

    from mvpo_abstraction.learned import default_embedding_model_path

    emb.tokenizer = AutoTokenizer.from_pretrained(default_embedding_model_path())
    sep = emb.tokenizer.sep_token_id
    alfworld_text = "You arrive at countertop 1. On the countertop 1, you see a mug 2."
    before = original(emb, alfworld_text, 128)
    try:
        ids = original(emb, "Instruction: [SEP] buy a mug", 128)
        assert sep not in ids and len(ids) > len(original(emb, "Instruction: buy a mug", 128))
        assert diag.literal_sep_workaround() is False
        assert SegmentEmbedder.ids is original
        assert SegmentEmbedder.ids(emb, alfworld_text, 128) == before
    finally:
        SegmentEmbedder.ids = original
