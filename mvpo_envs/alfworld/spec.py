"""The declaration of ``mvpo/ALFWorld-v0`` (docs/architecture.md, "A new environment"):
its Gymnasium entry, info contract, default abstraction, prompts and trainer defaults.
Imports no engine (docs/environments.md, "mvpo/ALFWorld-v0")."""

from __future__ import annotations

from typing import TypedDict

from mvpo_envs.base import Info
from mvpo_envs.declaration import THINK_ACTION, EnvDeclaration, PromptTemplate


class AlfworldGoal(TypedDict):
    """The task's PDDL goal parameters; ``""`` where a task type has none."""

    task_type: str
    object: str
    receptacle: str
    mrecep: str  # the movable receptacle of pick_and_place_with_movable_recep, else ""
    toggle: str  # the lamp of look_at_obj_in_light, else ""
    sliced: bool


class AlfworldTextView(TypedDict):
    """What the feedback text alone says (the text abstraction's view)."""

    location: str
    visible: list[str]
    holding: list[str]
    object_states: dict[str, list[str]]
    lamp_on: bool
    placed: list[list[str]]


class AlfworldState(TypedDict):
    """``info["state"]`` of ``mvpo/ALFWorld-v0``: engine facts, demangled names."""

    observation: str
    location: str  # "middle of room" before the first "go to"
    receptacles_here: list[str]
    visible_objects: list[str]
    holding: list[str]
    opened: list[str]
    object_states: dict[str, list[str]]  # object -> clean/hot/cool/sliced/on
    lamp_on: bool
    goal: AlfworldGoal
    target_in_goal_receptacle: list[str]
    text_view: AlfworldTextView
    last_action: str  # "" at reset
    won: bool


class AlfworldOracleInfo(TypedDict, total=False):
    """The key ``progress_oracle=True`` adds to ``info`` (absent otherwise, so the default
    infos are as they were)."""

    #: the length of the shortest plan from the current state to the goal, as the control task
    #: reports it (0 once won; an inadmissible command leaves it unchanged; -1 where no plan
    #: exists); ``mvpo_train.rollout`` stores its decrease across a step as
    #: ``extras["oracle_plan_decrease"]``, the input of MVPO's oracle repair (docs/alignment.md)
    oracle_plan_length: int


class AlfworldInfo(Info, AlfworldOracleInfo):
    """``info`` of ``mvpo/ALFWorld-v0``."""

    task_type: str
    gamefile: str
    #: exact progress label (docs/alignment.md): 1 if the step shortened the shortest plan to
    #: the goal, 0 if not; -1 at reset or without ``progress_oracle=True``
    oracle_progress: int


ALFWORLD_PAPER = PromptTemplate(
    name="paper",
    first=(
        "You are an expert agent operating in the ALFRED Embodied Environment.\n"
        "Your current observation is: {observation}\n"
        "Your admissible actions of the current situation are: [{admissible}].\n\n" + THINK_ACTION
    ),
    step=(
        "You are an expert agent operating in the ALFRED Embodied Environment. "
        "Your task is to: {task}\n"
        "Prior to this step, you have already taken {step} step(s). Below are the most recent "
        "{n_history} observations and the corresponding actions you took: {history}\n"
        "You are now at step {step_no} and your current observation is: {observation}\n"
        "Your admissible actions of the current situation are: [{admissible}].\n\n" + THINK_ACTION
    ),
    history_item="[Observation {index}: '{observation}', Action {index}: '{action}']",
)


DECLARATION = EnvDeclaration(
    id="mvpo/ALFWorld-v0",
    entry_point="mvpo_envs.alfworld.env:AlfworldEnv",
    max_episode_steps=50,
    info_type=AlfworldInfo,
    state_type=AlfworldState,
    abstraction="alfworld",
    abstraction_module="mvpo_abstraction.alfworld",
    prompts={"paper": ALFWORLD_PAPER},
    # the tiny CPU model trains on four fixed tasks of the small ``mini`` rooms (the
    # ALFWorld-scale default is too hard for it, docs/training.md)
    # ``mvpo-showcase`` (preset ``cpu-showcase``): the ALFWorld study's full train split,
    # its held-out split and its warm start, shipped in data/models/ (docs/training.md)
    train_defaults={
        "cpu-tiny": {"tasks": [1, 8, 13, 19], "env_kwargs": {"preset": "mini"}},
        "cpu-showcase": {
            "tasks": [],
            "env_kwargs": {"num_games": "full"},
            "eval_split": "valid_unseen",
            "model": "alfworld-encoder-warm",
        },
    },
    default=True,
)
