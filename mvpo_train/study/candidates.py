"""Measuring policy candidates for long episodes (``benchmarks/policy_candidates.py``;
docs/policies.md): a candidate is ``lm`` (the bundled tiny causal LM in score mode) or
``encoder:K[:H[:POOL]]`` (the frozen-MiniLM scorer after K behaviour-cloning steps on expert
demonstrations, reading H past pairs pooled by POOL; :func:`~mvpo_train.study.demo_layouts.parse_candidate`).

:class:`Bench` holds what every measurement of one call shares (the env, its keywords, the
history length, the threads, the embedding cache); its methods give the trainer config of a
candidate, the candidate's policy, and each measurement: success per split
(:meth:`Bench.success`), one training iteration's phases (:meth:`Bench.iteration`), a short
learning run (:meth:`Bench.learning`), history layouts compared by behaviour cloning
(:meth:`Bench.layouts`) and the LM's score-mode scorers (:meth:`Bench.scoring`).
:func:`demonstrations` collects the expert steps (kept in a JSON file when asked);
:func:`success_lines`, :func:`layout_lines`, :func:`iteration_lines`, :func:`learning_lines`
and :func:`scoring_lines` are the tables of the measurements, :func:`write_page` and
:func:`write_scoring` the results page around them.
"""

from __future__ import annotations

import json
import platform
import time
from argparse import Namespace
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from mvpo_train.config import TrainConfig
from mvpo_train.encoder_policy import LEGACY_POOL, EncoderPolicy, ScorerHead, SegmentEmbedder
from mvpo_train.score_timing import SCORERS, score_batch, time_scorers
from mvpo_train.stats import wilson
from mvpo_train.study.analyze_only import AnalyzeOnlyError, saved_results
from mvpo_train.study.demo_layouts import expert_agreement, parse_candidate, relayout
from mvpo_train.study.figures_page import write_figures_page
from mvpo_train.trainer import evaluate, load_policy, train
from mvpo_train.warm_start import collect_demonstrations, warm_start

__all__ = [
    "Bench",
    "demonstrations",
    "iteration_lines",
    "layout_lines",
    "layouts",
    "learning_lines",
    "page",
    "scoring_figures",
    "scoring_lines",
    "scoring_text",
    "section_figures",
    "section_text",
    "success_lines",
    "warm_encoder",
    "write_page",
    "write_scoring",
    "write_section",
]


