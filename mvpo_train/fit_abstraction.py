"""``mvpo-fit-abstraction``: collect seeded rollouts and fit a learned abstraction to a folder.

docs/abstractions.md ("Fit and use")::

    mvpo-fit-abstraction mvpo/ALFWorld-v0 --episodes 64 --seed 0 --out runs/abs-alfworld
    python -c "import gymnasium as gym, mvpo_envs; \
        gym.make('mvpo/ALFWorld-v0', abstraction='learned:runs/abs-alfworld')"

The rollouts come from a seeded random policy over ``info["admissible_actions"]`` (episode
``i`` resets with ``seed + i``; a template's query slot is filled with the task text,
:func:`mvpo_envs.action_templates.fill_template`) or, with ``--policy RUN_DIR``, from the latest checkpoint of a
``mvpo-train`` run (its config decides env keywords, prompt and action mode). Milestones
(``--milestones auto``, the default) are learned when the episodes' returns differ and are the
env's rules otherwise (a random policy seldom succeeds); the command says which. Nothing here knows a specific environment: it reads the
gymnasium id, the info dict (``state``, ``admissible_actions``) and the rewards.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import mvpo_envs  # noqa: F401  (registers the mvpo/* ids)
from mvpo_abstraction.learned import EmbeddingClusterAbstraction
from mvpo_abstraction.learned_milestones import MilestoneLearner
from mvpo_envs.action_templates import fill_template
from mvpo_envs.declaration import default_env_id
from mvpo_train.config import OneLineParser, json_arg
from mvpo_train.progress import episode_ticker, work_bar
from mvpo_train.threads import passive_openmp, set_torch_threads

Episode = list[dict[str, Any]]


def random_rollouts(
    env_id: str,
    episodes: int,
    seed: int = 0,
    env_kwargs: dict[str, Any] | None = None,
    max_steps: int | None = None,
    progress: bool = False,
) -> tuple[list[Episode], list[float]]:
    """``episodes`` seeded random-policy episodes: their states (reset first) and returns.

    An admissible template is sent as random play fills it (:func:`mvpo_envs.action_templates.fill_template`:
    a query slot gets the task text, so WebShop's random episodes reach result pages and
    SearchQA's search the question; docs/abstractions.md, "Fit and use"). ``progress``: a
    bar on stderr ticking per episode (:mod:`mvpo_train.progress`)."""
    if episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {episodes}")
    kwargs = dict(env_kwargs or {})
    if max_steps:
        kwargs["max_episode_steps"] = max_steps
    env = gym.make(env_id, **kwargs)
    rng = np.random.default_rng(seed)
    out: list[Episode] = []
    returns: list[float] = []
    bar = work_bar(progress, "random episodes", episodes, "ep")
    try:
        for i in range(episodes):
            _, info = env.reset(seed=seed + i)
            states, total = [info["state"]], 0.0
            while True:
                acts = list(info.get("admissible_actions") or [])
                if not acts:
                    raise ValueError(
                        f"{env_id}: the random policy needs info['admissible_actions'], got none"
                    )
                action = fill_template(acts[rng.integers(len(acts))], info)
                _, reward, terminated, truncated, info = env.step(action)
                states.append(info["state"])
                total += float(reward)
                if terminated or truncated:
                    break
            out.append(states)
            returns.append(total)
            bar.update(1)
    finally:
        bar.close()
        env.close()
    return out, returns


def policy_rollouts(
    run_dir: str | Path, env_id: str, episodes: int, seed: int = 0, progress: bool = False
) -> tuple[list[Episode], list[float]]:
    """``episodes`` episodes of the policy of a ``mvpo-train`` run (its latest complete
    checkpoint, its config: env keywords, prompt, action mode), tasks drawn with ``seed``.

    States are the observations the policy acted on (``{"observation": text}``, from the
    rollout's ``anchor`` column); returns are the env rewards (without format penalties).
    ``progress``: a bar on stderr ticking per step and finished episode.
    """
    import torch

    from mvpo_train.checkpoint import complete_checkpoints, load_model_weights
    from mvpo_train.config import TrainConfig, load_config
    from mvpo_train.factories import load_policy, make_collector, make_venv

    run = Path(run_dir)
    if not (run / "config.yaml").is_file():
        raise FileNotFoundError(f"--policy {run}: not a mvpo-train run folder (no config.yaml)")
    cfg = TrainConfig(**load_config(run / "config.yaml"))
    if cfg.env_id != env_id:
        raise ValueError(f"--policy {run}: the run trained on {cfg.env_id}, not {env_id}")
    ckpts = complete_checkpoints(run)
    if not ckpts:
        raise FileNotFoundError(f"--policy {run}: no complete checkpoint in {run}/checkpoints")
    policy = load_policy(cfg)
    load_model_weights(policy.model, ckpts[-1][1])
    policy.model.eval()
    venv = make_venv(cfg, cfg.split, episodes, 1)
    try:
        rng = np.random.default_rng(seed)
        tasks = [int(x) for x in rng.integers(venv.num_tasks, size=episodes)]
        collector = make_collector(cfg, venv, policy, torch.Generator().manual_seed(seed))
        with work_bar(progress, "policy episodes", episodes, "ep") as bar:
            batch = collector.collect(tasks, on_step=episode_ticker(bar))
    finally:
        venv.close()
    traj, t = np.asarray(batch.traj), np.asarray(batch.t)
    reward = np.asarray(batch.extras["env_reward"], dtype=np.float64)
    order = np.lexsort((t, traj))
    out, returns = [], []
    for i in np.unique(traj):
        rows = order[traj[order] == i]
        out.append([{"observation": str(batch.anchor[r])} for r in rows])
        returns.append(float(reward[rows].sum()))
    return out, returns


def check_episodes(
    episodes: list[Episode], returns: list[float], k: int, milestones: str, policy: str
) -> None:
    """Refuse, before the encoder loads, data that cannot give what was asked: fewer distinct
    observations than ``--k`` clusters, or learned milestones from episodes that all have the
    same return (no event can predict success). The error names the flags that fix it."""
    distinct = len({str(s.get("observation", "")) for ep in episodes for s in ep})
    if distinct < k:
        raise ValueError(
            f"--k {k}: the {len(episodes)} episodes hold {distinct} distinct observations, too "
            f"few for {k} clusters; lower --k (at most {distinct}) or raise --episodes"
        )
    if milestones == "learned" and len(set(returns)) == 1:
        raise ValueError(
            f"--milestones learned: all {len(returns)} episodes of the {policy!r} policy have "
            f"the same return ({returns[0]:g}), so no event can predict success; pass "
            "--milestones rules (learned signatures, the env's milestones) or --policy RUN_DIR "
            "(a trained mvpo-train run that sometimes succeeds)"
        )


def fit_abstraction(
    env_id: str,
    episodes: int,
    out: str | Path,
    *,
    policy: str = "random",
    seed: int = 0,
    k: int = 32,
    milestones: str = "auto",
    top_k: int = 5,
    min_support: int = 3,
    env_kwargs: dict[str, Any] | None = None,
    max_steps: int | None = None,
    model_path: str | None = None,
    progress: bool = False,
) -> EmbeddingClusterAbstraction:
    """Collect, fit, save to ``out``; returns the fitted abstraction.

    ``milestones``: ``"learned"`` (an error when every episode has the same return),
    ``"rules"`` (the env's own), a registered abstraction name, or ``"auto"`` (the default:
    learned when the returns differ, else the env's rules; the result's ``milestones_from``
    and the saved ``fit.milestones`` say which). ``progress``: bars on stderr while the
    episodes are played.
    """
    if policy == "random":
        eps, returns = random_rollouts(env_id, episodes, seed, env_kwargs, max_steps, progress)
    else:
        eps, returns = policy_rollouts(policy, env_id, episodes, seed, progress)
    check_episodes(eps, returns, k, milestones, policy)
    requested = milestones
    if milestones == "auto":
        milestones = "learned" if len(set(returns)) > 1 else "rules"
    if milestones == "rules":
        milestones = gym.make(env_id, **(env_kwargs or {})).unwrapped.abstraction.name
    learner = MilestoneLearner(top_k=top_k, min_support=min_support, seed=seed)
    abstraction = EmbeddingClusterAbstraction(
        k=k, milestones_from=milestones, seed=seed, learner=learner, model_path=model_path
    ).fit_episodes(eps, returns)
    abstraction.save(
        out,
        extra={
            "env_id": env_id,
            "episodes": episodes,
            "policy": policy,
            "milestones": requested,
            "seed": seed,
            "env_kwargs": dict(env_kwargs or {}),
            "max_steps": max_steps,
            "steps": sum(len(e) for e in eps),
            "mean_return": float(np.mean(returns)),
        },
    )
    return abstraction


def main(argv: Sequence[str] | None = None) -> int:
    p = OneLineParser(
        prog="mvpo-fit-abstraction",
        description="Fit a learned abstraction (docs/abstractions.md) on seeded rollouts.",
    )
    p.add_argument("env_id", help=f"gymnasium id, e.g. {default_env_id()}")
    p.add_argument("--episodes", type=int, required=True)
    p.add_argument(
        "--policy", default="random", help="'random' or a mvpo-train run folder (its checkpoint)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="folder to write (abstraction.json, .npy)")
    p.add_argument("--k", type=int, default=32, help="number of observation clusters")
    p.add_argument(
        "--milestones",
        default="auto",
        help="'auto' (default: learned when the episodes' returns differ, else the env's "
        "rules), 'learned', 'rules' (the env's own) or a registered abstraction name",
    )
    p.add_argument("--top-k", type=int, default=5, help="learned milestones kept")
    p.add_argument("--min-support", type=int, default=3, help="episodes an event needs")
    p.add_argument("--max-steps", type=int, default=None, help="episode step limit override")
    p.add_argument(
        "--env-kwargs", type=json_arg(dict), default={}, help="extra gym.make keywords as JSON"
    )
    p.add_argument("--model-path", default=None, help="sentence-transformers folder")
    p.add_argument(
        "--threads", type=int, default=0, help="torch CPU threads (0 = auto: the CPUs free now)"
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="show progress (episodes played) on stderr",
    )
    passive_openmp()  # before torch loads (mvpo_train.threads)
    try:
        args = p.parse_args(argv)  # a bad flag is a ConfigError (a ValueError): one line
        if args.threads < 0:
            raise ValueError(f"--threads: expected 0 (auto) or more, got {args.threads}")
        set_torch_threads(args.threads)
        env_kwargs = args.env_kwargs
        abstraction = fit_abstraction(
            args.env_id,
            args.episodes,
            args.out,
            policy=args.policy,
            seed=args.seed,
            k=args.k,
            milestones=args.milestones,
            top_k=args.top_k,
            min_support=args.min_support,
            env_kwargs=env_kwargs,
            max_steps=args.max_steps,
            model_path=args.model_path,
            progress=args.progress,
        )
    except (ValueError, KeyError, TypeError, FileNotFoundError, gym.error.Error) as err:
        # json.JSONDecodeError is a ValueError; gym.error.Error covers an unknown env id
        print(f"mvpo-fit-abstraction: {err}", file=sys.stderr)
        return 2
    source = abstraction.milestones_from
    print(
        f"wrote {args.out}: k={abstraction.k}, milestones ({source}): {abstraction.milestone_names}"
    )
    if args.milestones == "auto" and source != "learned":
        print(
            f"every episode of the {args.policy!r} policy had the same return: the milestones "
            f"are the env's rules ({source}); learn them from a policy that sometimes succeeds "
            "(--policy RUN_DIR, docs/abstractions.md)"
        )
    print(f"use it with gym.make({args.env_id!r}, abstraction='learned:{args.out}')")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
