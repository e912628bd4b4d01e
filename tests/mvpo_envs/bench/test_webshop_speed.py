"""``mvpo_envs.bench.webshop_speed``: play counts every step and reset and gives the env back as it
was; the search latency is over the catalog it was given."""

from __future__ import annotations

from pathlib import Path

from mvpo_envs.bench.webshop_speed import page, play, search_latency, startup
from mvpo_envs.webshop.data import load_bundled
from mvpo_envs.webshop.env import WebShopEnv


def test_play_counts_steps_and_restores_the_env(tmp_path: Path) -> None:
    env = WebShopEnv(split="test", cache_dir=tmp_path)
    step, reset = env.step, env.reset
    rate, mean, steps = play(env, 3, expert=True)
    assert mean == 1.0 and rate > 0  # the scripted expert wins every synthetic goal
    assert steps >= 3 * 3  # a reset, a search and at least a click and a buy per episode
    assert (env.step, env.reset) == (step, reset)
    _, random_mean, _ = play(env, 3, expert=False)
    assert 0.0 <= random_mean <= 1.0


def test_search_latency_and_startup(tmp_path: Path) -> None:
    bundled = load_bundled()
    queries = [g["instruction_text"] for g in bundled.goals[:5]]
    lat = search_latency(bundled.products, queries)
    assert lat["docs"] == len(bundled.products) and 0 < lat["p50_ms"] <= lat["p95_ms"]
    assert set(startup(str(tmp_path))) == {"cold index", "cached index"}
    assert any(tmp_path.iterdir())  # the index was written to the cache folder given


def test_page_has_a_row_per_search_and_the_human_goal_count() -> None:
    search = {"docs": 100, "build_s": 0.5, "p50_ms": 1.25, "p95_ms": 2.5}
    m = {"start": {"cold index": 3.0, "cached index": 0.4}, "fresh": 2.0, "first": 0.9,
         "nouns": "none", "random_sps": 1234.0, "random_mean": 0.1, "expert_sps": 2000.0,
         "expert_mean": 0.9, "human_expert": 0.8, "human_random": 0.05, "human_goals": 17,
         "searches": {"bundled": search, "real (1000 products)": search}}  # fmt: skip
    text = "\n".join(page(m, quick=True, episodes=100))
    assert "`python benchmarks/webshop_env.py --quick`" in text
    assert "| random play (resets counted as steps) | 1,234 steps/s |" in text
    assert "| real (1000 products) | 100 | 0.50 s | 1.25 ms | 2.50 ms |" in text
    assert "| scripted expert | 0.900 | 0.800 |" in text and "all 17)" in text
