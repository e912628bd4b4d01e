"""The base class of every mvpo text environment: the common info contract.

Implements the "Common contract" of ``docs/environments.md``:

* ``reset(seed=None, options=None)`` / ``step(action: str)`` follow Gymnasium exactly;
* task selection is a pure function of ``(task list, seed / options)`` — see
  :func:`select_task_index` — so all G rollouts of a group play the same game on any machine
  and with any worker count;
* ``info`` always carries ``task, task_id, admissible_actions, anchor, signature, milestones,
  progress, won, invalid_action, state`` (:class:`Info`; plus env-specific extras such as
  ``task_type``, declared in :mod:`mvpo_envs.info_contract`), every key with one Python type
  and a sentinel (``""``, ``-1``, ``-1.0``) instead of ``None`` (docs/environments.md,
  "Info contract");
* an inadmissible or malformed action returns the benchmark's no-op text, reward 0 and
  ``invalid_action=True``; a non-string action raises ``TypeError``;
* the abstraction (signature / milestones / progress) is attached with ``abstraction=`` and
  computed by :class:`mvpo_abstraction.base.AbstractionTracker` from ``info["state"]``.

Episode length limits are Gymnasium's ``TimeLimit`` wrapper (``max_episode_steps`` in the
registration, overridable in ``gym.make``), so ``truncated`` means exactly "time limit".
Subclasses implement :meth:`_start` and :meth:`_act`.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict, cast

import gymnasium as gym

from mvpo_abstraction.base import Abstraction, AbstractionTracker
from mvpo_abstraction.registry import make_abstraction
from mvpo_envs.info_copy import copy_plain
from mvpo_envs.spaces import AnyText

_WS = re.compile(r"\s+")


class Info(TypedDict):
    """The info dict of every mvpo env (docs/environments.md, "Info contract").

    Every key has one Python type per env, whatever the page or episode phase, so Gymnasium's
    vector merge (which types its array from the first env that reports a key) never fails or
    truncates. Where a value can be absent, a documented sentinel stands in for ``None``: ``""``
    for text, ``-1`` / ``-1.0`` for numbers. Set by :meth:`TextEnv.reset` and
    :meth:`TextEnv.step` on every call:
    """

    #: the instruction shown to the agent (ALFWorld's goal text, WebShop's instruction, the question)
    task: str
    #: a stable id of the task: the same on every machine and worker count
    task_id: str
    #: the commands valid now (canonical form; templates such as ``search[<query>]``); ``[]`` at the end
    admissible_actions: list[str]
    #: the observation the next action is taken in (the text the step/reset returned)
    anchor: str
    #: the abstraction's signature of the history so far
    signature: str
    #: milestones that fired on this transition (``[]`` at reset)
    milestones: list[str]
    #: every milestone of the abstraction -> whether it has fired in this episode
    progress: dict[str, bool]
    #: the episode is won (ALFWorld: goal reached; WebShop: score 1.0; SearchQA: EM 1)
    won: bool
    #: the action was inadmissible or malformed (the benchmark's no-op was returned)
    invalid_action: bool
    #: structured env facts the abstraction reads (env-specific keys, one type each)
    state: dict[str, Any]


#: the keys every mvpo env puts in every info (env-specific extras come on top)
INFO_KEYS: tuple[str, ...] = tuple(Info.__annotations__)


def canonical_command(text: str) -> str:
    """Lower-case, strip and collapse whitespace: how actions are compared to admissible ones."""
    return _WS.sub(" ", text.strip()).lower()


#: the keys ``reset(options=...)`` understands (docs/environments.md, "Task selection")
RESET_OPTIONS = ("task_id", "task_index")


def _is_int(value: Any) -> bool:
    """A Python or NumPy integer; a bool (``True == 1``) or a float is not."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_seed(seed: Any) -> int | None:
    """``reset``'s ``seed`` as a Python int (docs/environments.md, "Reset and step edges").

    ``None`` or an integer ``>= 0`` of any size, NumPy integers included (Gymnasium accepts
    only Python ints); a bool, float or string is a ``TypeError``, a negative int a
    ``ValueError``, each naming ``seed``.
    """
    if seed is None:
        return None
    if not _is_int(seed):
        raise TypeError(f"seed must be an int >= 0 or None, got {type(seed).__name__} {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be an int >= 0 or None, got {int(seed)}")
    return int(seed)


