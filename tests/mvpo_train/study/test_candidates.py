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
