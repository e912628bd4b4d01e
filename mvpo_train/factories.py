"""What :func:`mvpo_train.trainer.train` builds from a :class:`~mvpo_train.config.TrainConfig`
before its loop (docs/training.md; docs/architecture.md, "Who owns what"): the policy and its
frozen reference (looked up in :mod:`mvpo_train.policies`), the generation backend (in
:mod:`mvpo_train.backends`), the grouped vector env, the rollout and loss
settings, the task sampler, the learned-abstraction refit and the progress bar; and the checks
that run before anything heavy loads (env id registered, model folder present)."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import numpy as np
import torch

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_envs.vector import GroupedVectorEnv, build_batch
from mvpo_train.abstraction_refit import AbstractionRefit, RefitConfig
from mvpo_train.backends import get_backend_kind
from mvpo_train.config import ConfigError, TrainConfig
from mvpo_train.policies import Policy, get_policy_kind, make_policy
from mvpo_train.prompts import get_template
from mvpo_train.rollout import (
    ROLLOUT_INFO_KEYS,
    RolloutCollector,
    RolloutConfig,
    check_score_candidates,
)

__all__ = [
    "check_runtime",
    "frozen_copy",
    "load_policy",
    "make_generation_backend",
    "make_refit",
    "make_venv",
    "progress_bar",
    "quiet_transformers",
    "rollout_config",
    "sample_tasks",
    "seed_everything",
]


def check_runtime(cfg: TrainConfig) -> None:
    """The env id is registered, the policy plays ``cfg.action_mode`` and its own check passes,
    e.g. the LM's model folder exists (before anything heavy loads)."""
    import gymnasium as gym

    if cfg.env_id not in gym.registry:
        ours = sorted(k for k in gym.registry if k.startswith("mvpo/"))
        raise ConfigError(
            f"env_id: unknown env id {cfg.env_id!r}; registered: {', '.join(ours)} "
            "(or any other registered Gymnasium id)"
        )
    kind = get_policy_kind(cfg.policy)
    if cfg.action_mode not in kind.action_modes:
        modes = " or ".join(repr(m) for m in kind.action_modes)
        raise ConfigError(f"policy: {cfg.policy!r} needs action_mode={modes}")
    if kind.check is not None:  # the encoder checks its head folder when it loads
        kind.check(cfg)
    if cfg.lora_merge_to:  # a new folder: found now, not after the run
        from mvpo_train.lora import check_merge_target

        check_merge_target(cfg.lora_merge_to)


def quiet_transformers() -> None:
    """No per-call progress bars from transformers (loading / saving weights)."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except Exception:  # pragma: no cover
        pass


def seed_everything(seed: int) -> None:
    """Python's, NumPy's and torch's global generators seeded with ``seed``."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def load_policy(cfg: TrainConfig, model: str | None = None) -> Policy:
    """The policy of ``cfg`` (``model`` overrides ``cfg.model``, e.g. a checkpoint folder): the
    loader registered under ``cfg.policy`` (:func:`mvpo_train.policies.make_policy`)."""
    return make_policy(cfg.policy, cfg, model)


def frozen_copy(policy: Policy) -> Policy:
    """The frozen reference of ``policy`` (KL penalty): its own :meth:`Policy.frozen_copy`."""
    return policy.frozen_copy()


def make_generation_backend(cfg: TrainConfig, policy: Policy) -> Any:
    """The generation backend registered under ``cfg.backend`` (HF, vLLM, ...), ``None`` in
    score mode: built with ``top_p``, ``seed`` and the config fields the backend names."""
    if cfg.action_mode != "generate":
        return None
    kind = get_backend_kind(cfg.backend)
    kwargs: dict[str, Any] = {"top_p": cfg.top_p, "seed": cfg.seed}
    kwargs.update({key: getattr(cfg, name) for key, name in kind.config_fields.items()})
    return kind.factory(policy, **kwargs)


def make_venv(cfg: TrainConfig, split: str, num_groups: int, group_size: int) -> GroupedVectorEnv:
    """The grouped vector env of ``cfg``; an env that refuses its split or keywords is a
    :class:`ConfigError` carrying the env's message, and so is, in score mode, a first page
    that lists an admissible template such as ``search[<query>]`` or SearchQA's
    ``<search> query </search>`` (:func:`~mvpo_train.rollout.check_score_candidates`).

    It merges only the info keys the rollout reads
    (:data:`~mvpo_train.rollout.ROLLOUT_INFO_KEYS`), and the probe env and the sub-envs are
    built as one :func:`~mvpo_envs.build_batch.build_batch` (data verified once)."""
    kwargs = dict(cfg.env_kwargs)
    if cfg.abstraction and cfg.abstraction != "learned":
        kwargs.setdefault("abstraction", cfg.abstraction)
    kwargs.setdefault("split", split)
    if split != cfg.split:
        kwargs["split"] = split
    if cfg.max_steps:
        kwargs["max_episode_steps"] = cfg.max_steps
    with build_batch():
        return _make_venv(cfg, kwargs, num_groups, group_size)


