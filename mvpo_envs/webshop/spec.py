"""The declaration of ``mvpo/WebShop-v0`` (docs/architecture.md, "A new environment"):
its Gymnasium entry, info contract, default abstraction, prompts and the score-mode hint.
Imports no engine (docs/webshop.md)."""

from __future__ import annotations

from typing import TypedDict

from mvpo_envs.base import Info
from mvpo_envs.declaration import THINK_ACTION, EnvDeclaration, PromptTemplate


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


WEBSHOP_PAPER = PromptTemplate(
    name="paper",
    first=(
        "You are an expert autonomous agent operating in the WebShop e-commerce environment.\n"
        "Your task is to: {task}.\n"
        "Your current observation is: {observation}.\n"
        "Your admissible actions of the current situation are: [\n{admissible}\n].\n\n"
        + THINK_ACTION
    ),
    step=(
        "You are an expert autonomous agent operating in the WebShop e-commerce environment.\n"
        "Your task is to: {task}.\n"
        "Prior to this step, you have already taken {step} step(s). Below are the most recent "
        "{n_history} observations and the corresponding actions you took: {history}\n"
        "You are now at step {step_no} and your current observation is: {observation}.\n"
        "Your admissible actions of the current situation are: [\n{admissible}\n].\n\n"
        + THINK_ACTION
    ),
    history_item="[Observation {index}: '{observation}', Action {index}: '{action}']",
    admissible_join=",\n",
)


DECLARATION = EnvDeclaration(
    id="mvpo/WebShop-v0",
    entry_point="mvpo_envs.webshop.env:WebShopEnv",
    max_episode_steps=15,
    info_type=WebShopInfo,
    state_type=WebShopState,
    abstraction="webshop",
    abstraction_module="mvpo_abstraction.webshop",
    prompts={"paper": WEBSHOP_PAPER},
    score_template_hint=(
        'add "search_query": "instruction" to --env-kwargs (the search page then lists '
        "search[<the task instruction>])"
    ),
    # the CPU presets score the admissible actions: the search page must list a filled query
    train_defaults={
        "cpu-tiny": {"env_kwargs": {"search_query": "instruction"}},
        "cpu-showcase": {"env_kwargs": {"search_query": "instruction"}},
    },
)