@dataclass
class Bench:
    """The settings every measurement of one call shares: 50-step episodes of ``env_id``."""

    env_id: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    history_length: int = 2
    threads: int = 2
    embedding_cache: str = ""

    def config(self, kind: str, **kw: Any) -> TrainConfig:
        """The trainer config of a ``kind`` (``lm`` | ``encoder``) candidate, with ``kw``."""
        base: dict[str, Any] = dict(
            env_id=self.env_id,
            max_steps=50,
            tasks=[],
            progress=False,
            tensorboard=False,
            threads=self.threads,
            eval_greedy=False,
            history_length=self.history_length,
            env_kwargs=dict(self.env_kwargs),
        )
        if kind == "encoder":
            base["policy"] = "encoder"
        return TrainConfig(**{**base, **kw})

    def history_of(self, name: str) -> int:
        """The ``history_length`` a candidate's prompts are built with."""
        if name == "lm":
            return self.history_length
        _, hist, pool = parse_candidate(name, self.history_length)
        return self.history_length if pool == LEGACY_POOL else hist

    def expert_steps(
        self, encoders: Sequence[str], cache: str
    ) -> tuple[SegmentEmbedder, list[tuple]]:
        """The frozen encoder (its embedding cache loaded from :attr:`embedding_cache`) and the
        train split's expert steps, collected once with the most past pairs any of the
        ``encoders`` candidates reads (each cuts its own layout;
        :func:`demonstrations`, ``cache`` its JSON file)."""
        embedder = SegmentEmbedder()
        if self.embedding_cache:
            embedder.cache_size = max(embedder.cache_size, 2_000_000)
            embedder.load_cache(self.embedding_cache)
        hists = [parse_candidate(c, self.history_length)[1] for c in encoders]
        most = max(*hists, self.history_length, 1)
        t0 = time.perf_counter()
        demos = demonstrations(embedder, self.env_id, self.env_kwargs, most, cache)
        print(
            f"{len(demos)} expert steps collected in {time.perf_counter() - t0:.0f} s", flush=True
        )
        return embedder, demos

    def policy(self, name: str, seed: int, embedder: SegmentEmbedder | None, demos: Any) -> Any:
        """The candidate's policy: the tiny LM, or a fresh head warm-started on ``demos``."""
        if name == "lm":
            torch.manual_seed(seed)
            return load_policy(self.config("lm", seed=seed))
        steps, hist, pool = parse_candidate(name, self.history_length)
        assert embedder is not None, "an encoder candidate needs the embedder"
        return warm_encoder(steps, hist, pool, seed, embedder, demos)[0]

    def success(
        self, name: str, policy: Any, episodes: int, seed: int, splits: list[str], train_tasks: int
    ) -> dict[str, Any]:
        """Success per split: every task x ``episodes``, or (``train``, ``train_tasks`` > 0)
        ``train_tasks`` tasks drawn without replacement by a generator seeded with ``seed``."""
        kind = "encoder" if name != "lm" else "lm"
        cfg = self.config(kind, seed=seed, history_length=self.history_of(name))
        out: dict[str, Any] = {"candidate": name}
        for split in splits:
            cache: dict[str, Any] = {}
            tasks, eps = None, episodes
            if split == "train" and train_tasks:
                from mvpo_train.factories import make_venv

                probe = make_venv(cfg, split, 1, 1)
                n = probe.num_tasks
                probe.close()
                gen = torch.Generator().manual_seed(seed)
                tasks = sorted(torch.randperm(n, generator=gen)[: min(train_tasks, n)].tolist())
                eps = 1
            r = evaluate(
                policy,
                cfg,
                split=split,
                episodes=eps,
                greedy=False,
                seed=seed,
                cache=cache,
                report_time=True,
                tasks=tasks,
            )
            for ev in cache.values():
                ev.close()
            out[f"{split}/success"] = r["success"]
            out[f"{split}/episodes"] = r["episodes"]
            out[f"{split}/steps_per_s"] = r["episodes"] * r["episode_length"] / r["time/seconds"]
            out[f"{split}/seconds"] = r["time/seconds"]
        if hasattr(policy, "persist_cache"):
            policy.persist_cache()
        return out

    def _run(self, name: str, warm_dir: Path, run_dir: Path, seed: int, **kw: Any) -> TrainConfig:
        """A GRPO training config of the candidate from ``warm_dir`` (an encoder's saved head)."""
        kind = "lm" if name == "lm" else "encoder"
        kw = dict(
            seed=seed,
            run_dir=str(run_dir),
            overwrite=True,
            save_every=0,
            record_every=0,
            estimator="grpo",
            history_length=self.history_of(name),
            **kw,
        )
        if kind == "encoder":
            kw.update(model=str(warm_dir), lr=1e-3)
        return self.config(kind, **kw)

    def iteration(self, name: str, warm_dir: Path, run_dir: Path, seed: int) -> dict[str, Any]:
        """One GRPO iteration of 16 groups x 8 rollouts: its seconds per phase."""
        extra = {"embedding_cache": self.embedding_cache} if name != "lm" else {}
        cfg = self._run(
            name, warm_dir, run_dir, seed, num_groups=16, group_size=8, iterations=1, **extra
        )
        row = train(cfg)[-1]
        return {
            "candidate": name,
            **{k: v for k, v in row.items() if k.startswith("time/")},
            "steps": row["steps"],
            "success": row["success"],
        }

    def learning(
        self,
        name: str,
        warm_dir: Path,
        run_dir: Path,
        seed: int,
        iterations: int,
        groups: int,
        episodes: int,
    ) -> list[dict[str, Any]]:
        """``iterations`` GRPO iterations of ``groups`` x 8 x 50 on the whole train split from the
        warm start, evaluated on ``valid_unseen`` (sampled, ``episodes`` per task) before and
        after every ``iterations // 2`` iterations."""
        cfg = self._run(
            name,
            warm_dir,
            run_dir,
            seed,
            num_groups=groups,
            group_size=8,
            iterations=iterations,
            eval_every=max(iterations // 2, 1),
            eval_split="valid_unseen",
            eval_episodes=episodes,
        )
        start = evaluate(load_policy(cfg), cfg, episodes=episodes, seed=seed + 10_000)
        out = [{"iteration": 0, "train_success": None, "valid_unseen": start["success"]}]
        for r in train(cfg):
            out.append(
                {
                    "iteration": r["iteration"],
                    "train_success": r["success"],
                    "valid_unseen": r.get("eval/success"),
                    "seconds": r["time/total"],
                }
            )
        return out

    def scoring(self, lengths: list[int], batch: int, repeats: int, seed: int) -> list[dict]:
        """Per prompt length: the median CPU seconds of each score-mode scorer on the tiny LM
        (:mod:`mvpo_train.score_timing`), forward alone and forward + backward, on ``batch``
        prompts of 6-11 candidates of 3-9 tokens."""
        policy = self.policy("lm", seed, None, None)
        rows = []
        for n in lengths:
            prompts, cands = score_batch(policy.model.config.vocab_size, batch, n, seed=seed)
            row: dict[str, Any] = {"prompt_tokens": n}
            for kind, backward in (("forward", False), ("forward+backward", True)):
                times = time_scorers(policy, prompts, cands, backward, repeats)
                row.update({f"{name} {kind}": sec for name, sec in times.items()})
            rows.append(row)
            print(json.dumps(row), flush=True)
        return rows


def warm_encoder(
    steps: int, hist: int, pool: str, seed: int, embedder: SegmentEmbedder, demos: Any
) -> tuple[EncoderPolicy, list[float]]:
    """A fresh head of layout (``hist``, ``pool``) after ``steps`` behaviour-cloning steps on
    ``demos`` (cut to the layout), and the cloning losses."""
    torch.manual_seed(seed)
    head = ScorerHead(
        embedder.dim, 256, embedder.fingerprint, history_length=hist, history_pool=pool
    )
    policy = EncoderPolicy(head, embedder)
    if not steps:
        return policy, []
    mine = [(relayout(d[0], embedder.sep_id, hist, pool), d[1], d[2]) for d in demos]
    return policy, warm_start(policy, mine, steps=steps, seed=seed)


def layouts(
    layouts: list[str], steps: int, embedder: SegmentEmbedder, fit: Any, held: Any, seed: int
) -> list[dict[str, Any]]:
    """Per layout ``H:POOL``: ``steps`` behaviour-cloning steps on the demonstrations ``fit``,
    then on ``held`` (the expert steps of train games left out of ``fit``): how often the
    expert's action scores highest, its mean probability and the mean cross-entropy."""
    out = []
    for layout in layouts:
        hist, pool = int(layout.split(":")[0]), layout.split(":")[1]
        t0 = time.perf_counter()
        policy, losses = warm_encoder(steps, hist, pool, seed, embedder, fit)
        fit_s = time.perf_counter() - t0
        cut = [(relayout(d[0], embedder.sep_id, hist, pool), d[1], d[2]) for d in held]
        agree = expert_agreement(policy, cut)
        row = {
            "layout": layout,
            "params": sum(p.numel() for p in policy.model.parameters()),
            "fit_loss": sum(losses[-20:]) / len(losses[-20:]),
            "held_top1": agree["top1"],
            "held_prob": agree["prob"],
            "held_nll": agree["nll"],
            "held_steps": len(held),
            "seconds": fit_s,
        }
        out.append(row)
        print(json.dumps(row), flush=True)
    return out


def demonstrations(
    embedder: SegmentEmbedder, env_id: str, env_kwargs: dict[str, Any], most: int, cache: str
) -> list[tuple]:
    """The train split's expert steps, prompts of ``most`` past pairs (every layout of fewer
    pairs cuts them: :func:`~mvpo_train.study.demo_layouts.relayout`); read from the JSON file
    ``cache`` when it was written for the same env keywords, pairs and encoder, else collected
    (and written there when ``cache`` is given)."""
    head = ScorerHead(
        embedder.dim, 8, embedder.fingerprint, history_length=most, history_pool="concat"
    )
    key = {"env_kwargs": env_kwargs, "history_length": most, "encoder": embedder.fingerprint}
    path = Path(cache) if cache else None
    if path and path.is_file() and json.loads(path.read_text())["key"] == key:
        return [tuple(d) for d in json.loads(path.read_text())["demos"]]
    demos = collect_demonstrations(EncoderPolicy(head, embedder), env_id, "train", env_kwargs, most)
    if path:
        path.write_text(json.dumps({"key": key, "demos": demos}))
    return demos


def layout_lines(layouts: list[dict[str, Any]], steps: int, held_out: float) -> list[str]:
    """The table of :func:`layouts` (``steps`` cloning steps, ``held_out`` the share of train
    games left out) with the sentence that says how it was made."""
    return [
        f"History layouts (`--layouts`): {steps} behaviour-cloning steps on the "
        f"expert steps of {100 - 100 * held_out:.0f}% of the train games, scored on the "
        f"other {100 * held_out:.0f}% ({layouts[0]['held_steps']} expert steps, train "
        "games drawn with the seed): top-1 = the expert's action scores highest.",
        "",
        "| layout (H:POOL) | head parameters | fit loss (last 20 steps) | held-out top-1 "
        "| held-out expert prob | held-out cross-entropy | seconds |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {r['layout']} | {r['params']} | {r['fit_loss']:.3f} | {r['held_top1']:.3f} "
            f"| {r['held_prob']:.3f} | {r['held_nll']:.3f} | {r['seconds']:.0f} |"
            for r in layouts
        ),
    ]


