"""Prompt templates, chosen by environment id, and the per-env history that fills them.

Each env declares its own templates (``prompts`` of its :class:`~mvpo_envs.declaration.
EnvDeclaration`); this module holds only the env-neutral ones (the ``generic`` ``paper`` prompt
and the ``compact`` transcript) and looks the rest up by env id.

docs/architecture.md ("The trainer knows nothing of any one environment: it reads only the info
contract and a prompt template chosen by env id"). A template turns the info contract
(``task``, ``admissible_actions``) plus the recent (observation, action) history into the text
the policy reads.

Two styles per environment family:

* ``paper``: the MVPO paper's agent prompt (its appendix A.2, as in GiGPO's verl-agent): the task,
  the most recent observations and actions, the current observation, the admissible actions, and the
  instruction to reason inside ``<think> </think>`` and to answer inside ``<action> </action>``.
  Used by the ``generate`` action mode and by the GPU preset. Wording written for this project.
  ``seed``, its former name, still selects it (:data:`~mvpo_envs.declaration.STYLE_ALIASES`): old
  configs and checkpoints load.
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

from mvpo_envs.declaration import (
    PAPER_STYLE,
    STYLE_ALIASES,
    THINK_ACTION,
    Prompt,
    PromptTemplate,
    canonical_style,
    get_declaration,
)

__all__ = [
    "PAPER_STYLE",
    "STYLE_ALIASES",
    "Prompt",
    "PromptBuilder",
    "PromptTemplate",
    "available_templates",
    "canonical_style",
    "env_family",
    "get_template",
    "register_template",
]

# ------------------------------------------------------------------ env-neutral templates

GENERIC_PAPER = PromptTemplate(
    name=PAPER_STYLE,
    first=(
        "You are an expert agent acting in a text environment. Your task is to: {task}\n"
        "Your current observation is: {observation}\n"
        "Your admissible actions of the current situation are: [{admissible}].\n\n" + THINK_ACTION
    ),
    step=(
        "You are an expert agent acting in a text environment. Your task is to: {task}\n"
        "Prior to this step, you have already taken {step} step(s). Below are the most recent "
        "{n_history} observations and the corresponding actions you took: {history}\n"
        "You are now at step {step_no} and your current observation is: {observation}\n"
        "Your admissible actions of the current situation are: [{admissible}].\n\n" + THINK_ACTION
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

#: (family or env id, style) -> template: the generic ones and the user's (register_template)
_TEMPLATES: dict[tuple[str, str], PromptTemplate] = {
    ("generic", PAPER_STYLE): GENERIC_PAPER,
    ("generic", "compact"): COMPACT,
}


def _family_key(env_id: str) -> str:
    """``mvpo/ALFWorld-v0`` -> ``alfworld``: the name part of an id, lower case, no ``-_``."""
    name = env_id.rpartition("/")[2].lower()
    base, sep, version = name.rpartition("-v")
    if sep and version.isdigit():
        name = base
    return name.replace("-", "").replace("_", "")


def env_family(env_id: str) -> str:
    """The family of ``env_id`` (its name part, ``mvpo/ALFWorld-v0`` -> ``alfworld``) when the
    id is declared or a template is registered for that family; else ``generic``."""
    if env_id in {f for f, _ in _TEMPLATES}:
        return env_id
    family = _family_key(env_id)
    if get_declaration(env_id) is not None or family in {f for f, _ in _TEMPLATES}:
        return family
    return "generic"


def register_template(family_or_env_id: str, style: str, template: PromptTemplate) -> None:
    """Add (or replace) the template of ``style`` for an env family (or exact env id); a former
    style name (``seed``) registers the current one (``paper``)."""
    _TEMPLATES[(family_or_env_id, canonical_style(style))] = template


def get_template(env_id: str, style: str = PAPER_STYLE) -> PromptTemplate:
    """The template for ``env_id`` in ``style``: one registered for the exact id, then one
    registered for its family, then the env declaration's, then the generic one. A former
    style name (``seed``) reads as the current one (``paper``)."""
    style = canonical_style(style)
    for key in ((env_id, style), (env_family(env_id), style)):
        if key in _TEMPLATES:
            return _TEMPLATES[key]
    declaration = get_declaration(env_id)
    if declaration is not None and style in declaration.prompts:
        return declaration.prompts[style]
    if ("generic", style) in _TEMPLATES:
        return _TEMPLATES[("generic", style)]
    raise KeyError(f"no prompt template of style {style!r}; styles: {available_templates()}")


def available_templates() -> list[tuple[str, str]]:
    """(family or env id, style) of every registered and declared template."""
    from mvpo_envs.declaration import declarations

    declared = {(d.id, style) for d in declarations().values() for style in d.prompts}
    return sorted(set(_TEMPLATES) | declared)


# ------------------------------------------------------------------ history


@dataclass
class PromptBuilder:
    """Keeps each env slot's recent (observation, action) pairs and renders its prompt.

    ``history_length`` is the number of past pairs shown (the MVPO paper's "most recent"
    window).
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

    def prompt(self, i: int, admissible: Sequence[str]) -> Prompt:
        """Env slot ``i``'s prompt: the text and its pieces (:class:`Prompt`)."""
        hist = self._hist[i][-self.history_length :] if self.history_length > 0 else []
        return self.template.prompt(self._task[i], self._obs[i], admissible, hist, self._steps[i])

    def render(self, i: int, admissible: Sequence[str]) -> str:
        """Env slot ``i``'s prompt text."""
        return self.prompt(i, admissible).text