def _make_venv(
    cfg: TrainConfig, kwargs: dict[str, Any], num_groups: int, group_size: int
) -> GroupedVectorEnv:
    try:
        # another env's abstraction fails only at reset, and score mode needs the first page's
        # admissible actions: probe once (its own env: the venv's episodes are untouched)
        if "abstraction" in kwargs or cfg.action_mode == "score":
            import gymnasium as gym

            probe = gym.make(cfg.env_id, **kwargs)
            try:
                _, probe_info = probe.reset(seed=0)
            finally:
                probe.close()
            if cfg.action_mode == "score":  # a policy that cannot generate: no hint
                check_score_candidates(
                    probe_info.get("admissible_actions") or [],
                    cfg.env_id,
                    generate_hint=get_policy_kind(cfg.policy).generates,
                )
        return GroupedVectorEnv(
            cfg.env_id,
            num_groups,
            group_size,
            vectorization_mode=cfg.vectorization,
            info_keys=ROLLOUT_INFO_KEYS,
            **kwargs,
        )
    except ConfigError:
        raise
    except (TypeError, ValueError, FileNotFoundError) as err:  # the env's own message
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ConfigError(
            f"split / env_kwargs: {cfg.env_id} refused split={kwargs['split']!r}, "
            f"env_kwargs={cfg.env_kwargs}: {first}"
        ) from err


def rollout_config(cfg: TrainConfig) -> RolloutConfig:
    """The rollout settings of ``cfg`` (:mod:`mvpo_train.rollout`): every field of
    :class:`RolloutConfig` takes the config field of the same name."""
    return RolloutConfig(
        **{f.name: getattr(cfg, f.name) for f in dataclasses.fields(RolloutConfig)}
    )


def make_collector(
    cfg: TrainConfig,
    venv: GroupedVectorEnv,
    policy: Policy,
    generator: torch.Generator,
    backend: Any = None,
) -> RolloutCollector:
    """The rollout collector of ``cfg`` over ``venv``: its env's prompt template in
    ``cfg.prompt_style``, :func:`rollout_config`, and ``backend`` (default: the generation
    backend of :func:`make_generation_backend`, ``None`` in score mode); actions are sampled
    with ``generator``."""
    if backend is None:
        backend = make_generation_backend(cfg, policy)
    template = get_template(cfg.env_id, cfg.prompt_style)
    return RolloutCollector(venv, policy, template, rollout_config(cfg), backend, generator)


def sample_tasks(cfg: TrainConfig, num_tasks: int, rng: np.random.Generator) -> list[int]:
    """``cfg.num_groups`` task indices (one per group of the *global* batch): drawn from the
    ``cfg.tasks`` pool if given, else from the split's ``num_tasks`` tasks, distinct when there
    are enough. Every rank draws the same list from the same ``rng`` and takes its shard."""
    pool = [int(x) for x in cfg.tasks] if cfg.tasks else list(range(num_tasks))
    replace = cfg.num_groups > len(pool)
    return [pool[int(i)] for i in rng.choice(len(pool), size=cfg.num_groups, replace=replace)]


def make_refit(cfg: TrainConfig) -> AbstractionRefit | None:
    """The learned abstraction fitted from this run's rollouts (docs/abstractions.md), or
    ``None`` unless ``abstraction="learned"``."""
    if cfg.abstraction != "learned":
        return None
    kwargs = {
        "refit_every": cfg.abstraction_refit_every,
        "seed": cfg.seed,
        **cfg.abstraction_kwargs,
    }
    return AbstractionRefit(RefitConfig(**kwargs))


def progress_bar(cfg: TrainConfig, start: int) -> Any:
    """The run's tqdm bar from iteration ``start`` (``None`` with ``progress=False``;
    :func:`mvpo_train.progress.iteration_bar`)."""
    from mvpo_train.progress import iteration_bar

    return iteration_bar(cfg.progress, f"mvpo-train [{cfg.estimator}]", cfg.iterations, start)
