"""Prompt templates, chosen by environment id, and the per-env history that fills them.

docs/architecture.md ("The trainer knows nothing of any one environment: it reads only the info
contract and a prompt template chosen by env id"). A template turns the info contract
(``task``, ``admissible_actions``) plus the recent (observation, action) history into the text
the policy reads.

Two styles per environment family:

* ``seed``: the seeds' agent prompt (appendix A.2 of the MVPO paper, as in GiGPO's
  verl-agent): the task, the most recent observations and actions, the current observation,
  the admissible actions, and the instruction to reason inside ``<think> </think>`` and to
  answer inside ``<action> </action>``. Used by the ``generate`` action mode and by the GPU
  preset. Wording written for this project.
* ``compact``: a short text-game transcript (``Task: ...``, then ``observation`` /
  ``> action`` lines) for the ``score`` action mode of the tiny CPU model, where the admissible
  actions are scored rather than listed, and every prompt token costs CPU time.

In ``score`` mode the policy scores ``score_prefix + candidate + score_suffix`` after the prompt
(e.g. ``<action>go to fridge 1</action>``), so the closing tag tells ``go to drawer 1`` from
``go to drawer 10``. Add your own family with :func:`register_template`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = [
    "PromptBuilder",
    "PromptTemplate",
    "available_templates",
    "env_family",
    "get_template",
    "register_template",
]

_THINK_ACTION = (
    "Now it's your turn to take an action.\n"
    "You should first reason step-by-step about the current situation. This reasoning process "
    "MUST be enclosed within <think> </think> tags.\n"
    "Once you've finished your reasoning, you should choose an admissible action for the current "
    "step and present it within <action> </action> tags."
)


@dataclass(frozen=True)
class PromptTemplate:
    """The text of one prompt style (format fields in braces).

    ``first`` is used when there is no history yet, ``step`` otherwise. Fields available:
    ``task, observation, admissible, step (steps taken), step_no (step+1), n_history,
    history``. ``history_item`` formats one past ``(observation, action)`` pair
    (``index, observation, action``); items are joined with ``history_join``.
    ``use_chat`` says whether a tokenizer's chat template should wrap the prompt (``auto``
    policies follow it). ``projection`` names the parser of generated text
    (:mod:`mvpo_train.projection`).
    """

    name: str
    first: str
    step: str
    history_item: str
    history_join: str = " "
    score_prefix: str = "<action>"
    score_suffix: str = "</action>"
    use_chat: bool = True
    projection: str = "action_tag"
    admissible_join: str = ", "
    admissible_quote: str = "'"
    max_observation_chars: int = 4000

    def render(
        self,
        task: str,
        observation: str,
        admissible: Sequence[str],
        history: Sequence[tuple[str, str]],
        step: int,
    ) -> str:
        """The prompt text for the current observation given ``history`` (oldest first)."""
        q = self.admissible_quote
        values = {
            "task": task.strip(),
            "observation": _clip(observation.strip(), self.max_observation_chars),
            "admissible": self.admissible_join.join(f"{q}{a}{q}" for a in admissible),
            "step": step,
            "step_no": step + 1,
            "n_history": len(history),
            "history": self.history_join.join(
                self.history_item.format(
                    index=step - len(history) + k + 1,
                    observation=_clip(o.strip(), self.max_observation_chars),
                    action=a,
                )
                for k, (o, a) in enumerate(history)
            ),
        }
        body = self.first if not history else self.step
        return body.format(**values)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


# ------------------------------------------------------------------ built-in templates

ALFWORLD_SEED = PromptTemplate(
    name="seed",
    first=(
        "You are an expert agent operating in the ALFRED Embodied Environment.\n"
        "Your current observation is: {observation}\n"
        "Your admissible actions of the current situation are: [{admissible}].\n\n" + _THINK_ACTION
    ),
    step=(
        "You are an expert agent operating in the ALFRED Embodied Environment. "
        "Your task is to: {task}\n"
        "Prior to this step, you have already taken {step} step(s). Below are the most recent "
        "{n_history} observations and the corresponding actions you took: {history}\n"
        "You are now at step {step_no} and your current observation is: {observation}\n"
        "Your admissible actions of the current situation are: [{admissible}].\n\n" + _THINK_ACTION
    ),
    history_item="[Observation {index}: '{observation}', Action {index}: '{action}']",
)

WEBSHOP_SEED = PromptTemplate(
    name="seed",
    first=(
        "You are an expert autonomous agent operating in the WebShop e-commerce environment.\n"
        "Your task is to: {task}.\n"
        "Your current observation is: {observation}.\n"
        "Your admissible actions of the current situation are: [\n{admissible}\n].\n\n"
        + _THINK_ACTION
    ),
    step=(
        "You are an expert autonomous agent operating in the WebShop e-commerce environment.\n"
        "Your task is to: {task}.\n"
        "Prior to this step, you have already taken {step} step(s). Below are the most recent "
        "{n_history} observations and the corresponding actions you took: {history}\n"
        "You are now at step {step_no} and your current observation is: {observation}.\n"
        "Your admissible actions of the current situation are: [\n{admissible}\n].\n\n"
        + _THINK_ACTION
    ),
    history_item="[Observation {index}: '{observation}', Action {index}: '{action}']",
    admissible_join=",\n",
)

_SEARCH_R1_INSTRUCTION = (
    "Answer the given question. You must conduct reasoning inside <think> and </think> "
    "first every time you get new information. After reasoning, if you find you lack some "
    "knowledge, you can call a search engine by <search> query </search> and it will return "
    "the top searched results between <information> and </information>. You can search as "
    "many times as you want. If you find no further external knowledge needed, you can "
    "directly provide the answer inside <answer> and </answer>, without detailed "
    "illustrations. For example, <answer> Beijing </answer>.\nQuestion: {task}\n"
)

SEARCHQA_SEED = PromptTemplate(
    name="seed",
    first=_SEARCH_R1_INSTRUCTION,
    step=_SEARCH_R1_INSTRUCTION + "Your previous turns: {history}\nLatest result: {observation}\n",
    history_item="{action} {observation}",
    history_join="\n",
    score_prefix="",
    score_suffix="",
    projection="search_answer",
)

GENERIC_SEED = PromptTemplate(
    name="seed",
    first=(
        "You are an expert agent acting in a text environment. Your task is to: {task}\n"
        "Your current observation is: {observation}\n"
        "Your admissible actions of the current situation are: [{admissible}].\n\n" + _THINK_ACTION
    ),
    step=(
        "You are an expert agent acting in a text environment. Your task is to: {task}\n"
        "Prior to this step, you have already taken {step} step(s). Below are the most recent "
        "{n_history} observations and the corresponding actions you took: {history}\n"
        "You are now at step {step_no} and your current observation is: {observation}\n"
        "Your admissible actions of the current situation are: [{admissible}].\n\n" + _THINK_ACTION
    ),
    history_item="[Observation {index}: '{observation}', Action {index}: '{action}']",
)

_CHAIN_INTRO = (
    "You are an expert agent playing a text game: you walk through a keep and use its "
    "fixtures in the order the task gives. Your task is to: {task}\n"
)

#: mvpo/MilestoneChain-v0, the control task (docs/control_task.md)
MILESTONECHAIN_SEED = PromptTemplate(
    name="seed",
    first=(
        _CHAIN_INTRO + "Your current observation is: {observation}\n"
        "Your admissible actions of the current situation are: [{admissible}].\n\n" + _THINK_ACTION
    ),
    step=(
        _CHAIN_INTRO + "Prior to this step, you have already taken {step} step(s). Below are "
        "the most recent {n_history} observations and the corresponding actions you took: "
        "{history}\n"
        "You are now at step {step_no} and your current observation is: {observation}\n"
        "Your admissible actions of the current situation are: [{admissible}].\n\n" + _THINK_ACTION
    ),
    history_item="[Observation {index}: '{observation}', Action {index}: '{action}']",
)

COMPACT = PromptTemplate(
    name="compact",
    first="Task: {task}\n{observation}\n",
    step="Task: {task}\n{history}{observation}\n",
    history_item="{observation}\n> {action}\n",
    history_join="",
    score_prefix="> ",
    score_suffix="\n",
    use_chat=False,
    max_observation_chars=600,
)

_TEMPLATES: dict[tuple[str, str], PromptTemplate] = {
    ("alfworld", "seed"): ALFWORLD_SEED,
    ("webshop", "seed"): WEBSHOP_SEED,
    ("searchqa", "seed"): SEARCHQA_SEED,
    ("generic", "seed"): GENERIC_SEED,
    ("milestonechain", "seed"): MILESTONECHAIN_SEED,
    ("alfworld", "compact"): COMPACT,
    ("webshop", "compact"): COMPACT,
    ("generic", "compact"): COMPACT,
    ("milestonechain", "compact"): COMPACT,
    ("searchqa", "compact"): PromptTemplate(
        name="compact",
        first="Question: {task}\n",
        step="Question: {task}\n{history}",
        history_item="{action}\n{observation}\n",
        history_join="",
        score_prefix="",
        score_suffix="\n",
        use_chat=False,
        projection="search_answer",
    ),
}


def env_family(env_id: str) -> str:
    """``mvpo/ALFWorld-v0`` -> ``alfworld``; other ids: a registered family or ``generic``."""
    key = env_id.lower()
    for fam in {f for f, _ in _TEMPLATES}:
        if fam != "generic" and fam in key.replace("-", "").replace("_", ""):
            return fam
    if env_id in {f for f, _ in _TEMPLATES}:
        return env_id
    return "generic"


def register_template(family_or_env_id: str, style: str, template: PromptTemplate) -> None:
    """Add (or replace) the template of ``style`` for an env family (or exact env id)."""
    _TEMPLATES[(family_or_env_id, style)] = template


def get_template(env_id: str, style: str = "seed") -> PromptTemplate:
    """The template for ``env_id`` in ``style`` (exact id first, then its family, then generic)."""
    for key in ((env_id, style), (env_family(env_id), style), ("generic", style)):
        if key in _TEMPLATES:
            return _TEMPLATES[key]
    raise KeyError(f"no prompt template of style {style!r}; styles: {available_templates()}")


def available_templates() -> list[tuple[str, str]]:
    return sorted(_TEMPLATES)


# ------------------------------------------------------------------ history


@dataclass
class PromptBuilder:
    """Keeps each env slot's recent (observation, action) pairs and renders its prompt.

    ``history_length`` is the number of past pairs shown (the seeds' "most recent" window).
    """

    template: PromptTemplate
    num_envs: int
    history_length: int = 2
    _task: list[str] = field(default_factory=list, init=False)
    _obs: list[str] = field(default_factory=list, init=False)
    _hist: list[list[tuple[str, str]]] = field(default_factory=list, init=False)
    _steps: list[int] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self._task = [""] * self.num_envs
        self._obs = [""] * self.num_envs
        self._hist = [[] for _ in range(self.num_envs)]
        self._steps = [0] * self.num_envs

    def reset(self, i: int, observation: str, task: str) -> None:
        self._task[i], self._obs[i], self._hist[i], self._steps[i] = task, observation, [], 0

    def record(self, i: int, action: str, next_observation: str) -> None:
        """Append the action taken in the current observation and move to the next one."""
        self._hist[i].append((self._obs[i], action))
        if len(self._hist[i]) > max(self.history_length, 0):
            self._hist[i].pop(0)
        self._obs[i] = next_observation
        self._steps[i] += 1

    def render(self, i: int, admissible: Sequence[str]) -> str:
        hist = self._hist[i][-self.history_length :] if self.history_length > 0 else []
        return self.template.render(self._task[i], self._obs[i], admissible, hist, self._steps[i])
