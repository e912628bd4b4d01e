"""``mvpo-showcase`` (what ``make run`` runs): held-out success before and after a short MVPO run.

docs/training.md, "Showcase". The preset ``cpu-showcase`` is the ALFWorld study's MVPO arm
(docs/learning_study.md): the CPU encoder policy (frozen MiniLM + a trained action scorer,
docs/policies.md) from the bundled warm start (``data/models/alfworld-encoder-warm``: 300
behaviour-cloning steps on the walkthroughs of ALFWorld's 3,553 train games), trained with
MVPO on 16 x 8 episodes of 50 steps an iteration, for 10 iterations. Around the training, the
same held-out evaluation twice: every game of ``eval_split`` (``valid_unseen``: 134 games
unseen in training), ``eval_episodes`` sampled episodes each, sampling seed ``cfg.seed``;
first with the warm start, then with the trained policy. At the end it prints one screen:
held-out success before and after with 95% intervals, their paired difference (bootstrap
over games), success per task type, training success, and the credit MVPO gave (how many
steps GRPO's and GiGPO's comparisons leave without signal, how many MVPO repaired, kappa, the
potential's split), and writes ``showcase.png`` (curves and the two held-out bars) and
``showcase.json`` into the run folder.

Every ``mvpo-train`` flag works here (``--iterations 20``, ``--estimator gigpo``, ``--seed 1``);
a rerun reuses what is done (the start evaluation, a finished run) and resumes a killed one.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train import stats
from mvpo_train.config import ConfigError, TrainConfig

__all__ = ["PRESET", "bootstrap_ci", "credit_summary", "main", "paired_difference", "summary_text"]

#: the preset this command starts from (mvpo_train.config.PRESETS)
PRESET = "cpu-showcase"
START, END = "showcase-start.json", "showcase-end.json"
BOOTSTRAP = 10_000


def bootstrap_ci(values: np.ndarray, seed: int = 0, n: int = BOOTSTRAP) -> tuple[float, float]:
    """95% percentile interval of the mean of ``values`` (:func:`mvpo_train.stats.bootstrap_ci`)."""
    _, lo, hi = stats.bootstrap_ci(values, n=n, seed=seed)
    return lo, hi


def per_game(result: dict[str, Any]) -> dict[int, float]:
    """Task index -> mean success of its episodes (an evaluation with ``per_episode``)."""
    by_task: dict[int, list[bool]] = {}
    for task, ok in zip(result["episode_task"], result["episode_success"], strict=True):
        by_task.setdefault(int(task), []).append(bool(ok))
    return {t: float(np.mean(v)) for t, v in sorted(by_task.items())}


def paired_difference(start: dict[str, Any], end: dict[str, Any]) -> dict[str, Any]:
    """End minus start success over the same games: mean, bootstrap 95% interval over games,
    and how many games went up / down."""
    a, b = per_game(start), per_game(end)
    if sorted(a) != sorted(b):
        raise ConfigError(
            "showcase: the two held-out evaluations cover different games; rerun with --overwrite"
        )
    diff = np.array([b[t] - a[t] for t in a])
    return {
        "mean": float(diff.mean()),
        "ci": bootstrap_ci(diff),
        "games": len(diff),
        "up": int((diff > 0).sum()),
        "down": int((diff < 0).sum()),
    }


def _mean(rows: list[dict[str, Any]], key: str) -> float:
    vals = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
    return float(np.mean(vals)) if vals else float("nan")


def credit_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What the credit estimator gave over the run (means over iterations; first and last
    kappa and EMA success), from the metrics rows (docs/estimators.md, "Diagnostics")."""
    out: dict[str, Any] = {
        "no_signal_grpo": _mean(rows, "adv/episode_zero_credit_ratio"),
        "no_signal_gigpo_step_groups": _mean(rows, "adv/zero_credit_ratio"),
        "repaired": _mean(rows, "adv/repaired_ratio"),
        "zero_advantage": _mean(rows, "adv/zero_adv_ratio"),
        "phi_split_spearman_failed": _mean(rows, "adv/phi_split_spearman_failed"),
        "phi_success_mean": _mean(rows, "adv/phi_success_mean"),
        "phi_failure_mean": _mean(rows, "adv/phi_failure_mean"),
    }
    for key in ("adv/kappa", "adv/ema_success"):
        vals = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
        out[key.split("/")[1]] = (vals[0], vals[-1]) if vals else None
    return out


def _fmt(x: float, signed: bool = False) -> str:
    return "  n/a" if x is None or not np.isfinite(x) else (f"{x:+.3f}" if signed else f"{x:.3f}")


