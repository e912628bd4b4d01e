"""``mvpo/MilestoneChain-v0``: a control task with a known answer (docs/control_task.md).

A tiny text game: use K fixtures in a given order, each in its own place, in a keep of
distractor places, dead-end loops and do-nothing actions. Reward 1 only when the last
milestone is made; 50 steps (Gymnasium's ``TimeLimit``). The optimal actions are known in every
state: ``info["oracle_progress"]`` says whether the last action shortened the shortest plan, and
:meth:`MilestoneChainEnv.optimal_actions` lists the actions that would.
"""

from __future__ import annotations

import numbers
from typing import Any

from mvpo_abstraction.base import Abstraction
from mvpo_abstraction.milestone_chain import ABSTRACTION_NAMES
from mvpo_abstraction.registry import make_abstraction
from mvpo_envs.base import TextEnv, Transition
from mvpo_envs.milestone_chain.layout import (
    DEFAULT_DIFFICULTY,
    DEFAULT_MAX_PLAN_LENGTH,
    DEFAULT_NUM_MILESTONES,
    DIFFICULTIES,
    FIXTURES,
    MAX_MILESTONES,
    NOOP_ACTIONS,
    PLACE_NAMES,
    START_PLACE,
    Layout,
    make_layout,
    task_id,
)
from mvpo_envs.milestone_chain.oracle import UNKNOWN, expert_plan, optimal_actions, plan_length
from mvpo_envs.milestone_chain.world import Rules, task_text

#: split -> number of tasks (seeded layouts; train and eval layouts come from different seeds)
SPLITS = {"train": 128, "eval": 64}


def _check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not ok or value < low or (high is not None and value > high):
        bound = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"MilestoneChainEnv: {name} must be an int {bound}, got {value!r}")
    return int(value)


