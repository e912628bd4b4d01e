"""Gymnasium registrations of the mvpo environments (docs/environments.md)."""

from __future__ import annotations

import gymnasium as gym

#: env id -> (entry point, max_episode_steps): the benchmarks' horizons. SearchQA: Search-R1's
#: ``max_turns=4`` search turns plus its final answer-only turn (docs/searchqa.md)
ENV_SPECS = {
    "mvpo/ALFWorld-v0": ("mvpo_envs.alfworld.env:AlfworldEnv", 50),
    "mvpo/WebShop-v0": ("mvpo_envs.webshop.env:WebShopEnv", 15),
    "mvpo/SearchQA-v0": ("mvpo_envs.searchqa.env:SearchQAEnv", 5),
    # the control task with a known answer (docs/control_task.md)
    "mvpo/MilestoneChain-v0": ("mvpo_envs.milestone_chain.env:MilestoneChainEnv", 50),
}


def register_envs() -> None:
    """Register every mvpo env id once (idempotent)."""
    for env_id, (entry_point, max_steps) in ENV_SPECS.items():
        if env_id not in gym.registry:
            gym.register(
                id=env_id,
                entry_point=entry_point,
                max_episode_steps=max_steps,
                disable_env_checker=False,
            )
