"""The declaration of ``mvpo/SearchQA-v0`` (docs/architecture.md, "A new environment"):
its Gymnasium entry (Search-R1's ``max_turns=4`` search turns plus its final answer-only turn,
docs/searchqa.md), info contract, default abstraction and Search-R1's prompts.
Imports no retriever."""

from __future__ import annotations

from typing import TypedDict

from mvpo_envs.base import Info
from mvpo_envs.declaration import EnvDeclaration, PromptTemplate


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


SEARCH_R1_INSTRUCTION = (
    "Answer the given question. You must conduct reasoning inside <think> and </think> "
    "first every time you get new information. After reasoning, if you find you lack some "
    "knowledge, you can call a search engine by <search> query </search> and it will return "
    "the top searched results between <information> and </information>. You can search as "
    "many times as you want. If you find no further external knowledge needed, you can "
    "directly provide the answer inside <answer> and </answer>, without detailed "
    "illustrations. For example, <answer> Beijing </answer>.\nQuestion: {task}\n"
)

SEARCHQA_PAPER = PromptTemplate(
    name="paper",
    first=SEARCH_R1_INSTRUCTION,
    step=SEARCH_R1_INSTRUCTION + "Your previous turns: {history}\nLatest result: {observation}\n",
    history_item="{action} {observation}",
    history_join="\n",
    score_prefix="",
    score_suffix="",
    projection="search_answer",
)

SEARCHQA_COMPACT = PromptTemplate(
    name="compact",
    first="Question: {task}\n",
    step="Question: {task}\n{history}",
    history_item="{action}\n{observation}\n",
    history_join="",
    score_prefix="",
    score_suffix="\n",
    use_chat=False,
    projection="search_answer",
)


DECLARATION = EnvDeclaration(
    id="mvpo/SearchQA-v0",
    entry_point="mvpo_envs.searchqa.env:SearchQAEnv",
    max_episode_steps=5,
    info_type=SearchQAInfo,
    state_type=SearchQAState,
    abstraction="searchqa",
    abstraction_module="mvpo_abstraction.searchqa",
    prompts={"paper": SEARCHQA_PAPER, "compact": SEARCHQA_COMPACT},
)