def check_options(options: Any) -> dict[str, Any]:
    """``reset``'s ``options``: ``None`` or a mapping with only :data:`RESET_OPTIONS` keys."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):  # a str was iterated as its letters
        raise TypeError(
            f"options must be a dict (or None) with keys {list(RESET_OPTIONS)}, got "
            f"{type(options).__name__} {options!r}"[:200]
        )
    unknown = sorted(str(k) for k in options if k not in RESET_OPTIONS)
    if unknown:  # a misspelt key would silently play a seed-chosen task
        raise ValueError(f"unknown reset option(s) {unknown}; known: {list(RESET_OPTIONS)}")
    return dict(options)


def select_task_index(
    num_tasks: int,
    task_ids: Sequence[str],
    seed: int | None,
    options: Mapping[str, Any] | None,
    rng: Any,
) -> int:
    """Which task a reset plays (docs/environments.md: a pure function of split and seed/index).

    Priority: ``options["task_id"]`` (a stable id string), then ``options["task_index"]``
    (``0 <= i < num_tasks``), then ``seed`` (task ``seed % num_tasks``), else the env's own
    seeded ``np_random``. Task lists are sorted by id, so the answer does not depend on
    directory order or on how many workers run. A value of the wrong type is a ``TypeError``,
    an index out of range an ``IndexError``, an unknown id a ``KeyError``.
    """
    if num_tasks <= 0:
        raise ValueError("the task list is empty")
    options = check_options(options)
    seed = check_seed(seed)
    if options.get("task_id") is not None:
        task_id = options["task_id"]
        if not isinstance(task_id, str):
            raise TypeError(
                f"task_id must be a str (an info['task_id']), got {type(task_id).__name__} "
                f"{task_id!r}"
            )
        try:
            return task_ids.index(task_id)  # a Sequence: lazy id lists answer without a copy
        except ValueError:
            raise KeyError(
                f"unknown task_id {task_id!r} ({num_tasks} tasks in this split)"
            ) from None
    if options.get("task_index") is not None:
        index = options["task_index"]
        if not _is_int(index):  # NumPy integers are task indices too
            raise TypeError(
                f"task_index must be an int in [0, {num_tasks}), got "
                f"{type(index).__name__} {index!r}"
            )
        if not 0 <= index < num_tasks:
            raise IndexError(f"task_index must be an int in [0, {num_tasks}), got {index!r}")
        return int(index)
    if seed is not None:
        return seed % num_tasks
    return int(rng.integers(num_tasks))


@dataclass
class Transition:
    """What a subclass returns from :meth:`TextEnv._start` and :meth:`TextEnv._act`."""

    observation: str
    admissible: list[str]
    state: dict[str, Any]
    reward: float = 0.0
    terminated: bool = False
    won: bool = False
    extras: dict[str, Any] = field(default_factory=dict)


class TextEnv(gym.Env[str, str]):
    """Base class: text observations and actions, the info contract, task selection."""

    metadata = {"render_modes": ["human", "ansi"], "render_fps": 4}
    #: the benchmark's documented no-op feedback for an inadmissible action
    invalid_feedback: str = "Nothing happens."
    #: registry name of the environment's paper abstraction
    default_abstraction: str = ""
    max_text_length: int = 16_384

    def __init__(
        self,
        task_ids: Sequence[str],
        abstraction: str | Abstraction | None = None,
        render_mode: str | None = None,
    ):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}")
        self.render_mode = render_mode
        self.task_ids: list[str] = list(task_ids)
        if not self.task_ids:
            raise ValueError(f"{type(self).__name__}: no tasks to play")
        self.observation_space = AnyText(self.max_text_length)
        self.action_space = AnyText(self.max_text_length)
        if isinstance(abstraction, str) and not abstraction.strip():  # not a silent default
            raise ValueError(
                f"abstraction is empty: give a name such as {self.default_abstraction!r}, or "
                "omit it for the env's paper abstraction"
            )
        self.abstraction = make_abstraction(abstraction or self.default_abstraction)
        self._tracker = AbstractionTracker(self.abstraction)
        self._task_index: int | None = None
        self._admissible: list[str] = []
        self._last: Transition | None = None
        self._last_info: Info | dict[str, Any] = {}
        self._done = False

    # -- subclass hooks -------------------------------------------------------------------------
    def _start(self, task_index: int) -> Transition:
        """Start task ``task_index``; return the first observation and state."""
        raise NotImplementedError

    def _act(self, command: str) -> Transition:
        """Apply an admissible ``command`` (already canonical) to the engine."""
        raise NotImplementedError

    def _is_admissible(self, command: str) -> bool:
        """Whether a canonical command is valid now (default: in the admissible list)."""
        return command in self._admissible_set

    def _invalid(self, command: str) -> Transition:
        """The no-op transition for an inadmissible command: same state, no-op feedback."""
        if self._last is None:
            raise RuntimeError("call reset() before step()")
        return Transition(
            observation=self.invalid_feedback,
            admissible=self._last.admissible,
            state={**self._last.state, "observation": self.invalid_feedback},
            reward=0.0,
            terminated=False,
            won=self._last.won,
            extras=dict(self._last.extras),
        )

    def task_text(self) -> str:
        """The instruction shown to the agent for the current task."""
        raise NotImplementedError

    def set_abstraction(self, abstraction: str | Abstraction) -> None:
        """Swap the abstraction (a registered name, ``NAME:PATH`` or an instance); it labels
        episodes **from the next** :meth:`reset` (docs/abstractions.md, "Swap an env's
        abstraction"). An episode in progress keeps the abstraction it started with, so no
        episode mixes two. Vector envs: ``venv.call("set_abstraction", abstraction)``.
        """
        if isinstance(abstraction, str) and not abstraction.strip():
            raise ValueError(
                f"abstraction is empty: give a name such as {self.default_abstraction!r}"
            )
        self.abstraction = make_abstraction(abstraction)

    # -- Gymnasium API --------------------------------------------------------------------------
    @property
    def task_id(self) -> str:
        if self._task_index is None:
            raise RuntimeError("call reset() first")
        return self.task_ids[self._task_index]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, Info]:
        """Start the task chosen by :func:`select_task_index`; ``(observation, info)``.

        The types of ``seed`` and ``options`` are checked first (:func:`check_seed`,
        :func:`check_options`): a bad one raises before the env reseeds or leaves its episode.
        """
        seed, options = check_seed(seed), check_options(options)
        super().reset(seed=seed)
        self._task_index = select_task_index(
            len(self.task_ids), self.task_ids, seed, options, self.np_random
        )
        transition = self._start(self._task_index)
        self._done = False
        if self._tracker.abstraction is not self.abstraction:  # set_abstraction: from now on
            self._tracker = AbstractionTracker(self.abstraction)
        record = self._record(transition, invalid=False)
        try:
            labels = self._tracker.reset(transition.state)
        except KeyError as err:  # e.g. abstraction="webshop" on ALFWorld: name the mismatch
            raise ValueError(
                f"{type(self).__name__}: the abstraction {self.abstraction.name!r} reads the "
                f"state key {err.args[0]!r}, which this env does not have (an abstraction of "
                f"another env? this env's is {self.default_abstraction!r})"
            ) from err
        info = cast(Info, {**record, **labels})
        self._last_info = info
        if self.render_mode == "human":
            self.render()
        return transition.observation, info

    def step(self, action: str) -> tuple[str, float, bool, bool, Info]:
        """Apply ``action``; ``(observation, reward, terminated, truncated, info)``.

        The base class never truncates: Gymnasium's ``TimeLimit`` wrapper of the registration
        does (and a subclass may, for a budget of its benchmark).
        """
        if not isinstance(action, str):
            raise TypeError(
                f"{type(self).__name__}.step expects a text action (str), got "
                f"{type(action).__name__}: {action!r}"
            )
        if self._last is None:
            raise RuntimeError("call reset() before step()")
        command = canonical_command(action)
        valid = not self._done and self._is_admissible(command)
        transition = self._act(command) if valid else self._invalid(command)
        record = self._record(transition, invalid=not valid)
        info = cast(Info, {**record, **self._tracker.step(transition.state, command)})
        self._done = self._done or transition.terminated
        self._last_info = info
        if self.render_mode == "human":
            self.render()
        return (
            transition.observation,
            float(transition.reward),
            bool(transition.terminated),
            False,
            info,
        )

    def _record(self, transition: Transition, invalid: bool) -> dict[str, Any]:
        """The contract keys that come from the env (the tracker adds the abstraction's)."""
        self._last = transition
        self._admissible = list(transition.admissible)
        self._admissible_set = set(self._admissible)
        transition.state.setdefault("observation", transition.observation)
        return {
            "task": self.task_text(),
            "task_id": self.task_id,
            "admissible_actions": list(transition.admissible),
            "anchor": transition.observation,
            "won": bool(transition.won),
            "invalid_action": bool(invalid),
            # fresh objects every call: users keep infos (Gymnasium's env checker demands it);
            # copy_plain is deepcopy's result for plain data at a third of its cost
            "state": copy_plain(transition.state),
            **copy_plain(transition.extras),
        }

    def render(self) -> str | None:
        if self._last is None:
            return None
        info = self._last_info
        lines = [
            self._last.observation,
            "",
            f"[task] {info.get('task', '')}",
            f"[signature] {info.get('signature', '')}",
            f"[milestones] {', '.join(k for k, v in info.get('progress', {}).items() if v) or '-'}",
            f"[admissible] {' | '.join(self._admissible)}",
        ]
        text = "\n".join(lines)
        if self.render_mode == "human":
            print(text)
            return None
        return text
