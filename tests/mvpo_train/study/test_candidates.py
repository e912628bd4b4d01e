""":mod:`mvpo_train.study.candidates`: a candidate's trainer config and history length, and the
score-mode timing of the tiny LM."""

from __future__ import annotations

from mvpo_train.score_timing import SCORERS
from mvpo_train.study.candidates import Bench


def test_a_candidates_config_and_history() -> None:
    bench = Bench("mvpo/ALFWorld-v0", {"num_games": "full"}, history_length=2, threads=1)
    cfg = bench.config("encoder", seed=3, history_length=bench.history_of("encoder:0:4:concat"))
    assert (cfg.policy, cfg.seed, cfg.history_length, cfg.max_steps) == ("encoder", 3, 4, 50)
    assert cfg.env_kwargs == {"num_games": "full"} and cfg.eval_greedy is False
    assert bench.history_of("lm") == 2 and bench.history_of("encoder:20") == 2
    assert bench.history_of("encoder:0:4") == 2  # the default pool, last_action: the builder's
    assert bench.config("lm").policy != "encoder"


def test_scoring_times_every_scorer_both_ways(capsys) -> None:
    rows = Bench("mvpo/ALFWorld-v0", threads=1).scoring([8], batch=2, repeats=1, seed=0)
    assert [r["prompt_tokens"] for r in rows] == [8]
    for name in SCORERS:
        for kind in ("forward", "forward+backward"):
            assert rows[0][f"{name} {kind}"] > 0
    assert '"prompt_tokens": 8' in capsys.readouterr().out


def test_the_tables_of_the_measurements() -> None:
    from mvpo_train.study.candidates import iteration_lines, layout_lines, learning_lines

    layout = {"layout": "2:concat", "params": 10, "fit_loss": 0.5, "held_top1": 0.25,
              "held_prob": 0.2, "held_nll": 1.5, "held_steps": 40, "seconds": 3.0}  # fmt: skip
    lines = layout_lines([layout], 200, 0.05)
    assert "95% of the train games, scored on the other 5% (40 expert steps" in lines[0]
    assert lines[-1] == "| 2:concat | 10 | 0.500 | 0.250 | 0.200 | 1.500 | 3 |"
    it = {"candidate": "lm", "steps": 12, "time/rollout": 1.0, "time/total": 2.0}
    assert iteration_lines([it])[-1] == "| lm | 12 | 1.0 | 0.0 | 0.00 | 0.0 | 2.0 |"
    learn = [{"iteration": 0, "train_success": None, "valid_unseen": 0.5},
             {"iteration": 1, "train_success": 0.25, "valid_unseen": None, "seconds": 9.0}]  # fmt: skip
    assert learning_lines(learn, "encoder:2", 8, 2)[-2:] == [
        "| 0 |  | 0.500 |  |",
        "| 1 | 0.250 |  | 9 |",
    ]


def test_the_success_table_gives_wilson_intervals_per_split() -> None:
    from mvpo_train.study.candidates import success_lines

    row = {"candidate": "encoder:0", "warm_start_s": 1.0, "train/success": 0.5,
           "train/episodes": 10, "train/steps_per_s": 3.0}  # fmt: skip
    lines = success_lines([row], ["train", "valid_unseen"])
    assert lines[0].startswith("| candidate | warm start s | train success | valid_unseen success")
    assert (
        lines[2].startswith("| encoder:0 | 1.0 | 0.500 [0.2")
        and "(10 ep) |  | 3.0 |  |" in lines[2]
    )


def test_the_page_and_the_scoring_section_are_written_and_replaced_in_place(tmp_path) -> None:
    from argparse import Namespace

    from mvpo_train.study.candidates import write_page, write_scoring

    args = Namespace(section="", train_tasks=0, seed=0, episodes=2, threads=1, env_kwargs={},
                     splits=["train"], layouts=[], score_batch=4, score_repeats=3)  # fmt: skip
    row = {"candidate": "lm", "warm_start_s": 1.0, "train/success": 0.5, "train/episodes": 4,
           "train/steps_per_s": 10.0}  # fmt: skip
    page = tmp_path / "page.md"
    write_page(page, [row], [], args, "python benchmarks/policy_candidates.py", 7, title="T x")
    text = page.read_text()
    assert text.startswith("# T x\n")
    assert "7 expert steps" in text and "| lm | 1.0 | 0.500 [" in text
    scores = {f"{n} {k}": 1.0 for n in ("kv", "kv copy", "concat")
              for k in ("forward", "forward+backward")}  # fmt: skip
    for _ in range(2):
        write_scoring(page, [{"prompt_tokens": 80, **scores}], args, "python x.py")
    text = page.read_text()
    assert text.count("## Score mode: kv vs concat") == 1 and "| lm | 1.0 |" in text


def test_the_expert_steps_are_collected_once_with_the_most_pairs(monkeypatch, tmp_path) -> None:
    from mvpo_train.study import candidates

    class Embedder:
        cache_size = 10

        def load_cache(self, path: str) -> None:
            self.loaded = path

    asked: list[int] = []

    def demos(embedder, env_id, env_kwargs, most, cache):
        asked.append(most)
        return [("prompt", 0, 1)] * 3

    monkeypatch.setattr(candidates, "SegmentEmbedder", Embedder)
    monkeypatch.setattr(candidates, "demonstrations", demos)
    bench = Bench("mvpo/ALFWorld-v0", history_length=2, embedding_cache="emb.npz")
    embedder, got = bench.expert_steps(["encoder:0:4:mean", "encoder:20"], "")
    assert asked == [4] and len(got) == 3
    assert embedder.loaded == "emb.npz" and embedder.cache_size == 2_000_000
    bench.expert_steps([], "")
    assert asked[-1] == 2  # no encoder candidate: the default history
