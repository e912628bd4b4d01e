"""mvpo_envs: Gymnasium text environments for long-horizon LLM-agent RL.

``import mvpo_envs`` registers ``mvpo/ALFWorld-v0``, ``mvpo/WebShop-v0`` and
``mvpo/SearchQA-v0``; ``gym.make("mvpo_envs:mvpo/ALFWorld-v0")`` works without a prior import.
"""

from mvpo_envs.registration import register_envs

register_envs()

__all__ = ["register_envs"]
