"""Speed of mvpo/WebShop-v0: start-up, steps per second, search latency, expert/random scores.

docs/webshop.md. Start-up with the BM25 index built and from the disk cache, the first reward
(loads the noun extractor), steps/s of random and expert play, uncached search latency on the
bundled catalog and on the 1,000 real products of ``<realdata>/webshop`` (``--realdata`` or
``MVPO_REALDATA``; ``--no-realdata`` leaves that row out), mean scores on the test split.

``python benchmarks/webshop_env.py`` writes ``benchmarks/results/webshop_env.md``; ``--quick``
plays fewer episodes.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
from pathlib import Path

from mvpo_envs.bench.webshop_speed import first_reward, fresh_process, play, search_latency, startup
from mvpo_envs.realdata import add_realdata_argument, require_realdata

RESULTS = Path(__file__).resolve().parent / "results" / "webshop_env.md"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", type=Path, default=RESULTS)
    add_realdata_argument(p)
    args = p.parse_args(argv)
    real_dir = (
        None if args.no_realdata else require_realdata(args.realdata, "webshop", "webshop_env")
    )
    episodes = 100 if args.quick else 500

    from mvpo_envs.webshop.data import load_bundled, load_data_dir
    from mvpo_envs.webshop.env import WebShopEnv
    from mvpo_envs.webshop.nouns import extractor_name

    with tempfile.TemporaryDirectory() as cache:
        start = startup(cache)
        fresh = fresh_process(cache)
        env = WebShopEnv(split="test", cache_dir=cache)
        first = first_reward(env)
        nouns = extractor_name(env.nouns)
        random_sps, random_mean, _ = play(env, episodes, expert=False)
        expert_sps, expert_mean, _ = play(env, episodes, expert=True)
        human = WebShopEnv(split="test", goal_source="human", cache_dir=cache)
        _, human_expert, _ = play(human, len(human.task_ids), expert=True)
        _, human_random, _ = play(human, episodes, expert=False)
    bundled = load_bundled()
    searches = {
        "bundled": search_latency(
            bundled.products, [g["instruction_text"] for g in bundled.goals[:300]]
        )
    }
    if real_dir is not None:
        real = load_data_dir(real_dir)
        searches["real (1000 products)"] = search_latency(
            real.products, [g["instruction_text"] for g in real.goals[:300]]
        )

    lines = [
        "# mvpo/WebShop-v0 speed and scores",
        "",
        f"`python benchmarks/webshop_env.py{' --quick' if args.quick else ''}` on "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}; nouns: `{nouns}`; bundled catalog, test split.",
        "",
        "| what | value |",
        "|---|---|",
        f"| new process: Python + imports + `gym.make` + reset (cached index) | {fresh:.2f} s |",
        f"| start-up, `gym.make` + reset, BM25 index built | {start['cold index']:.2f} s |",
        f"| start-up, `gym.make` + reset, index from disk cache | {start['cached index']:.2f} s |",
        f"| first episode (loads the noun extractor) | {first:.2f} s |",
        f"| random play (resets counted as steps) | {random_sps:,.0f} steps/s |",
        f"| scripted expert (resets counted as steps) | {expert_sps:,.0f} steps/s |",
        "",
        "| search (bm25s, uncached query) | documents | index build | p50 | p95 |",
        "|---|---|---|---|---|",
    ]
    for name, s in searches.items():
        lines.append(
            f"| {name} | {s['docs']} | {s['build_s']:.2f} s | {s['p50_ms']:.2f} ms | {s['p95_ms']:.2f} ms |"
        )
    lines += [
        "",
        "| player (bundled test split) | synthetic goals: mean score | human goals: mean score |",
        "|---|---|---|",
        f"| scripted expert | {expert_mean:.3f} | {human_expert:.3f} |",
        f"| random clicks after searching the instruction | {random_mean:.3f} | {human_random:.3f} |",
        "",
        f"Episodes: {episodes} per row (expert on human goals: all {len(human.task_ids)}). A step "
        "includes rendering, the info contract (deep-copied state) and the abstraction.",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
