"""The info contract of each env id as ``TypedDict`` s, and a checker (docs/environments.md,
"Info contract").

:class:`mvpo_envs.base.Info` holds the keys every env sets; the classes here add each env's
extras and its ``info["state"]``. One rule holds everywhere: **every key has one Python type**
(``bool`` is not ``int``, ``int`` is not ``float``), whatever the page or the episode phase, and a
value that can be absent has a sentinel instead of ``None``: ``""`` for text, ``-1`` / ``-1.0``
for numbers, an empty list or dict for collections. Gymnasium's vector envs merge infos into
arrays typed by the first env that reports a key, so a ``None`` or an ``int`` where another env
has a ``float`` breaks (or silently truncates) the merge.

:func:`contract_errors` checks an info against its declaration; the contract test runs it on
every info of many random episodes of each env.
"""

from __future__ import annotations

import typing
from typing import Any, TypedDict

from mvpo_envs.base import Info

__all__ = [
    "INFO_TYPES",
    "AlfworldInfo",
    "AlfworldState",
    "MilestoneChainInfo",
    "MilestoneChainState",
    "SearchQAInfo",
    "SearchQAState",
    "WebShopInfo",
    "WebShopState",
    "contract_errors",
]


# -- mvpo/ALFWorld-v0 -----------------------------------------------------------------------------
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


class AlfworldInfo(Info):
    """``info`` of ``mvpo/ALFWorld-v0``."""

    task_type: str
    gamefile: str
    #: exact progress label (docs/alignment.md): 1 if the step shortened the shortest plan to
    #: the goal, 0 if not; -1 at reset or without ``progress_oracle=True``
    oracle_progress: int


# -- mvpo/WebShop-v0 ------------------------------------------------------------------------------
class WebShopGoal(TypedDict):
    asin: str
    name: str
    query: str
    category: str
    product_category: str
    attributes: list[str]
    options: list[str]
    price_upper: float


class WebShopProduct(TypedDict):
    """One product of the results page shown."""

    asin: str
    title: str
    price: str  # as the page shows it, e.g. "$13.53"
    query: str
    category: str


class WebShopTextView(TypedDict):
    page: str
    searched: bool
    clicked_options: list[str]


class WebShopState(TypedDict):
    """``info["state"]`` of ``mvpo/WebShop-v0``; sentinels for what the page does not show."""

    observation: str
    page: str  # search | results | item | description | features | reviews | done
    query: str  # "" before the first search and after "back to search"
    results_page: int  # -1 before the first search and after "back to search"
    total_results: int  # -1 unless on a results page
    visible_asins: list[str]
    visible_products: list[WebShopProduct]
    item_asin: str  # "" unless on an item page (or its sub-pages)
    item_title: str  # "" unless on an item page
    item_options: dict[str, list[str]]
    selected_options: dict[str, str]
    visited_asins: list[str]
    page_text: str
    instruction: str
    goal: WebShopGoal
    purchased: bool
    task_score: float  # -1.0 until "buy now", then WebShop's score in [0, 1]
    item_match_score: float  # -1.0 unless on an item page
    last_action: str  # "" at reset
    text_view: WebShopTextView


class WebShopRewardInfo(TypedDict, total=False):
    """WebShop's reward breakdown: ``{}`` until the purchase step, then every key."""

    score: float
    r_type: float
    r_att: float
    r_option: float
    r_price: bool
    query_match: bool
    category_match: bool
    title_score: float
    num_attributes: int
    num_attr_matches: int
    num_options: int
    num_option_matches: int
    nouns: str


class WebShopInfo(Info):
    """``info`` of ``mvpo/WebShop-v0``."""

    task_score: float  # 0.0 until the purchase, then its score
    reward_info: WebShopRewardInfo
    goal_asin: str


# -- mvpo/SearchQA-v0 -----------------------------------------------------------------------------
class SearchHit(TypedDict):
    id: str
    score: float


class TranscriptTurn(TypedDict):
    action: str
    observation: str


class SearchQAState(TypedDict):
    """``info["state"]`` of ``mvpo/SearchQA-v0``."""

    observation: str
    question: str
    golden_answers: list[str]
    question_type: str  # "" when the data set gives none
    bridge: str  # "" unless a bridge question with its bridge entity
    entities: list[str]
    supporting_ids: list[str]
    num_searches: int
    num_invalid: int
    queries: list[str]
    retrieved_ids: list[str]
    retrieved_titles: list[str]
    last_hits: list[SearchHit]
    new_docs: int
    answer_seen: bool
    bridge_seen: bool
    answered: bool
    answer: str  # "" until an answer is given
    em: float
    f1: float
    substring_em: float
    last_action: str  # "" at reset
    last_action_type: str  # "" at reset, then "search" | "answer" | "invalid"
    transcript: list[TranscriptTurn]
    won: bool
    turn: int  # turns taken so far (0 at reset)
    observation_cut: bool  # the last observation was cut to max_obs_tokens


class SearchQAInfo(Info):
    """``info`` of ``mvpo/SearchQA-v0``."""

    em: float
    f1: float
    substring_em: float
    answer: str  # "" until an answer is given
    question_type: str
    golden_answers: list[str]


# -- mvpo/MilestoneChain-v0 (docs/control_task.md) ---------------------------------------------
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


#: env id -> (info TypedDict, state TypedDict)
INFO_TYPES: dict[str, tuple[type, type]] = {
    "mvpo/ALFWorld-v0": (AlfworldInfo, AlfworldState),
    "mvpo/WebShop-v0": (WebShopInfo, WebShopState),
    "mvpo/SearchQA-v0": (SearchQAInfo, SearchQAState),
    "mvpo/MilestoneChain-v0": (MilestoneChainInfo, MilestoneChainState),
}


def contract_errors(info: dict[str, Any], env_id: str) -> list[str]:
    """Every way ``info`` breaks the declared contract of ``env_id`` (``[]``: none).

    Checks exact types (``type(x) is int``, so ``True`` is not an ``int``), list elements,
    dict values, missing required keys and keys that are not declared.
    """
    info_type, state_type = INFO_TYPES[env_id]
    errors = _errors({k: v for k, v in info.items() if k != "state"}, info_type, "info", {"state"})
    if "state" in info:
        errors += _errors(info["state"], state_type, "info['state']", set())
    return errors


def _errors(value: Any, tp: Any, path: str, skip: set[str]) -> list[str]:
    if tp is Any:
        return []
    if typing.is_typeddict(tp):
        if type(value) is not dict:
            return [f"{path}: expected a dict, got {type(value).__name__}"]
        hints = typing.get_type_hints(tp)
        out = [
            f"{path}: missing key {k!r}"
            for k in sorted(tp.__required_keys__ - set(value) - skip)  # type: ignore[attr-defined]
        ]
        for key, item in value.items():
            if key in skip:
                continue
            if key not in hints:
                out.append(f"{path}: undeclared key {key!r} ({type(item).__name__})")
            else:
                out += _errors(item, hints[key], f"{path}[{key!r}]", set())
        return out
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is list:
        if type(value) is not list:
            return [f"{path}: expected a list, got {type(value).__name__}"]
        return [e for i, x in enumerate(value) for e in _errors(x, args[0], f"{path}[{i}]", set())]
    if origin is dict:
        if type(value) is not dict:
            return [f"{path}: expected a dict, got {type(value).__name__}"]
        return [e for k, x in value.items() for e in _errors(x, args[1], f"{path}[{k!r}]", set())]
    if type(value) is not tp:
        return [f"{path}: expected {tp.__name__}, got {type(value).__name__} ({value!r:.40})"]
    return []
