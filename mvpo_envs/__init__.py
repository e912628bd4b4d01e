"""mvpo_envs: Gymnasium text environments for long-horizon LLM-agent RL.

``import mvpo_envs`` registers every declared env id (each env package's ``spec.py``,
:mod:`mvpo_envs.declaration`): ``mvpo/ALFWorld-v0``, ``mvpo/WebShop-v0``, ``mvpo/SearchQA-v0``,
``mvpo/MilestoneChain-v0``; ``gym.make("mvpo_envs:mvpo/ALFWorld-v0")`` works without a prior
import.
"""

from mvpo_envs.registration import register_envs

register_envs()

__all__ = ["register_envs"]