def summary_text(result: dict[str, Any]) -> str:
    """The one-screen summary of a showcase result (``showcase.json``)."""
    s, e, d, c = result["start"], result["end"], result["difference"], result["credit"]
    cfg = result["config"]
    lines = [
        f"mvpo-showcase: {cfg['estimator']} on {cfg['env_id']} ({result['train_games']} train "
        f"games), {cfg['num_groups']} x {cfg['group_size']} episodes of <= {cfg['max_steps']} "
        f"steps, {len(result['train_success'])} iterations, seed {cfg['seed']}",
        f"held-out: {result['heldout_games']} {cfg['eval_split']} games x {cfg['eval_episodes']} "
        f"sampled episode(s), the same seed before and after",
        f"  before (warm start)  {_fmt(s['success'])}  [{_fmt(s['ci'][0])}, {_fmt(s['ci'][1])}]",
        f"  after training       {_fmt(e['success'])}  [{_fmt(e['ci'][0])}, {_fmt(e['ci'][1])}]",
        f"  difference          {_fmt(d['mean'], True)}  [{_fmt(d['ci'][0], True)}, "
        f"{_fmt(d['ci'][1], True)}]  (paired over games: {d['up']} up, {d['down']} down)",
        "  per task type        before  after",
    ]
    for tt in sorted(k for k in s if k.startswith("success/")):
        lines.append(f"    {tt[8:]:<32} {_fmt(s[tt])}  {_fmt(e.get(tt, float('nan')))}")
    tr = result["train_success"]
    lines += [
        f"training success (train games): first {_fmt(tr[0])}, last {_fmt(tr[-1])}, "
        f"mean {_fmt(float(np.mean(tr)))}",
        "credit (share of training steps, mean over iterations):",
        f"  no signal under GRPO (rollout group all equal)   {_fmt(c['no_signal_grpo'])}",
        f"  in GiGPO's zero-credit step groups              "
        f"{_fmt(c['no_signal_gigpo_step_groups'])}",
    ]
    if np.isfinite(c["repaired"]):
        lines.append(f"  repaired by MVPO's potential                    {_fmt(c['repaired'])}")
    lines.append(f"  advantage exactly 0 under {cfg['estimator']:<21} {_fmt(c['zero_advantage'])}")
    if c.get("kappa"):
        lines.append(
            f"  kappa {c['kappa'][0]:.3f} -> {c['kappa'][1]:.3f}, EMA success "
            f"{c['ema_success'][0]:.3f} -> {c['ema_success'][1]:.3f}; potential: successes "
            f"{_fmt(c['phi_success_mean'])} vs failures {_fmt(c['phi_failure_mean'])}, "
            f"split Spearman on failures {_fmt(c['phi_split_spearman_failed'], True)}"
        )
    lines.append(
        f"plot: {result['plot']}   numbers: {result['json']}   ({result['minutes']:.1f} min)"
    )
    return "\n".join(lines)


def plot(result: dict[str, Any], rows: list[dict[str, Any]], out: Path) -> None:
    """Training curves and the two held-out bars with their intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.6), gridspec_kw={"width_ratios": [2, 1]})
    it = [r["iteration"] for r in rows]
    ax0.plot(it, [r["success"] for r in rows], marker="o", label="training success")
    for key, label in (
        ("adv/episode_zero_credit_ratio", "steps without signal under GRPO"),
        ("adv/zero_adv_ratio", f"steps with advantage 0 ({result['config']['estimator']})"),
    ):
        if any(key in r for r in rows):
            ax0.plot(it, [r.get(key, np.nan) for r in rows], ls="--", label=label)
    ax0.set_xlabel("iteration")
    ax0.set_ylim(0, 1)
    ax0.legend(fontsize=8)
    ax0.set_title("training (train split)")
    s, e = result["start"], result["end"]
    means = [s["success"], e["success"]]
    err = np.array([[m - ci[0], ci[1] - m] for m, ci in ((s["success"], s["ci"]),
                                                         (e["success"], e["ci"]))]).T  # fmt: skip
    ax1.bar(["warm start", "trained"], means, yerr=err, capsize=6, color=["grey", "tab:blue"])
    ax1.set_title(f"held-out {result['config']['eval_split']} success")
    ax1.set_ylim(0, max(0.5, max(means) * 1.5))
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def _weights_digest(model: str) -> str | None:
    """SHA-256 of a model folder's ``model.safetensors`` (None: no such file, e.g. a fresh head)."""
    import hashlib

    path = Path(model) / "model.safetensors"
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def _eval_key(cfg: TrainConfig, model: str) -> dict[str, Any]:
    """What a cached evaluation must have been made with (the weights included: a folder whose
    files changed is evaluated again)."""
    return {"model": model, "weights_sha256": _weights_digest(model), "split": cfg.eval_split,
            "episodes": cfg.eval_episodes, "greedy": cfg.eval_greedy, "seed": cfg.seed,
            "env_id": cfg.env_id, "env_kwargs": cfg.env_kwargs,
            "max_steps": cfg.max_steps}  # fmt: skip


def _write_json(path: Path, obj: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(obj, indent=1) + "\n")
    tmp.replace(path)


