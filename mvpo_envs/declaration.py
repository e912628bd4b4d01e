"""One declaration per environment: everything the rest of mvpo needs to know about an env id.

docs/architecture.md ("A new environment"). An env package declares itself once, in its
``spec.py`` (``DECLARATION = EnvDeclaration(...)``), and every registry reads the declarations
instead of keeping its own list: the Gymnasium ids (:mod:`mvpo_envs.registration`), the info
contract (:mod:`mvpo_envs.info_contract`), the abstraction registry (the declared
``abstraction_module`` is imported with the built-ins) and the trainer's prompt templates and
per-preset defaults (``mvpo_train.prompts``, ``mvpo_train.config``), which ask by env id and never
name an env themselves.

Declarations are found, not listed: every sub-package ``mvpo_envs/<env>/`` with a ``spec.py``,
every entry point of the group ``mvpo.envs`` (an :class:`EnvDeclaration` or a callable returning
one), and any :func:`declare_env` call from user code. A ``spec.py`` imports nothing heavy (no
engine, no data): discovery runs at ``import mvpo_envs``.

Everything in a declaration is data: the prompt templates are format strings
(:class:`PromptTemplate`), the capability flags and the hint are plain values.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

__all__ = [
    "PAPER_STYLE",
    "STYLE_ALIASES",
    "THINK_ACTION",
    "DeclarationError",
    "EnvDeclaration",
    "Prompt",
    "PromptTemplate",
    "canonical_style",
    "declarations",
    "declare_env",
    "default_env_id",
    "get_declaration",
    "register_gym",
]

#: the fields a declaration's ``train_defaults`` may set (``mvpo_train.config``)
TRAIN_DEFAULT_FIELDS = frozenset({"tasks", "env_kwargs", "eval_split", "model"})


class DeclarationError(ValueError):
    """An env declaration that cannot be used; the message names the env id and the field."""


# ------------------------------------------------------------------ prompt templates (data)

#: the prompt style of the MVPO paper's agent prompt (appendix A.2)
PAPER_STYLE = "paper"
#: former style names -> the current one: ``seed``, the first name of ``paper``, still loads
#: (old configs, checkpoints and declarations)
STYLE_ALIASES: Mapping[str, str] = {"seed": PAPER_STYLE}


def canonical_style(style: str) -> str:
    """The current name of a prompt style (``seed`` -> ``paper``; any other name as is)."""
    return STYLE_ALIASES.get(style, style) if isinstance(style, str) else style


#: the closing instruction of the MVPO paper's agent prompts (appendix A.2)
THINK_ACTION = (
    "Now it's your turn to take an action.\n"
    "You should first reason step-by-step about the current situation. This reasoning process "
    "MUST be enclosed within <think> </think> tags.\n"
    "Once you've finished your reasoning, you should choose an admissible action for the current "
    "step and present it within <action> </action> tags."
)


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt and the pieces it was made of (policies may read either).

    ``task``, ``observation`` (stripped and cut as the template shows them), ``admissible``,
    ``history`` (the shown ``(observation, action)`` pairs, oldest first) and ``step`` (steps
    taken). ``previous_action`` is the last shown action, ``""`` before the first step.
    """

    text: str
    task: str
    observation: str
    admissible: tuple[str, ...]
    history: tuple[tuple[str, str], ...]
    step: int

    @property
    def previous_action(self) -> str:
        return self.history[-1][1].strip() if self.history else ""

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class PromptTemplate:
    """The text of one prompt style (format fields in braces).

    ``first`` is used when there is no history yet, ``step`` otherwise. Fields available:
    ``task, observation, admissible, step (steps taken), step_no (step+1), n_history,
    history``. ``history_item`` formats one past ``(observation, action)`` pair
    (``index, observation, action``); items are joined with ``history_join``.
    ``use_chat`` says whether a tokenizer's chat template should wrap the prompt (``auto``
    policies follow it). ``projection`` names the parser of generated text
    (``mvpo_train.projection``).
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

    def prompt(
        self,
        task: str,
        observation: str,
        admissible: Sequence[str],
        history: Sequence[tuple[str, str]],
        step: int,
    ) -> Prompt:
        """The prompt for the current observation given ``history`` (oldest first)."""
        q, n = self.admissible_quote, self.max_observation_chars
        task_text, obs = task.strip(), _clip(observation.strip(), n)
        values = {
            "task": task_text,
            "observation": obs,
            "admissible": self.admissible_join.join(f"{q}{a}{q}" for a in admissible),
            "step": step,
            "step_no": step + 1,
            "n_history": len(history),
            "history": self.history_join.join(
                self.history_item.format(
                    index=step - len(history) + k + 1,
                    observation=_clip(o.strip(), n),
                    action=a,
                )
                for k, (o, a) in enumerate(history)
            ),
        }
        body = self.first if not history else self.step
        return Prompt(
            text=body.format(**values),
            task=task_text,
            observation=obs,
            admissible=tuple(str(a) for a in admissible),
            history=tuple((_clip(o.strip(), n), a) for o, a in history),
            step=step,
        )

    def render(
        self,
        task: str,
        observation: str,
        admissible: Sequence[str],
        history: Sequence[tuple[str, str]],
        step: int,
    ) -> str:
        """The prompt text (:meth:`prompt` without the pieces)."""
        return self.prompt(task, observation, admissible, history, step).text


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


# ------------------------------------------------------------------ the declaration


@dataclass(frozen=True)
class EnvDeclaration:
    """What mvpo knows about one env id (module docstring).

    * ``id``, ``entry_point`` (``"pkg.module:Class"``), ``max_episode_steps``: the Gymnasium
      registration;
    * ``info_type``, ``state_type``: the ``TypedDict`` s of ``info`` and ``info["state"]``
      (docs/environments.md, "Info contract"); ``None``: not checked;
    * ``abstraction``: the default abstraction's registered name, ``abstraction_module`` the
      module that registers it (imported with the built-in abstractions);
    * ``prompts``: prompt style (``paper``, ``compact``) -> :class:`PromptTemplate`; a style
      not given falls back to the trainer's generic template of that style; a former name
      (:data:`STYLE_ALIASES`: ``seed``) is stored under the current one;
    * ``score_template_hint``: the one-line fix to show when score mode meets an admissible
      ``name[<slot>]`` template (e.g. the env keyword that fills it); ``""``: a generic hint;
    * ``train_defaults``: preset name -> ``{"tasks": [...], "env_kwargs": {...}}`` (also
      ``eval_split`` and ``model``) used by the trainer's config when the run gives no value
      for that field;
    * ``default``: this is the id the tools use when none is given (one env at most).
    """

    id: str
    entry_point: str
    max_episode_steps: int
    info_type: type | None = None
    state_type: type | None = None
    abstraction: str = ""
    abstraction_module: str = ""
    prompts: Mapping[str, PromptTemplate] = field(default_factory=dict)
    score_template_hint: str = ""
    train_defaults: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    default: bool = False

    def __post_init__(self) -> None:
        where = f"env declaration {self.id!r}"
        if not isinstance(self.id, str) or "/" not in self.id:
            raise DeclarationError(f"{where}: id: expected 'namespace/Name-vN'")
        module, sep, attr = str(self.entry_point).partition(":")
        if not (module and sep and attr):
            raise DeclarationError(f"{where}: entry_point: expected 'pkg.module:Class'")
        steps = self.max_episode_steps
        if isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0:
            raise DeclarationError(f"{where}: max_episode_steps: expected an int > 0")
        for style, template in self.prompts.items():
            if not isinstance(template, PromptTemplate):
                raise DeclarationError(f"{where}: prompts[{style!r}]: not a PromptTemplate")
        prompts = {canonical_style(style): t for style, t in self.prompts.items()}
        if len(prompts) < len(self.prompts):
            old = sorted(s for s in self.prompts if s in STYLE_ALIASES)
            raise DeclarationError(
                f"{where}: prompts: {old} and {[STYLE_ALIASES[s] for s in old]} name the same "
                "style; keep the second"
            )
        object.__setattr__(self, "prompts", prompts)
        for preset, values in self.train_defaults.items():
            unknown = set(values) - TRAIN_DEFAULT_FIELDS
            if unknown:
                raise DeclarationError(
                    f"{where}: train_defaults[{preset!r}]: unknown field(s) {sorted(unknown)}; "
                    f"allowed: {sorted(TRAIN_DEFAULT_FIELDS)}"
                )


_DECLARATIONS: dict[str, EnvDeclaration] = {}
_DISCOVERED = False


def declare_env(declaration: EnvDeclaration) -> EnvDeclaration:
    """Add ``declaration`` to every registry: Gymnasium (when not registered yet), the info
    contract, the abstraction registry and the trainer's prompts and defaults. Declaring the
    same declaration twice is a no-op; a different one under a taken id is refused."""
    if not isinstance(declaration, EnvDeclaration):
        raise DeclarationError(f"declare_env: expected an EnvDeclaration, got {declaration!r}")
    old = _DECLARATIONS.get(declaration.id)
    if old is not None and old != declaration:
        raise DeclarationError(f"env declaration {declaration.id!r}: id declared twice")
    _DECLARATIONS[declaration.id] = declaration
    if declaration.default:
        others = [d.id for d in _DECLARATIONS.values() if d.default and d.id != declaration.id]
        if others:
            raise DeclarationError(
                f"env declaration {declaration.id!r}: default: {others[0]!r} is the default"
            )
    register_gym(declaration)
    if declaration.abstraction_module:
        from mvpo_abstraction.plugins import add_plugin_module

        add_plugin_module(declaration.abstraction_module)
    return declaration


def register_gym(declaration: EnvDeclaration) -> None:
    import gymnasium as gym

    if declaration.id not in gym.registry:
        gym.register(
            id=declaration.id,
            entry_point=declaration.entry_point,
            max_episode_steps=declaration.max_episode_steps,
            disable_env_checker=False,
        )


def declarations() -> dict[str, EnvDeclaration]:
    """Every declared env, by id (the built-in ones first, in package order)."""
    _discover()
    return dict(_DECLARATIONS)


def get_declaration(env_id: str) -> EnvDeclaration | None:
    """The declaration of ``env_id``; ``None`` for an id no declaration names (any other
    Gymnasium env: the trainer then uses its generic templates and defaults)."""
    _discover()
    return _DECLARATIONS.get(env_id)


def default_env_id() -> str:
    """The id of the declaration marked ``default`` (the tools' default env)."""
    for declaration in declarations().values():
        if declaration.default:
            return declaration.id
    raise DeclarationError("no env declaration is marked default=True")


def _discover() -> None:
    global _DISCOVERED
    if _DISCOVERED:
        return
    _DISCOVERED = True
    package = importlib.import_module(__name__.rpartition(".")[0])
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not info.ispkg:
            continue
        folder = Path(getattr(info.module_finder, "path", "")) / info.name
        if not (folder / "spec.py").is_file():  # not an env package (e.g. mvpo_envs.serve)
            continue
        name = f"{package.__name__}.{info.name}.spec"
        _declare_from(importlib.import_module(name), name)
    for ep in entry_points(group="mvpo.envs"):
        _declare_from(ep.load(), f"entry point {ep.name!r}")


def _declare_from(obj: Any, where: str) -> None:
    found = getattr(obj, "DECLARATION", obj)
    if callable(found) and not isinstance(found, EnvDeclaration):
        found = found()
    if not isinstance(found, EnvDeclaration):
        raise DeclarationError(f"{where}: expected an EnvDeclaration (DECLARATION), got {found!r}")
    declare_env(found)