def iteration_lines(iters: list[dict[str, Any]]) -> list[str]:
    """The table of :meth:`Bench.iteration` rows: seconds per trainer phase."""
    return [
        "",
        "One training iteration, 16 groups x 8 rollouts x 50 steps, GRPO, ppo_epochs 4 "
        "(seconds per phase):",
        "",
        "| candidate | steps | rollout | logp_ref | advantage | update | total |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {it['candidate']} | {it['steps']} | {it.get('time/rollout', 0):.1f} "
            f"| {it.get('time/logp_ref', 0):.1f} | {it.get('time/advantage', 0):.2f} "
            f"| {it.get('time/update', 0):.1f} | {it.get('time/total', 0):.1f} |"
            for it in iters
        ),
    ]


def learning_lines(learn: list[dict[str, Any]], name: str, groups: int, episodes: int) -> list[str]:
    """The table of :meth:`Bench.learning` from candidate ``name``: batch and held-out
    success per iteration."""
    lines = [
        "",
        f"Learning on the whole train split from `{name}`: GRPO, "
        f"{groups} groups x 8 rollouts x 50 steps, lr 1e-3; `valid_unseen` "
        f"success sampled, {episodes} episodes per task:",
        "",
        "| iteration | batch (train) success | valid_unseen success | seconds |",
        "|---|---|---|---|",
    ]
    for r in learn:
        tr = "" if r["train_success"] is None else f"{r['train_success']:.3f}"
        vu = "" if r["valid_unseen"] is None else f"{r['valid_unseen']:.3f}"
        sec = f"{r['seconds']:.0f}" if "seconds" in r else ""
        lines.append(f"| {r['iteration']} | {tr} | {vu} | {sec} |")
    return lines


