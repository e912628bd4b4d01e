"""``mvpo/MilestoneChain-v0``: the control task with a known answer (docs/control_task.md).

``layout`` draws the seeded layouts (one per task), ``world`` holds the rules and texts,
``oracle`` the shortest plans and optimal actions, ``env`` the Gymnasium env.
"""

from mvpo_envs.milestone_chain.env import SPLITS, MilestoneChainEnv

__all__ = ["SPLITS", "MilestoneChainEnv"]