class MilestoneChainEnv(TextEnv):
    """The control task ``mvpo/MilestoneChain-v0``.

    ## Description
    The agent starts in the entrance hall of a keep and must use K fixtures in order
    (``ring the bell, then light the brazier, ...``), each in its own place. Using the right
    fixture at the right time is a *dwell* action: it makes a milestone and the agent stays
    where it is. Distractor places (corridors, rings of three that lead in circles), fixtures
    that do nothing and do-nothing actions fill the rest; ``difficulty`` sets how many.

    ## Action space
    Free text: ``go to <place>``, a fixture command (``ring bell``), ``look``, and by
    difficulty ``wait``, ``listen``, ... ; compared after lower-casing and collapsing spaces.
    ``info["admissible_actions"]`` lists them, sorted.

    ## Observation space
    Free text: the place, its fixture (``(done)`` once its milestone is made) and its exits;
    the feedback of a fixture or do-nothing action; ``Nothing happens.`` for an inadmissible
    command (reward 0, ``invalid_action=True``).

    ## Rewards
    1.0 on the step that makes the last milestone, else 0.

    ## Episode end
    Termination: every milestone made, in order (``won``). Truncation: ``TimeLimit`` at 50.

    ## Arguments
    ``split`` (``"train"``: 128 layouts, ``"eval"``: 64 others), ``difficulty`` (0-4, default
    2), ``num_milestones`` (K, 1-8, default 4), ``num_tasks`` (layouts in the split; default
    as above), ``max_plan_length`` (the longest shortest plan a layout may have, default 36),
    ``abstraction``, ``render_mode``, ``show_progress`` (default ``False``: when ``True`` every
    observation, the reset's and the invalid-action feedback included, ends with
    ``" (2 of 4 done)"``, the milestones made so far, so that the optimal action is a function
    of the observation and the task; off, the observations are the task's as always),
    ``show_route`` (default ``False``: when ``True`` every observation of an unfinished episode,
    after the progress note if any, ends with ``" Next: go to crypt."``, the first optimal action
    in sorted order: the exit on a shortest path toward the next milestone's place, or that
    place's fixture command once there; the policy still has to match it to an admissible
    action, and the reward stays sparse; off, the observations are the task's as always).

    ## Known answer
    ``info["oracle_progress"]`` (1: the action just taken shortened the shortest plan; 0: it
    did not; -1 at reset), ``info["oracle_plan_length"]`` (steps of the shortest plan from the
    state after the step, at reset from the start; the same number as
    ``info["state"]["plan_length"]``, at the top level where :mod:`mvpo_train.rollout` reads
    oracle labels), :meth:`optimal_actions` and :meth:`expert_actions`.
    """

    invalid_feedback = "Nothing happens."
    default_abstraction = "milestone-chain"

    def __init__(
        self,
        split: str = "train",
        difficulty: int = DEFAULT_DIFFICULTY,
        num_milestones: int = DEFAULT_NUM_MILESTONES,
        num_tasks: int | None = None,
        max_plan_length: int = DEFAULT_MAX_PLAN_LENGTH,
        abstraction: str | Abstraction | None = None,
        render_mode: str | None = None,
        show_progress: bool = False,
        show_route: bool = False,
    ):
        if split not in SPLITS:
            raise ValueError(
                f"MilestoneChainEnv: split must be one of {list(SPLITS)}, got {split!r}"
            )
        if difficulty not in DIFFICULTIES or isinstance(difficulty, bool):
            raise ValueError(
                f"MilestoneChainEnv: difficulty must be one of {sorted(DIFFICULTIES)}, "
                f"got {difficulty!r}"
            )
        if not isinstance(show_progress, bool):
            raise ValueError(
                f"MilestoneChainEnv: show_progress must be a bool, got {show_progress!r}"
            )
        if not isinstance(show_route, bool):
            raise ValueError(f"MilestoneChainEnv: show_route must be a bool, got {show_route!r}")
        self.show_progress = show_progress
        self.show_route = show_route
        self.split = split
        self.difficulty = int(difficulty)
        self.num_milestones = _check_int("num_milestones", num_milestones, 1, MAX_MILESTONES)
        count = SPLITS[split] if num_tasks is None else _check_int("num_tasks", num_tasks, 1)
        self.max_plan_length = _check_int("max_plan_length", max_plan_length, 1)
        ids = [task_id(split, i, self.difficulty, self.num_milestones) for i in range(count)]
        super().__init__(ids, self._own_abstraction(abstraction), render_mode)
        self._rules_cache: dict[int, Rules] = {}
        self._rules: Rules | None = None
        self._place = 0
        self._done_count = 0

    # -- abstraction: this env's own names are built with its K ---------------------------------
    def _own_abstraction(self, spec: str | Abstraction | None) -> str | Abstraction | None:
        name = self.default_abstraction if spec is None else spec
        if isinstance(name, str) and name in ABSTRACTION_NAMES:
            return make_abstraction(name, num_milestones=self.num_milestones)
        return spec

    def set_abstraction(self, abstraction: str | Abstraction) -> None:
        """As :meth:`TextEnv.set_abstraction`; this env's own names get its ``num_milestones``."""
        super().set_abstraction(self._own_abstraction(abstraction) or abstraction)

    # -- layouts -------------------------------------------------------------------------------
    def layout(self, task_index: int) -> Layout:
        """The layout of task ``task_index`` of this split (built once, then cached)."""
        return self._rules_for(task_index).layout

    def _rules_for(self, task_index: int) -> Rules:
        if not 0 <= task_index < len(self.task_ids):
            raise IndexError(f"task_index must be in [0, {len(self.task_ids)}), got {task_index}")
        rules = self._rules_cache.get(task_index)
        if rules is None:
            layout = make_layout(
                self.split, task_index, self.difficulty, self.num_milestones, self.max_plan_length
            )
            rules = self._rules_cache[task_index] = Rules(layout)
        return rules

    # -- TextEnv hooks ---------------------------------------------------------------------------
    def _start(self, task_index: int) -> Transition:
        self._rules = self._rules_for(task_index)
        self._place, self._done_count = 0, 0
        return self._transition(self._rules.intro(), "", UNKNOWN)

    def _is_admissible(self, command: str) -> bool:
        rules = self._require_rules()
        return rules.is_admissible(self._place, self._done_count, command)

    def _act(self, command: str) -> Transition:
        rules = self._require_rules()
        before = plan_length(rules.layout, self._place, self._done_count)
        outcome = rules.apply(self._place, self._done_count, command)
        self._place, self._done_count = outcome.place, outcome.done
        after = plan_length(rules.layout, self._place, self._done_count)
        return self._transition(outcome.feedback, command, 1 if after < before else 0)

    def _invalid(self, command: str) -> Transition:
        transition = super()._invalid(command)
        transition.observation = self._shown(self.invalid_feedback)
        transition.state["observation"] = transition.observation
        transition.extras = {**transition.extras, "oracle_progress": 0}
        return transition

    def task_text(self) -> str:
        return task_text(self._require_rules().layout)

    # -- the known answer ------------------------------------------------------------------------
    def optimal_actions(self) -> list[str]:
        """The admissible actions that shorten the shortest plan now (``[]`` once won)."""
        rules = self._require_rules()
        return optimal_actions(rules.layout, self._place, self._done_count)

    def plan_length(self) -> int:
        """Steps of the shortest plan from the current state (0 once won)."""
        rules = self._require_rules()
        return plan_length(rules.layout, self._place, self._done_count)

    # -- optional hooks read by mvpo_train (docs/architecture.md, "A new policy, backend or
    # tracker") ----------------------------------------------------------------------------
    def expert_actions(self, task_index: int) -> list[str]:
        """A shortest plan of task ``task_index`` (it wins; the current episode is untouched)."""
        return expert_plan(self._rules_for(task_index).layout)

    def vocabulary(self) -> list[str]:
        """The words of places, fixtures and actions, sorted."""
        words = {START_PLACE, "go", "to", "look", "the", "done", "exits"}
        words |= set(PLACE_NAMES) | {w for pair in FIXTURES for w in pair}
        words |= {a for a, _ in NOOP_ACTIONS}
        return sorted(words)

    # -- helpers -------------------------------------------------------------------------------
    def _require_rules(self) -> Rules:
        if self._rules is None:
            raise RuntimeError("call reset() first")
        return self._rules

    def _shown(self, observation: str) -> str:
        """``observation`` as the agent sees it: with ``show_progress``, `` (d of K done)`` added;
        with ``show_route``, then `` Next: <the first optimal action>.`` (not once won)."""
        layout = self._require_rules().layout
        if self.show_progress:
            observation = f"{observation} ({self._done_count} of {layout.num_milestones} done)"
        if self.show_route:
            best = optimal_actions(layout, self._place, self._done_count)
            if best:
                observation = f"{observation} Next: {best[0]}."
        return observation

    def _transition(self, observation: str, command: str, oracle_progress: int) -> Transition:
        rules = self._require_rules()
        layout, place, done = rules.layout, self._place, self._done_count
        won = done >= layout.num_milestones
        observation = self._shown(observation)
        remaining = plan_length(layout, place, done)
        state = {
            "observation": observation,
            "location": layout.places[place],
            "exits": [layout.places[q] for q in layout.exits[place]],
            "fixture": layout.fixtures[place],
            "milestones_done": done,
            "num_milestones": layout.num_milestones,
            "plan_length": remaining,
            "last_action": command,
            "won": won,
        }
        return Transition(
            observation=observation,
            admissible=rules.admissible(place, done),
            state=state,
            reward=1.0 if won else 0.0,  # only the winning step: later ones are no-ops
            terminated=won,
            won=won,
            extras={"oracle_progress": oracle_progress, "oracle_plan_length": remaining},
        )