def scoring_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The table of :meth:`Bench.scoring` rows: seconds per scorer and pass, each with its
    ratio to ``kv``."""
    cols = [(name, kind) for name in SCORERS for kind in ("forward", "forward+backward")]
    lines = [
        "| prompt tokens | " + " | ".join(f"`{name}` {kind}" for name, kind in cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    for r in rows:
        cells = [
            f"{r[f'{name} {kind}']:.2f} s"
            + ("" if name == "kv" else f" ({_x_kv(r, f'{name} {kind}', f'kv {kind}'):.1f}x)")
            for name, kind in cols
        ]
        lines.append(f"| {r['prompt_tokens']} | " + " | ".join(cells) + " |")
    return lines


def _ratios(row: dict[str, Any]) -> dict[str, float]:
    """A scoring row's seconds of each scorer but ``kv`` over ``kv``'s, per pass."""
    passes = ("forward", "forward+backward")
    return {
        f"{n} {k} / kv": row[f"{n} {k}"] / row[f"kv {k}"]
        for n in SCORERS
        if n != "kv"
        for k in passes
    }


def _x_kv(row: dict[str, Any], key: str, kv: str) -> float:
    """A scorer's seconds over ``kv``'s: the row's ``"<key> / kv"`` where a page's JSON keeps
    it (the ratio of the unrounded times), else computed."""
    return row.get(f"{key} / kv", row[key] / row[kv])


def success_lines(
    rows: list[dict[str, Any]], splits: list[str], intervals: bool = True
) -> list[str]:
    """The table of :meth:`Bench.success` rows: per split the success with its 95% Wilson
    interval (unless not ``intervals``: a page of before they were printed) and episodes,
    then the env steps per second of each split."""

    def rate(r: dict[str, Any], split: str) -> str:
        if f"{split}/success" not in r:
            return ""
        p, n = r[f"{split}/success"], r[f"{split}/episodes"]
        if not intervals:
            return f"{p:.3f} ({n} ep)"
        lo, hi = wilson(p * n, n)
        return f"{p:.3f} [{lo:.3f}, {hi:.3f}] ({n} ep)"

    def speed(r: dict[str, Any], split: str) -> str:
        return f"{r[f'{split}/steps_per_s']:.1f}" if f"{split}/steps_per_s" in r else ""

    lines = [
        "| candidate | warm start s | "
        + " | ".join(f"{s} success" for s in splits)
        + " | "
        + " | ".join(f"steps/s ({s})" for s in splits)
        + " |",
        "|---|---|" + "---|" * (2 * len(splits)),
    ]
    for r in rows:
        lines.append(
            f"| {r['candidate']} | {r['warm_start_s']:.1f} | "
            + " | ".join(rate(r, s) for s in splits)
            + " | "
            + " | ".join(speed(r, s) for s in splits)
            + " |"
        )
    return lines


def scoring_figures(rows: list[dict], args: Namespace, cmd: str) -> dict[str, Any]:
    """What the ``--section`` (default "Score mode: kv vs concat") of the page prints: the
    scoring rows of the command line ``cmd`` of ``benchmarks/policy_candidates.py`` (its
    ``args``) on this machine."""
    return {
        "kind": "scoring",
        "title": args.section or "Score mode: kv vs concat",
        "command": cmd,
        "machine": platform.machine(),
        "threads": args.threads,
        "score_batch": args.score_batch,
        "seed": args.seed,
        "score_repeats": args.score_repeats,
        "rows": [{**r, **_ratios(r)} for r in rows],
    }


def scoring_text(fig: dict[str, Any]) -> str:
    """The section of :func:`scoring_figures`: seconds per scorer and pass, each with its
    ratio to ``kv`` (:func:`scoring_lines`)."""
    lines = [
        f"## {fig['title']}",
        "",
        f"Command: `nice -n 10 {fig['command']}`  ",
        f"Machine: {fig['machine']}, torch threads {fig['threads']}, shared 2-core box. The "
        f"tiny bundled LM scores {fig['score_batch']} prompts x 6-11 candidates of 3-9 tokens "
        f"(random ids, seed {fig['seed']}); median process CPU seconds of "
        f"{fig['score_repeats']} rounds that each run every scorer once, in parentheses the "
        "ratio to `kv`; `kv` shares each prompt's cache among its candidates, `kv copy` copies "
        "it per candidate (the path before the shared cache), `concat` runs every prompt + "
        "candidate in full (mvpo_train/score_timing.py).",
        "",
        *scoring_lines(fig["rows"]),
    ]
    return "\n".join(lines) + "\n"


def write_scoring(path: Path, rows: list[dict], args: Namespace, cmd: str) -> None:
    """Write (or replace) the scoring section of the page ``path`` (:func:`write_section`)."""
    write_section(path, scoring_figures(rows, args, cmd))


def section_figures(
    rows: list[dict[str, Any]],
    iters: list[dict[str, Any]],
    args: Namespace,
    cmd: str,
    n_demos: int,
    learn: list[dict[str, Any]] | tuple = (),
    layouts: list[dict[str, Any]] | tuple = (),
    title: str = "Policy candidates",
) -> dict[str, Any]:
    """What the page (or its ``--section``) of ``benchmarks/policy_candidates.py`` run as
    ``cmd`` with ``args`` prints: the setting and the measurements made so far;
    ``n_demos``: the expert steps of the train walkthroughs; ``title``: the page's (the
    script names the env), ``args.section`` the section's."""
    return {
        "kind": "candidates",
        "title": args.section or title,
        "top": not args.section,
        "command": cmd,
        "machine": platform.machine(),
        "threads": args.threads,
        "seed": args.seed,
        "env_kwargs": args.env_kwargs,
        "n_demos": n_demos,
        "train_tasks": args.train_tasks,
        "episodes": args.episodes,
        "splits": args.splits,
        "layout_steps": getattr(args, "layout_steps", None),
        "held_out": getattr(args, "held_out", None),
        "learn_name": getattr(args, "learn", None),
        "learn_groups": getattr(args, "learn_groups", None),
        "rows": list(rows),
        "iters": list(iters),
        "learn": list(learn),
        "layouts": list(layouts),
    }