def heldout(cfg: TrainConfig, model: str, path: Path, label: str) -> dict[str, Any]:
    """The held-out evaluation of ``model`` (cached in ``path`` for the same settings)."""
    key = _eval_key(cfg, model)
    if path.is_file():
        saved = json.loads(path.read_text())
        if saved.get("key") == key:
            return saved
    from mvpo_train.evaluation import evaluate
    from mvpo_train.factories import load_policy

    print(f"mvpo-showcase: held-out evaluation of the {label} on {cfg.eval_split} ...", flush=True)
    policy = load_policy(cfg, model=model)
    venvs: dict[str, Any] = {}
    try:
        result = evaluate(policy, cfg, per_episode=True, seed=cfg.seed, report_time=True,
                          cache=venvs)  # fmt: skip
    finally:
        for venv in venvs.values():
            venv.close()
    if hasattr(policy, "persist_cache"):
        policy.persist_cache()  # the training run reads the embeddings computed here
    games = per_game(result)
    result.update(key=key, ci=bootstrap_ci(np.array(list(games.values()))))
    _write_json(path, result)
    print(f"mvpo-showcase: {label}: success {result['success']:.3f} "
          f"({result['time/seconds']:.0f} s)", flush=True)  # fmt: skip
    return result


def _read_rows(run: Path) -> list[dict[str, Any]]:
    from mvpo_train.metrics import read_metrics

    return read_metrics(run) if (run / "metrics.jsonl").is_file() else []


def run_showcase(cfg: TrainConfig) -> dict[str, Any]:
    """Evaluate, train (or resume, or reuse a finished run), evaluate, plot; the result."""
    import dataclasses

    from mvpo_train.cli import _intact_checkpoint, check_device
    from mvpo_train.factories import make_venv
    from mvpo_train.policies import get_policy_kind
    from mvpo_train.trainer import train

    t0 = time.perf_counter()
    run = Path(cfg.run_dir)
    check_device(cfg.device)
    train_venv = make_venv(cfg, cfg.split, 1, 1)  # a split the env refuses fails now
    train_games = train_venv.num_tasks
    train_venv.close()
    from mvpo_train.threads import set_torch_threads

    cfg = dataclasses.replace(cfg, threads=set_torch_threads(cfg.threads, resume_from=run))
    start_model = get_policy_kind(cfg.policy).resolve_model(cfg.model)  # bundled head: folder
    if cfg.overwrite:  # the trainer moves an old run aside; its evaluations are not reused
        for name in (START, END):
            (run / name).unlink(missing_ok=True)
    start = heldout(cfg, start_model, run / START, "warm start")
    # a finished run returns at once, a killed one resumes; the trainer checks the config
    resume = (run / "checkpoints" / "LATEST").is_file() and not cfg.overwrite
    try:
        train(dataclasses.replace(cfg, resume=resume or cfg.resume))
    except ConfigError as err:
        if resume and not cfg.resume:  # the user did not ask to resume: say how to start afresh
            raise ConfigError(f"{err}; or pass --overwrite to start afresh") from None
        raise
    if not (run / START).is_file():  # moved aside with the old run by --overwrite
        _write_json(run / START, start)
    rows = _read_rows(run)
    final = _intact_checkpoint(run)
    if len(rows) != cfg.iterations or final.name != f"iter-{cfg.iterations:06d}":
        # a longer run, or a newest checkpoint that is not the last iteration's: the "after"
        # policy would not be the one of these iterations
        raise ConfigError(
            f"showcase: {run} holds {len(rows)} iterations and its newest intact checkpoint is "
            f"{final.name}, not iteration {cfg.iterations}; pass --iterations {len(rows)} or "
            "--overwrite"
        )
    final = str(final)
    end = heldout(cfg, final, run / END, "trained policy")
    result: dict[str, Any] = {
        "config": cfg.to_dict(),
        "train_games": train_games,
        "heldout_games": len(per_game(start)),
        "start": {k: v for k, v in start.items() if not k.startswith("episode_")},
        "end": {k: v for k, v in end.items() if not k.startswith("episode_")},
        "difference": paired_difference(start, end),
        "train_success": [r["success"] for r in rows],
        "credit": credit_summary(rows),
        "plot": str(run / "showcase.png"),
        "json": str(run / "showcase.json"),
        "minutes": (time.perf_counter() - t0) / 60,
    }
    plot(result, rows, run / "showcase.png")
    _write_json(run / "showcase.json", result)
    return result


def _showcase(argv: list[str]) -> int:
    from mvpo_train.cli import _add_debug, on_interrupt
    from mvpo_train.config import build_parser, config_from_args

    parser = build_parser("mvpo-showcase", __doc__)
    parser.set_defaults(preset=PRESET)
    _add_debug(parser)
    cfg = config_from_args(parser.parse_args(argv))
    on_interrupt("mvpo-showcase", argv, cfg.run_dir)
    print(summary_text(run_showcase(cfg)))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``mvpo-showcase [any mvpo-train flag]`` (module docstring)."""
    from mvpo_train.cli import _guard

    return _guard("mvpo-showcase", _showcase, argv)


if __name__ == "__main__":
    sys.exit(main())
