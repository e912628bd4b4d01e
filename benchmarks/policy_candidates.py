"""Policy candidates for the seeds' regime on ALFWorld-scale rooms (docs/policies.md).

Measures, for each candidate, on the bundled ALFWorld-scale splits with 50-step episodes and
sampled actions (temperature 1): the initial success on ``train`` and ``valid_unseen``, env
steps per second while playing, and (``--iteration``) the wall time of one training
iteration of 16 groups x 8 rollouts x 50 steps (rollout + update, GRPO), split into phases.

Candidates: ``lm`` (the bundled tiny causal LM, score mode, as ``cpu-tiny`` starts) and
``encoder:K`` (the frozen-MiniLM scorer after K behaviour-cloning steps on the train split's
expert walkthroughs; K=0 is the fresh head). Writes a Markdown table (``--out``)::

    nice -n 10 python benchmarks/policy_candidates.py --threads 2 \\
        --candidates lm encoder:0 encoder:10 encoder:20 encoder:40 --episodes 4 \\
        --iteration encoder:20 --out benchmarks/results/policy_candidates.md
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch

from mvpo_train.config import TrainConfig
from mvpo_train.encoder_policy import (
    EncoderPolicy,
    ScorerHead,
    SegmentEmbedder,
    collect_demonstrations,
    warm_start,
)
from mvpo_train.trainer import evaluate, load_policy, train

ENV = "mvpo/ALFWorld-v0"


def config(kind: str, **kw: Any) -> TrainConfig:
    base: dict[str, Any] = dict(
        env_id=ENV, max_steps=50, tasks=[], progress=False, tensorboard=False, threads=2,
        eval_greedy=False, history_length=2, env_kwargs={},
    )  # fmt: skip
    if kind == "encoder":
        base["policy"] = "encoder"
    base.update(kw)
    return TrainConfig(**base)


def make_policy(name: str, seed: int, embedder: SegmentEmbedder | None, demos) -> Any:
    if name == "lm":
        torch.manual_seed(seed)
        return load_policy(config("lm", seed=seed))
    steps = int(name.split(":")[1])
    torch.manual_seed(seed)
    policy = EncoderPolicy(ScorerHead(embedder.dim, 256, embedder.fingerprint), embedder)
    if steps:
        warm_start(policy, demos, steps=steps, seed=seed)
    return policy


def measure_success(name: str, policy: Any, episodes: int, seed: int) -> dict[str, Any]:
    cfg = config("encoder" if name != "lm" else "lm", seed=seed)
    out: dict[str, Any] = {"candidate": name}
    for split in ("train", "valid_unseen"):
        cache: dict[str, Any] = {}
        r = evaluate(policy, cfg, split=split, episodes=episodes, greedy=False, seed=seed,
                     cache=cache, report_time=True)  # fmt: skip
        for ev in cache.values():
            ev.close()
        steps = r["episodes"] * r["episode_length"]
        out[f"{split}/success"] = r["success"]
        out[f"{split}/episodes"] = r["episodes"]
        out[f"{split}/steps_per_s"] = steps / r["time/seconds"]
    return out


def measure_iteration(name: str, warm_dir: Path, run_dir: Path, seed: int) -> dict[str, Any]:
    kind = "lm" if name == "lm" else "encoder"
    kw: dict[str, Any] = dict(seed=seed, num_groups=16, group_size=8, iterations=1,
                              run_dir=str(run_dir), overwrite=True, save_every=0,
                              record_every=0, estimator="grpo")  # fmt: skip
    if kind == "encoder":
        kw["model"] = str(warm_dir)
        kw["lr"] = 1e-3
    row = train(config(kind, **kw))[-1]
    return {"candidate": name, **{k: v for k, v in row.items() if k.startswith("time/")},
            "steps": row["steps"], "success": row["success"]}  # fmt: skip


def measure_learning(
    name: str, warm_dir: Path, run_dir: Path, seed: int, iterations: int, groups: int,
    episodes: int,
) -> list[dict[str, Any]]:  # fmt: skip
    """``iterations`` GRPO iterations of ``groups`` x 8 x 50 on the whole train split from the
    warm start, evaluated on ``valid_unseen`` (sampled, ``episodes`` per task) before and
    after every ``iterations // 2`` iterations."""
    cfg = config(
        "encoder", seed=seed, num_groups=groups, group_size=8, iterations=iterations,
        run_dir=str(run_dir), overwrite=True, save_every=0, record_every=0, estimator="grpo",
        model=str(warm_dir), lr=1e-3, eval_every=max(iterations // 2, 1),
        eval_split="valid_unseen", eval_episodes=episodes,
    )  # fmt: skip
    policy = load_policy(cfg)
    start = evaluate(policy, cfg, episodes=episodes, seed=seed + 10_000)
    out = [{"iteration": 0, "train_success": None, "valid_unseen": start["success"]}]
    for r in train(cfg):
        out.append({"iteration": r["iteration"], "train_success": r["success"],
                    "valid_unseen": r.get("eval/success"), "seconds": r["time/total"]})  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--candidates", nargs="+", default=["lm", "encoder:0", "encoder:20"])
    p.add_argument("--episodes", type=int, default=4, help="sampled episodes per task")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--iteration", nargs="*", default=[], help="candidates to time one iteration")
    p.add_argument("--learn", default=None, help="candidate for a short learning run")
    p.add_argument("--learn-iterations", type=int, default=8)
    p.add_argument("--learn-groups", type=int, default=8)
    p.add_argument("--work", default="runs/policy_candidates", help="scratch folder")
    p.add_argument("--out", default=None, help="Markdown results file")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    embedder = demos = None
    if any(c != "lm" for c in args.candidates + args.iteration):
        embedder = SegmentEmbedder()
        probe = EncoderPolicy(ScorerHead(embedder.dim, 256, embedder.fingerprint), embedder)
        demos = collect_demonstrations(probe, ENV, "train")
    rows, iters = [], []
    for name in args.candidates:
        t0 = time.perf_counter()
        policy = make_policy(name, args.seed, embedder, demos)
        warm = time.perf_counter() - t0
        row = measure_success(name, policy, args.episodes, args.seed)
        row["warm_start_s"] = warm
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.out:  # after every stage: an interrupted run keeps what it measured
            write_markdown(Path(args.out), rows, iters, args, len(demos or []))
    for name in args.iteration:
        warm_dir = work / name.replace(":", "-")
        if name != "lm":
            policy = make_policy(name, args.seed, embedder, demos)
            policy.model.save_pretrained(warm_dir)
        it = measure_iteration(name, warm_dir, work / f"iter-{name.replace(':', '-')}", args.seed)
        iters.append(it)
        print(json.dumps(it), flush=True)
        if args.out:
            write_markdown(Path(args.out), rows, iters, args, len(demos or []))
    learn: list[dict[str, Any]] = []
    if args.learn:
        warm_dir = work / args.learn.replace(":", "-")
        policy = make_policy(args.learn, args.seed, embedder, demos)
        policy.model.save_pretrained(warm_dir)
        learn = measure_learning(
            args.learn, warm_dir, work / "learn", args.seed, args.learn_iterations,
            args.learn_groups, args.episodes,
        )  # fmt: skip
        print(json.dumps(learn), flush=True)
    if args.out:
        write_markdown(Path(args.out), rows, iters, args, len(demos or []), learn)
    return 0


def write_markdown(path: Path, rows, iters, args, n_demos: int, learn=()) -> None:
    cmd = "python benchmarks/policy_candidates.py " + " ".join(sys.argv[1:])
    lines = [
        "# Policy candidates on ALFWorld-scale rooms (50-step episodes)",
        "",
        f"Command: `nice -n 10 {cmd}`  ",
        f"Machine: {platform.machine()}, torch threads {args.threads}, shared 2-core box; "
        f"seed {args.seed}; {n_demos} expert steps in the train split's walkthroughs.",
        "",
        "Sampled actions (temperature 1); success over every task of the split x "
        f"{args.episodes} episodes; steps/s = env steps played / wall seconds of that evaluation.",
        "",
        "| candidate | warm start s | train success | valid_unseen success | steps/s (train) "
        "| steps/s (valid_unseen) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['candidate']} | {r['warm_start_s']:.1f} | {r['train/success']:.3f} "
            f"({r['train/episodes']} ep) | {r['valid_unseen/success']:.3f} "
            f"({r['valid_unseen/episodes']} ep) | {r['train/steps_per_s']:.1f} "
            f"| {r['valid_unseen/steps_per_s']:.1f} |"
        )
    if iters:
        lines += [
            "",
            "One training iteration, 16 groups x 8 rollouts x 50 steps, GRPO, ppo_epochs 4 "
            "(seconds per phase):",
            "",
            "| candidate | steps | rollout | logp_ref | advantage | update | total |",
            "|---|---|---|---|---|---|---|",
        ]
        for it in iters:
            lines.append(
                f"| {it['candidate']} | {it['steps']} | {it.get('time/rollout', 0):.1f} "
                f"| {it.get('time/logp_ref', 0):.1f} | {it.get('time/advantage', 0):.2f} "
                f"| {it.get('time/update', 0):.1f} | {it.get('time/total', 0):.1f} |"
            )
    if learn:
        lines += [
            "",
            f"Learning on the whole train split from `{args.learn}`: GRPO, "
            f"{args.learn_groups} groups x 8 rollouts x 50 steps, lr 1e-3; `valid_unseen` "
            f"success sampled, {args.episodes} episodes per task:",
            "",
            "| iteration | batch (train) success | valid_unseen success | seconds |",
            "|---|---|---|---|",
        ]
        for r in learn:
            tr = "" if r["train_success"] is None else f"{r['train_success']:.3f}"
            vu = "" if r["valid_unseen"] is None else f"{r['valid_unseen']:.3f}"
            sec = f"{r['seconds']:.0f}" if "seconds" in r else ""
            lines.append(f"| {r['iteration']} | {tr} | {vu} | {sec} |")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