def section_text(fig: dict[str, Any]) -> str:
    """The page or section of :func:`section_figures`: the setting, then the tables
    (:func:`layout_lines`, :func:`success_lines`, :func:`iteration_lines`,
    :func:`learning_lines`). ``fig["legacy"]``: a section of before the Wilson intervals and
    the env kwargs were printed, in its words."""
    train_eps = (
        f"{fig['train_tasks']} train tasks drawn at random (seed {fig['seed']}) x 1 episode"
        if fig["train_tasks"]
        else f"every train task x {fig['episodes']} episodes"
    )
    env_kwargs = "" if fig.get("legacy") else f" env kwargs `{json.dumps(fig['env_kwargs'])}`;"
    lines = [
        f"{'#' if fig['top'] else '##'} {fig['title']}",
        "",
        f"Command: `nice -n 10 {fig['command']}`  ",
        f"Machine: {fig['machine']}, torch threads {fig['threads']}, shared 2-core box; "
        f"seed {fig['seed']};{env_kwargs} {fig['n_demos']} expert steps "
        "in the train split's walkthroughs.",
        "",
        f"Sampled actions (temperature 1); success over every task of the split x "
        f"{fig['episodes']} episodes; steps/s = env steps played / wall seconds of that "
        "evaluation."
        if fig.get("legacy")
        else f"Sampled actions (temperature 1); 50-step episodes; success (95% Wilson "
        f"interval) over {train_eps}; other splits: every task x {fig['episodes']} episodes; "
        "candidate `encoder:K:H:POOL` = K behaviour-cloning steps, H past (observation, "
        'action) pairs, POOL (docs/policies.md, "Input layout"); steps/s = env steps played '
        "/ wall seconds of that evaluation.",
        "",
    ]
    if fig["layouts"]:
        lines += [*layout_lines(fig["layouts"], fig["layout_steps"], fig["held_out"]), ""]
    rows = fig["rows"]
    lines += success_lines(rows, fig["splits"], not fig.get("legacy")) if rows else []
    if not rows:
        lines.pop()
    if fig["iters"]:
        lines += iteration_lines(fig["iters"])
    if fig["learn"]:
        lines += learning_lines(
            fig["learn"], fig["learn_name"], fig["learn_groups"], fig["episodes"]
        )
    return "\n".join(lines) + "\n"


