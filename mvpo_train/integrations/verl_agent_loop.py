"""verl agent loop that plays any ``mvpo/*`` env turn by turn (docs/scaling.md, "verl").

Registered in verl's agent-loop registry as ``mvpo_env`` (select it with the dataset column
``agent_name="mvpo_env"`` or ``actor_rollout_ref.rollout.agent.default_agent_loop=mvpo_env``).

Each dataset row names its episode in a non-tensor column ``mvpo_env`` (or in
``extra_info["mvpo_env"]``), a dict with

* ``env_id`` (required): a Gymnasium id, e.g. ``mvpo/ALFWorld-v0``;
* ``seed`` (required): the reset seed, i.e. the task index (docs/environments.md: every mvpo
  env picks its task as a pure function of the seed; verl's ``rollout.n`` copies of a row share
  it, so a verl group is a group of the same task, as the estimators expect);
* optional ``env_kwargs`` (to ``gym.make``), ``template`` (prompt style, default ``"paper"``; ``"seed"``, its former name, reads as it),
  ``invalid_penalty`` (default 0.1, the trainer's rule of :mod:`mvpo_train.projection`),
  ``require_think`` (default False).

The conversation is one user message per observation, rendered by the project's prompt template
(:func:`mvpo_train.prompts.get_template`) without the history window (the chat holds the
history), and one assistant message per action; generated text is projected to an action with
the template's projection. Tokens are built with verl's continuous-token builder
(``ct_build_initial_tokens``, ``ct_merge_assistant_token``, ``ct_merge_context_msg``), so the
response mask is 1 on generated tokens and 0 on observation tokens.

``extra_fields`` gets what :mod:`mvpo_train.integrations.verl` reads: ``mvpo_steps`` (one dict
per turn: anchor, signature, milestones, action, reward, terminated, truncated, success,
env_reward, format_ok) and ``mvpo_turn_spans`` (the response-token range of each assistant
turn); ``reward_score`` is the episode return (sum of the step rewards), which verl puts on the
last response token. When the response budget (``rollout.response_length``) or
``max_turns`` ends an episode before the env does, the last step is marked ``truncated``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any
from uuid import uuid4

import gymnasium as gym
from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    register,
)

import mvpo_envs  # noqa: F401  (registers the mvpo/* ids)
from mvpo_train.batch import canonical_action
from mvpo_train.projection import get_projection
from mvpo_train.prompts import get_template

__all__ = ["AGENT_NAME", "MvpoEnvAgentLoop", "episode_spec"]

AGENT_NAME = "mvpo_env"
_SPEC_COLUMN = "mvpo_env"


def episode_spec(row: Mapping[str, Any]) -> dict[str, Any]:
    """The ``mvpo_env`` dict of a dataset row (column or ``extra_info``), checked."""
    spec = row.get(_SPEC_COLUMN)
    if spec is None:
        spec = (row.get("extra_info") or {}).get(_SPEC_COLUMN)
    if not isinstance(spec, Mapping):
        raise ValueError(
            f"mvpo_env agent loop: the dataset row needs a dict column '{_SPEC_COLUMN}' (or "
            f"extra_info['{_SPEC_COLUMN}']) with env_id and seed; row columns: {sorted(row)}"
        )
    missing = [k for k in ("env_id", "seed") if k not in spec]
    if missing:
        raise ValueError(f"mvpo_env agent loop: '{_SPEC_COLUMN}' is missing {missing}")
    return dict(spec)


@register(AGENT_NAME)
class MvpoEnvAgentLoop(AgentLoopBase):
    """Plays one mvpo episode per dataset row; see the module docstring."""

    def __init__(self, *args: Any, max_turns: int | None = None, **kwargs: Any):
        kwargs.pop("tools", None)  # verl passes its tool list to every loop; envs have none
        super().__init__(*args, **kwargs)
        self.prompt_length = self.rollout_config.prompt_length
        self.response_length = self.rollout_config.response_length
        self.max_turns = max_turns

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        spec = episode_spec(kwargs)
        template = get_template(spec["env_id"], spec.get("template", "paper"))
        project = get_projection(template.projection)
        penalty_value = float(spec.get("invalid_penalty", 0.1))
        require_think = bool(spec.get("require_think", False))
        env = gym.make(spec["env_id"], **dict(spec.get("env_kwargs") or {}))
        try:
            return await self._play(
                env, int(spec["seed"]), template, project, penalty_value, require_think,
                sampling_params,
            )  # fmt: skip
        finally:
            env.close()

    async def _play(
        self, env, seed, template, project, penalty_value, require_think, sampling_params
    ) -> AgentLoopOutput:
        loop = asyncio.get_running_loop()
        obs, info = await loop.run_in_executor(None, lambda: env.reset(seed=seed))
        task = str(info.get("task", ""))

        def user_message(observation: str, step_info: Mapping[str, Any], t: int) -> dict:
            admissible = list(step_info.get("admissible_actions", []))
            return {
                "role": "user",
                "content": template.render(task, observation, admissible, [], t),
            }

        messages = [user_message(obs, info, 0)]
        runtime_ids = await self.ct_build_initial_tokens(messages)
        response_mask: list[int] = []
        steps: list[dict[str, Any]] = []
        spans: list[tuple[int, int]] = []
        metrics: dict[str, Any] = {}
        request_id = uuid4().hex
        t = 0
        while True:
            out = await self.server_manager.generate(
                request_id=request_id, prompt_ids=runtime_ids, sampling_params=sampling_params
            )
            start = len(response_mask)
            merged, response_mask, _ = await self.ct_merge_assistant_token(
                runtime_ids, out.token_ids, response_mask
            )
            runtime_ids = merged.token_ids
            end = min(len(response_mask), self.response_length)
            spans.append((start, end))
            text = self.tokenizer.decode(out.token_ids, skip_special_tokens=True)
            proj = project(text, info.get("admissible_actions"), require_think)
            messages.append({"role": "assistant", "content": text})
            obs, reward, terminated, truncated, info2 = await loop.run_in_executor(
                None, env.step, proj.action
            )
            invalid = (not proj.valid) or bool(info2.get("invalid_action", False))
            step_reward = float(reward) - (penalty_value if invalid else 0.0)
            budget_spent = len(response_mask) >= self.response_length or (
                self.max_turns is not None and t + 1 >= self.max_turns
            )
            done = bool(terminated) or bool(truncated)
            steps.append(
                {
                    "anchor": str(info.get("anchor", "")),
                    "signature": str(info.get("signature", "")),
                    "milestones": tuple(info2.get("milestones", ())),
                    "action": canonical_action(proj.action),
                    "reward": step_reward,
                    "env_reward": float(reward),
                    "format_ok": bool(proj.valid),
                    "terminated": bool(terminated),
                    "truncated": (bool(truncated) or budget_spent) and not bool(terminated),
                }
            )
            t += 1
            info = info2
            if done or budget_spent:
                won = bool(info2.get("won", False)) if done else False
                for s in steps:
                    s["success"] = won
                break
            previous = list(messages)
            messages.append(user_message(obs, info, t))
            merged, mask_after, _ = await self.ct_merge_context_msg(
                previous, messages, runtime_ids, response_mask
            )
            if len(mask_after) >= self.response_length:
                # the next observation does not fit: the episode is cut here
                steps[-1]["truncated"] = True
                for s in steps:
                    s["success"] = False
                break
            runtime_ids, response_mask = merged.token_ids, mask_after

        prompt_len = len(runtime_ids) - len(response_mask)
        response_ids = runtime_ids[prompt_len:]
        episode_return = float(sum(s["reward"] for s in steps))
        return AgentLoopOutput(
            prompt_ids=runtime_ids[:prompt_len],
            response_ids=response_ids[: self.response_length],
            response_mask=response_mask[: self.response_length],
            reward_score=episode_return,
            num_turns=2 * len(steps),
            metrics=AgentLoopMetrics(**metrics),
            extra_fields={
                "mvpo_steps": steps,
                "mvpo_turn_spans": spans,
                "turn_scores": [s["reward"] for s in steps],
                "tool_rewards": [],
            },
        )
