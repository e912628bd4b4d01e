"""What one env's learning study sets (``benchmarks/learning.py --env``; docs/learning_study.md):
:class:`StudyEnv` (the env, its arms, the flags every run shares, the held-out splits, where
runs and results go, how the results page names them), and the settings read from a study's
arguments: the final evaluations, each arm's own flags, the shared embedding cache, the task
count of a split. The studies themselves are data in
``benchmarks/learning_env.py``."""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from mvpo_train.study import curves

__all__ = ["StudyEnv", "arm_flags", "count_tasks", "embedding_cache", "final_evals", "heldout_keys"]


class StudyEnv(NamedTuple):
    """What one env's study sets (``--env``): the env, the flags every run shares, the
    held-out splits, the default arms and pairs, where runs and results go, and how the
    results file names them. ``child``: a script that runs ``train_main`` / ``eval_main`` with
    the study's env and estimators registered (``None``: ``mvpo_train.cli`` itself)."""

    name: str
    env_id: str  # the env the warm start clones and the held-out split counts come from
    title: str
    flags: tuple[str, ...]
    final_evals: tuple[tuple[str, int], ...]
    arms: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...]
    warm: str
    base: str
    out: str
    env_kwargs: str = "{}"
    warm_args: str = ""
    iterations: int = 30
    num_groups: int = 8
    eval_every: int = 10
    eval_episodes: int = 4
    eval_env_id: str | None = None  # mvpo-eval --env-id (None: the run's own)
    child: Path | None = None
    scores: bool = False  # the eval files hold the env's ``score`` (reported beside success)
    arm_flags: dict[str, list[str]] = {}  # arms only this env has (never mutated)
    demos: str = "the train walkthroughs"
    steps: int = 50
    setting: str = ""  # the markdown's sentence on the env, after the warm start
    extra_settings: dict = {}  # added to learning.json's settings (never mutated)
    base_arms: dict[str, list[str]] = {}  # arm name -> its mvpo-train flags (never mutated)
    defaults_sentence: str = ""  # the page's words for the env without --env-kwargs
    score_note: str = ""  # the page's sentence on the score (with ``scores``)
    task_types: bool = False  # the held-out files hold success per task type (a table)
    warm_flags: tuple[str, ...] = ()  # flags of the warm start's cloning (e.g. its env id)
    candidates: str = ""  # where the docs explain the warm-start candidates (shown if measured)

    def arm(self, name: str) -> list[str]:
        """The mvpo-train flags of arm ``name``."""
        return list(self.arm_flags.get(name) or self.base_arms[name])

    def arm_names(self) -> list[str]:
        return sorted({*self.base_arms, *self.arm_flags})

    def sentence(self, env_kwargs: str) -> str:
        """The page's words for the env of the runs (after the warm start)."""
        if self.defaults_sentence and env_kwargs.strip() in ("", "{}"):
            return self.defaults_sentence
        words = f"`{self.env_id}` with `--env-kwargs '{env_kwargs}'`"
        return words + (f", all train tasks, {self.setting}" if self.setting else "")


def final_evals(env: StudyEnv, episodes: Sequence[int] | None) -> tuple[tuple[str, int], ...]:
    """The final held-out evaluations: ``episodes`` (``--final-episodes``, or the env's
    defaults) per task of each of ``env``'s splits."""
    eps = episodes or [e for _, e in env.final_evals]
    return tuple((split, int(e)) for (split, _), e in zip(env.final_evals, eps, strict=True))


def arm_flags(args: argparse.Namespace) -> dict[str, list[str]]:
    """``--arm-flags ARM='FLAGS'``: mvpo-train flags of one arm's runs only, after every other
    flag (so ``--lr``/``--kl-coef`` there win): the tuning grid's choice per arm."""
    out: dict[str, list[str]] = {}
    for item in getattr(args, "arm_flags", None) or []:
        arm, sep, flags = item.partition("=")
        if not sep or arm not in args.arms:
            raise SystemExit(f"--arm-flags: expected ARM='FLAGS' with ARM one of --arms "
                             f"{list(args.arms)}, got {item!r}")  # fmt: skip
        out[arm] = out.get(arm, []) + shlex.split(flags)
    return out


def embedding_cache(args: argparse.Namespace) -> str:
    """The embedding cache file shared by every run of the sweep (docs/policies.md)."""
    return str(getattr(args, "embedding_cache", None) or Path(args.base) / "embeddings.npz")


def count_tasks(env_kwargs: str, split: str, env_id: str) -> int | None:
    """Tasks of ``split`` of ``env_id`` with the study's env kwargs (None if the split cannot
    be built here)."""
    import gymnasium as gym

    import mvpo_envs  # noqa: F401  (registers the envs)

    try:
        env = gym.make(env_id, **{**json.loads(env_kwargs or "{}"), "split": split})
    except Exception:  # a split this data does not have
        return None
    try:
        return len(env.unwrapped.task_ids)
    finally:
        env.close()


def heldout_keys(env: StudyEnv) -> list[str]:
    """The per-seed held-out values of ``env``'s study (:func:`mvpo_train.study.curves.heldout_keys`)."""
    return curves.heldout_keys([s for s, _ in env.final_evals], env.scores)