def page(figures: dict[str, Any]) -> str:
    """``benchmarks/policy_candidates.py``'s page: each section of ``figures["sections"]``
    (the JSON kept beside it) in order, a blank line between."""
    text = {"scoring": scoring_text, "candidates": section_text}
    return "\n".join(text[fig["kind"]](fig) for fig in figures["sections"])


def write_section(path: Path, fig: dict[str, Any]) -> None:
    """Put ``fig`` in the figures JSON beside the page ``path`` (replacing the section of its
    title, else appended; a page without a title of its own: the first) and write both
    (:func:`~mvpo_train.study.figures_page.write_figures_page`); a damaged JSON stops with
    one line."""
    figures: dict[str, Any] = {"sections": []}
    if path.with_suffix(".json").is_file():
        try:
            figures = saved_results(path)
        except AnalyzeOnlyError as err:
            raise SystemExit(f"policy_candidates: {err}") from None
    sections = figures["sections"]
    same = [
        i
        for i, f in enumerate(sections)
        if f["title"] == fig["title"] or f.get("top") and fig.get("top")
    ]
    if same:
        sections[same[0]] = fig
    elif fig.get("top"):
        sections.insert(0, fig)
    else:
        sections.append(fig)
    write_figures_page("policy_candidates", path, page, figures)


def write_page(path: Path, *args: Any, **kwargs: Any) -> None:
    """Write (or replace) the page's section of a run: :func:`write_section` of
    :func:`section_figures` of ``args`` and ``kwargs`` (its parameters)."""
    write_section(path, section_figures(*args, **kwargs))
