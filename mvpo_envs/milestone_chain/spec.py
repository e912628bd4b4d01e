"""The declaration of ``mvpo/MilestoneChain-v0``, the control task with a known answer
(docs/control_task.md; docs/architecture.md, "A new environment")."""

from __future__ import annotations

from typing import TypedDict

from mvpo_envs.base import Info
from mvpo_envs.declaration import THINK_ACTION, EnvDeclaration, PromptTemplate


class MilestoneChainState(TypedDict):
    """``info["state"]`` of ``mvpo/MilestoneChain-v0``: the Markov state and the oracle's plan."""

    observation: str
    location: str  # the place's name, "entrance hall" at the start
    exits: list[str]  # neighbouring places, sorted
    fixture: str  # the fixture command here ("ring bell"); "" in the entrance hall
    milestones_done: int  # 0 .. num_milestones
    num_milestones: int
    plan_length: int  # steps of the shortest remaining plan (0 once won)
    last_action: str  # "" at reset
    won: bool


class MilestoneChainInfo(Info):
    """``info`` of ``mvpo/MilestoneChain-v0``."""

    oracle_progress: int  # 1: the action shortened the shortest plan; 0: not; -1 at reset
    oracle_plan_length: int  # steps of the shortest plan from the current state (0 once won)


CHAIN_INTRO = (
    "You are an expert agent playing a text game: you walk through a keep and use its "
    "fixtures in the order the task gives. Your task is to: {task}\n"
)

#: mvpo/MilestoneChain-v0, the control task (docs/control_task.md)
MILESTONECHAIN_PAPER = PromptTemplate(
    name="paper",
    first=(
        CHAIN_INTRO + "Your current observation is: {observation}\n"
        "Your admissible actions of the current situation are: [{admissible}].\n\n" + THINK_ACTION
    ),
    step=(
        CHAIN_INTRO + "Prior to this step, you have already taken {step} step(s). Below are "
        "the most recent {n_history} observations and the corresponding actions you took: "
        "{history}\n"
        "You are now at step {step_no} and your current observation is: {observation}\n"
        "Your admissible actions of the current situation are: [{admissible}].\n\n" + THINK_ACTION
    ),
    history_item="[Observation {index}: '{observation}', Action {index}: '{action}']",
)


DECLARATION = EnvDeclaration(
    id="mvpo/MilestoneChain-v0",
    entry_point="mvpo_envs.milestone_chain.env:MilestoneChainEnv",
    max_episode_steps=50,
    info_type=MilestoneChainInfo,
    state_type=MilestoneChainState,
    abstraction="milestone-chain",
    abstraction_module="mvpo_abstraction.milestone_chain",
    prompts={"paper": MILESTONECHAIN_PAPER},
)
