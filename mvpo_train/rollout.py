"""Rollout: B groups x G rollouts from a :class:`GroupedVectorEnv` into a :class:`StepBatch`.

docs/architecture.md (``rollout.collect() -> StepBatch``) and docs/estimators.md §0 (the batch).
Each call plays one episode in every sub-env: group ``b`` plays task ``task_indices[b]`` in
its G sub-envs. Every step, the model is called once for all still-running envs (batched);
an env whose episode ended gets the no-op ``""`` and its Gymnasium ``NEXT_STEP`` autoreset
result is ignored. One row per env step, with

* ``group``, ``traj`` (= sub-env index), ``t``, ``reward`` (env reward + the invalid-action
  penalty: ``-invalid_penalty`` when the output was malformed *or* the env flagged the action
  inadmissible, in both action modes; the rule is in :mod:`mvpo_train.projection`),
  ``terminated``, ``truncated`` from the vector env;
* ``anchor`` = ``info["anchor"]`` and ``signature`` = ``info["signature"]`` of the observation
  the action was taken in; ``milestones`` = ``info["milestones"]`` of the transition;
* ``action`` (canonical) and ``success`` (the episode was won);
* ``extras``: ``prompt_ids``, ``action_ids`` (the chosen candidate's or the generated tokens),
  ``old_logp`` (per action token; one value per row in ``score_logprob="choice"`` mode),
  ``cand_ids`` + ``choice`` (score mode), ``env_reward``, ``format_penalty``,
  ``format_ok``, ``invalid_action``, ``task_type``, ``task_id`` (``info["task_id"]``),
  ``task_index`` (the task the group was given), ``prompt`` (the prompt text the policy read),
  ``admissible_actions`` (the list it was offered; ``mvpo-export`` writes these, docs/inspect.md),
  and ``oracle_progress`` (the step's exact
  progress label, 1 / 0 / -1 unknown) when the env's infos carry a known one, and
  ``oracle_plan_decrease`` (``info["oracle_plan_length"]`` before the step minus after it,
  NaN unknown) when the env's infos carry plan lengths (docs/alignment.md).

The collector reads only the info contract of docs/environments.md, so it runs any mvpo env.
In score mode an admissible *template* (``name[<slot>]`` or ``<tag> slot </tag>``: a
placeholder nobody fills) is refused with one line naming the fix, the env declaration's
``score_template_hint`` when it has one (:func:`check_score_candidates`; docs/webshop.md "Score
mode", docs/searchqa.md "Training"): sent as it is, it would fail every episode silently.
The policy gets each prompt as a :class:`~mvpo_train.prompts.Prompt`, its text and its pieces.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from mvpo_envs.action_templates import TAG_TEMPLATE, TEMPLATE
from mvpo_envs.declaration import get_declaration
from mvpo_envs.vector import GroupedVectorEnv, unbatch_infos
from mvpo_train.batch import ORACLE_PLAN_DECREASE, ORACLE_PROGRESS, StepBatch, canonical_action
from mvpo_train.config import ConfigError
from mvpo_train.policy import Policy
from mvpo_train.projection import INVALID_ACTION, get_projection
from mvpo_train.prompts import PromptBuilder, PromptTemplate

__all__ = ["ROLLOUT_INFO_KEYS", "RolloutConfig", "RolloutCollector", "check_score_candidates"]


def check_score_candidates(
    admissible: Sequence[str], env_id: str, generate_hint: bool = True
) -> None:
    """Raise :class:`ConfigError` (one line, the fix named) if an admissible action is a
    template with a placeholder: a policy that picks among the admissible actions would send
    it as it is, and success stays 0.

    * ``name[<slot>]``, such as ``search[<query>]`` (a search for ``<query>`` finds nothing):
      the fix is an env keyword that fills it, named by the env declaration's
      ``score_template_hint`` (docs/webshop.md, "Score mode");
    * ``<tag> slot </tag>``, such as ``<search> query </search>`` / ``<answer> text </answer>``
      (a search for "query", the answer "text"): the answer is free text, which no list of
      candidates holds, so the fix is ``--action-mode generate`` (docs/searchqa.md,
      "Training").

    ``generate_hint``: name ``--action-mode generate`` (the trainer with the LM policy);
    without it (a policy or tool that only scores: the encoder policy, its warm start) a tag
    template names ``mvpo-train --action-mode generate`` as the way to train that env."""
    for action in admissible:
        if "<" not in str(action):  # both template forms hold "<": most actions stop here
            continue
        m = TEMPLATE.match(str(action))
        if m is not None:
            generate = ", or use --action-mode generate" if generate_hint else ""
            declaration = get_declaration(env_id)
            hint = declaration.score_template_hint if declaration is not None else ""
            fix = f"{hint or 'use an env keyword that fills the template'}{generate}"
            raise ConfigError(
                f"env_kwargs: score mode picks among info['admissible_actions'], and {env_id} "
                f"lists the template {action!r}, which would be sent as it is (nothing fills "
                f"<{m['slot']}>, so every episode fails); {fix}"
            )
        tag = TAG_TEMPLATE.match(str(action))
        if tag is not None:
            generate = "--action-mode generate --prompt-style paper"
            fix = (
                f"use {generate} (Search-R1's prompt: the model writes the query and the answer)"
                if generate_hint
                else f"score mode cannot play it; train it with the LM policy: mvpo-train "
                f"{generate}"
            )
            raise ConfigError(
                f"action_mode: score mode picks among info['admissible_actions'], and {env_id} "
                f"lists the template {action!r}, which would be sent as it is (the word "
                f"{tag['slot']!r} in place of real text, so every episode fails); its answers "
                f"are free text, which no list of candidates holds: {fix}"
            )


@dataclass
class RolloutConfig:
    """What the collector needs from the training config (see :mod:`mvpo_train.config`)."""

    action_mode: str = "score"  # score | generate
    score_norm: str = "mean"  # mean | sum
    score_logprob: str = "choice"  # choice | tokens
    history_length: int = 3
    max_new_tokens: int = 256
    invalid_penalty: float = 0.1
    require_think: bool = False

    def __post_init__(self) -> None:
        if self.action_mode not in ("score", "generate"):
            raise ValueError(f"action_mode must be 'score' or 'generate', got {self.action_mode!r}")
        if self.score_norm not in ("mean", "sum"):
            raise ValueError(f"score_norm must be 'mean' or 'sum', got {self.score_norm!r}")
        if self.score_logprob not in ("choice", "tokens"):
            raise ValueError(
                f"score_logprob must be 'choice' or 'tokens', got {self.score_logprob!r}"
            )


class RolloutCollector:
    """Plays batches of episodes with a policy; see the module docstring.

    ``backend`` generates in ``generate`` mode (HF or vLLM); ``generator`` is the torch RNG
    that samples actions in ``score`` mode (its state is checkpointed by the trainer).
    """

    def __init__(
        self,
        venv: GroupedVectorEnv,
        policy: Policy,
        template: PromptTemplate,
        config: RolloutConfig,
        backend: Any = None,
        generator: torch.Generator | None = None,
    ):
        self.venv = venv
        self.policy = policy
        self.template = template
        self.config = config
        self.backend = backend
        self.generator = generator or torch.Generator().manual_seed(0)
        self.project = get_projection(template.projection)
        if config.action_mode == "generate" and backend is None:
            raise ValueError("generate mode needs a backend")

    # ------------------------------------------------------------------ one batch
    @torch.no_grad()
    def collect(
        self,
        task_indices: Sequence[int],
        *,
        greedy: bool = False,
        on_step: Callable[[int], None] | None = None,
    ) -> StepBatch:
        """One episode per sub-env; group ``b`` on task ``task_indices[b]``. ``on_step`` is
        called after every environment step with the number of episodes that ended in it
        (progress: :func:`mvpo_train.progress.episode_ticker`)."""
        cfg = self.config
        venv = self.venv
        n = venv.num_envs
        obs, infos = venv.reset_groups(task_indices)
        info = unbatch_infos(infos, n)
        prompts = PromptBuilder(self.template, n, cfg.history_length)
        for i in range(n):
            prompts.reset(i, obs[i], str(info[i].get("task", "")))
        active = np.ones(n, dtype=bool)
        t = np.zeros(n, dtype=np.int64)
        rows: list[dict[str, Any]] = []
        extras: dict[str, list] = {k: [] for k in _EXTRA_KEYS}
        traj_rows: list[list[int]] = [[] for _ in range(n)]
        won = np.zeros(n, dtype=bool)
        while active.any():
            idx = np.flatnonzero(active).tolist()
            texts = [prompts.prompt(i, info[i].get("admissible_actions", [])) for i in idx]
            prompt_ids = [self.policy.prompt_ids(x, self.template, cfg.action_mode) for x in texts]
            if cfg.action_mode == "score":
                step = self._score_step(idx, info, prompt_ids, greedy)
            else:
                step = self._generate_step(idx, info, prompt_ids, greedy)
            actions = [INVALID_ACTION] * n
            for k, i in enumerate(idx):
                actions[i] = step["action"][k]
            obs2, rewards, terminated, truncated, infos2 = venv.step(actions)
            info2 = unbatch_infos(infos2, n)
            for k, i in enumerate(idx):
                # the invalid-action rule (mvpo_train.projection): malformed or inadmissible,
                # one penalty either way, in both action modes
                invalid = not step["format_ok"][k] or bool(info2[i].get("invalid_action", False))
                penalty = -float(cfg.invalid_penalty) if invalid else 0.0
                env_reward = float(rewards[i])
                traj_rows[i].append(len(rows))
                rows.append(
                    {
                        "group": int(venv.group_of_env[i]),
                        "traj": i,
                        "t": int(t[i]),
                        "reward": env_reward + penalty,
                        "terminated": bool(terminated[i]),
                        "truncated": bool(truncated[i]) and not bool(terminated[i]),
                        "anchor": str(info[i].get("anchor", "")),
                        "signature": str(info[i].get("signature", "")),
                        "milestones": tuple(info2[i].get("milestones", ())),
                        "action": canonical_action(step["action"][k]),
                    }
                )
                extras["prompt_ids"].append(prompt_ids[k])
                extras["action_ids"].append(step["action_ids"][k])
                extras["old_logp"].append(step["old_logp"][k])
                extras["cand_ids"].append(step["cand_ids"][k])
                extras["choice"].append(step["choice"][k])
                extras["env_reward"].append(env_reward)
                extras["format_penalty"].append(penalty)
                extras["format_ok"].append(bool(step["format_ok"][k]))
                extras["invalid_action"].append(bool(info2[i].get("invalid_action", False)))
                extras["task_type"].append(str(info[i].get("task_type", "all")))
                extras["task_id"].append(str(info[i].get("task_id", "")))
                extras["task_index"].append(int(task_indices[int(venv.group_of_env[i])]))
                extras["prompt"].append(str(texts[k]))
                extras["admissible_actions"].append(
                    tuple(str(a) for a in info[i].get("admissible_actions", ()))
                )
                extras[ORACLE_PROGRESS].append(int(info2[i].get(ORACLE_PROGRESS, -1)))
                extras[ORACLE_PLAN_DECREASE].append(_plan_decrease(info[i], info2[i]))
                prompts.record(i, step["action"][k] or "(invalid)", obs2[i])
                t[i] += 1
                if terminated[i] or truncated[i]:
                    active[i] = False
                    won[i] = bool(info2[i].get("won", False))
            info = [info2[i] if active[i] else info[i] for i in range(n)]
            if on_step is not None:
                on_step(len(idx) - int(active[idx].sum()))
        for i in range(n):
            for r in traj_rows[i]:
                rows[r]["success"] = bool(won[i])
        extras["old_logp"] = [
            None if x is None else np.asarray(x, dtype=np.float64) for x in extras["old_logp"]
        ]
        if not any(x >= 0 for x in extras[ORACLE_PROGRESS]):  # no labels (docs/alignment.md)
            del extras[ORACLE_PROGRESS]
        if all(np.isnan(extras[ORACLE_PLAN_DECREASE])):  # no plan lengths
            del extras[ORACLE_PLAN_DECREASE]
        return StepBatch.from_steps(rows, extras=extras)

    # ------------------------------------------------------------------ action modes
    def _score_step(self, idx, info, prompt_ids, greedy) -> dict[str, list]:
        cfg = self.config
        cands_text = []
        for i in idx:
            adm = list(info[i].get("admissible_actions", []))
            if not adm:
                raise ValueError(
                    "score mode needs info['admissible_actions'] (empty list received)"
                )
            check_score_candidates(adm, self.venv.env_id)
            cands_text.append(adm)
        cand_ids = [[self.policy.candidate_ids(a, self.template) for a in c] for c in cands_text]
        res = self.policy.score_candidates(prompt_ids, cand_ids, norm=cfg.score_norm)
        out: dict[str, list] = {
            k: [] for k in ("action", "action_ids", "old_logp", "cand_ids", "choice", "format_ok")
        }
        for k in range(len(idx)):
            logp_choice = torch.log_softmax(res.scores[k].detach().double().cpu(), dim=-1)
            if greedy:
                j = int(torch.argmax(logp_choice))
            else:
                j = int(torch.multinomial(logp_choice.exp(), 1, generator=self.generator))
            out["action"].append(cands_text[k][j])
            out["action_ids"].append(cand_ids[k][j])
            if cfg.score_logprob == "choice":
                out["old_logp"].append([float(logp_choice[j])])
            else:
                out["old_logp"].append(res.token_logprobs(k, j).double().tolist())
            out["cand_ids"].append(cand_ids[k])
            out["choice"].append(j)
            out["format_ok"].append(True)
        return out

    def _generate_step(self, idx, info, prompt_ids, greedy) -> dict[str, list]:
        cfg = self.config
        responses = self.backend.generate(prompt_ids, cfg.max_new_tokens, greedy=greedy)
        out: dict[str, list] = {
            k: [] for k in ("action", "action_ids", "old_logp", "cand_ids", "choice", "format_ok")
        }
        for k, i in enumerate(idx):
            text = self.policy.decode(responses[k])
            proj = self.project(text, info[i].get("admissible_actions"), cfg.require_think)
            out["action"].append(proj.action)
            out["action_ids"].append(list(responses[k]) or [self.policy.pad_id])
            out["old_logp"].append(None)  # computed by the trainer's HF model (Logp phase)
            out["cand_ids"].append(None)
            out["choice"].append(-1)
            out["format_ok"].append(proj.valid)
        return out


_EXTRA_KEYS = (
    "prompt_ids", "action_ids", "old_logp", "cand_ids", "choice", "env_reward",
    "format_penalty", "format_ok", "invalid_action", "task_type", "task_id",
    "task_index", "prompt", "admissible_actions", ORACLE_PROGRESS,
    ORACLE_PLAN_DECREASE,
)  # fmt: skip


#: every ``info`` key :meth:`RolloutCollector.collect` reads: the trainer's vector env merges
#: only these (:func:`mvpo_train.factories.make_venv`, ``GroupedVectorEnv(info_keys=...)``);
#: tests/mvpo_train/test_rollout_info_keys.py fails when the rollout reads a key not listed.
#: The abstraction (``info["state"]``) runs inside each sub-env, before the filter.
ROLLOUT_INFO_KEYS = frozenset(
    {
        "task", "admissible_actions", "invalid_action", "anchor", "signature", "milestones",
        "task_type", "task_id", "won", ORACLE_PROGRESS, "oracle_plan_length",
    }
)  # fmt: skip


def _plan_decrease(before: dict[str, Any], after: dict[str, Any]) -> float:
    """``info["oracle_plan_length"]`` before the step minus after it; NaN when either is
    absent or negative (unknown)."""
    a, b = before.get("oracle_plan_length", -1), after.get("oracle_plan_length", -1)
    return float(a - b) if a >= 0 and b >= 0 else float("nan")
