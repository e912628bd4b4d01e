"""What the WebShop learning study adds to ``mvpo-train`` / ``mvpo-eval`` (docs/learning_study.md,
"WebShop study"); ``benchmarks/learning.py --env webshop`` runs every train and eval command
through this file::

    python benchmarks/learning_webshop.py train_main ARGS...   # = mvpo-train ARGS
    python benchmarks/learning_webshop.py eval_main ARGS...    # = mvpo-eval ARGS, + WebShop's score

It registers :data:`SUCCESS_ENV_ID`, the id the study's runs name in their ``config.yaml``:
``mvpo/WebShop-v0`` with the MVPO paper's success reward (``success_reward=True``) and
``search_query="instruction"``; ``eval_main`` adds WebShop's score of every episode to the
result file (:func:`eval_with_scores`).
"""

from __future__ import annotations

import sys
from typing import Any

from mvpo_train.study import eval_scores

#: ``mvpo/WebShop-v0`` with the MVPO paper's success reward (1.0 for a won episode, else 0)
SUCCESS_ENV_ID = "mvpo-study/WebShop-SuccessReward-v0"
WEBSHOP_ID = "mvpo/WebShop-v0"


def make_success_reward_webshop(**kwargs: Any) -> Any:
    """``mvpo/WebShop-v0`` (``kwargs`` as its own) with ``success_reward=True``: 1.0 on the
    step that wins (``terminated`` with ``info["won"]``), else 0."""
    from mvpo_envs.webshop.env import WebShopEnv

    return WebShopEnv(**{"search_query": "instruction", **kwargs, "success_reward": True})


def register() -> None:
    """Register :data:`SUCCESS_ENV_ID` (with ``mvpo/WebShop-v0``'s step limit and prompt
    templates); idempotent."""
    import gymnasium as gym

    import mvpo_envs  # noqa: F401  (registers the mvpo ids)
    from mvpo_train.prompts import get_template, register_template

    if SUCCESS_ENV_ID not in gym.registry:
        gym.register(
            id=SUCCESS_ENV_ID,
            entry_point=make_success_reward_webshop,
            max_episode_steps=gym.spec(WEBSHOP_ID).max_episode_steps,
        )
        for style in ("compact", "seed"):  # the same prompts as mvpo/WebShop-v0
            register_template(SUCCESS_ENV_ID, style, get_template(WEBSHOP_ID, style))


def eval_with_scores(argv: list[str]) -> int:
    """``mvpo-eval ARGV`` that also writes WebShop's score of every episode into ``--out``: its
    env return on ``mvpo/WebShop-v0`` (0 on every step but the purchase, which pays the score;
    0 if it never buys), :func:`mvpo_train.study.eval_scores.eval_with_scores`."""
    return eval_scores.eval_with_scores(argv, "learning_webshop.py eval_main", "WebShop's score")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("train_main", "eval_main"):
        raise SystemExit("usage: learning_webshop.py {train_main,eval_main} ARGS...")
    register()
    if argv[0] == "eval_main":
        return eval_with_scores(argv[1:])
    from mvpo_train.cli import train_main

    return train_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
