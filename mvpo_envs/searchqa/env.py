"""``mvpo/SearchQA-v0``: Search-R1's search-and-answer protocol as a Gymnasium text env.

docs/environments.md, "mvpo/SearchQA-v0" and the common contract. One episode is one question.

* Observation at reset: Search-R1's instruction followed by ``Question: ...?`` (``prompt=
  "search-r1"``, default) or the bare question (``prompt="question"``). ``info["task"]`` is the
  question.
* ``<search> query </search>`` -> ``"\\n\\n<information>Doc 1(Title: ...) ...</information>\\n\\n"``
  (top ``topk`` passages, default 3), reward 0.
* ``<answer> text </answer>`` -> observation ``""``, reward = exact match (SQuAD normalisation,
  any golden answer), ``terminated``; ``info`` carries ``em``, ``f1``, ``substring_em``, ``answer``.
* Anything else (no tag, both tags, nested tags, empty content; see
  :func:`~mvpo_envs.searchqa.protocol.parse_action`) is an invalid action: Search-R1's fixed
  feedback text, reward 0, ``invalid_action=True``.
* ``TimeLimit`` (4 steps in the registration) truncates.

Actions are parsed from the *raw* text (case and line breaks kept), not from the base class's
canonical lower-cased form: :meth:`step` keeps the raw action for :meth:`_is_admissible` /
:meth:`_act`. ``info["state"]`` holds what :mod:`mvpo_abstraction.searchqa` reads.

Data: the bundled generated set (``split="train" | "test"``; ``"eval"`` is ``"test"``), or yours
with ``qa_path=`` (a QA jsonl, or a folder with ``<split>.jsonl``) and ``corpus_path=``.
Retrieval: ``retriever="bm25" | "dense" | "pyserini" | "http"`` (or a Retriever object) with
``retriever_kwargs``; local retrievers are shared by every env of a process.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from typing import Any

from mvpo_abstraction.base import Abstraction
from mvpo_envs.base import TextEnv, Transition
from mvpo_envs.searchqa.data import (
    Corpus,
    QAItem,
    bundled_corpus_path,
    load_corpus_shared,
    load_qa,
    resolve_qa_path,
    subset,
)
from mvpo_envs.searchqa.metrics import has_answer, normalize_answer, score_answer
from mvpo_envs.searchqa.protocol import (
    ACTION_TEMPLATES,
    INVALID_FEEDBACK,
    PARSE_MODES,
    ParsedAction,
    format_information,
    make_prompt,
    parse_action,
    split_contents,
)
from mvpo_envs.searchqa.retrievers import LOCAL_BACKENDS, Hit, Retriever, shared_retriever

PROMPTS = ("search-r1", "question")
#: longest raw action kept in ``state["transcript"]``
TRANSCRIPT_ACTION_CHARS = 2000


class SearchQAEnv(TextEnv):
    """Search-R1 question answering over a retriever; see the module docstring."""

    invalid_feedback = INVALID_FEEDBACK
    default_abstraction = "searchqa"

    def __init__(
        self,
        split: str = "train",
        corpus_path: str | os.PathLike | None = None,
        qa_path: str | os.PathLike | None = None,
        retriever: str | Retriever = "bm25",
        retriever_kwargs: Mapping[str, Any] | None = None,
        topk: int = 3,
        abstraction: str | Abstraction | None = None,
        render_mode: str | None = None,
        prompt: str = "search-r1",
        parse_mode: str = "strict",
        max_items: int | None = None,
    ):
        if prompt not in PROMPTS:
            raise ValueError(f"prompt must be one of {PROMPTS}, got {prompt!r}")
        if parse_mode not in PARSE_MODES:
            raise ValueError(f"parse_mode must be one of {PARSE_MODES}, got {parse_mode!r}")
        if not isinstance(topk, int) or topk <= 0:
            raise ValueError(f"topk must be a positive int, got {topk!r}")
        self.split, self.topk, self.prompt, self.parse_mode = split, topk, prompt, parse_mode
        self.qa_path = resolve_qa_path(qa_path, split)
        self.items: list[QAItem] = subset(load_qa(self.qa_path), max_items)
        self.retriever = self._make_retriever(
            retriever, dict(retriever_kwargs or {}), corpus_path, qa_path
        )
        super().__init__([item.id for item in self.items], abstraction, render_mode)
        self._item: QAItem | None = None
        self._raw_action: str | None = None
        self._parsed = ParsedAction(None)
        self._state: dict[str, Any] = {}

    @staticmethod
    def _make_retriever(
        retriever: str | Retriever, kwargs: dict[str, Any], corpus_path: Any, qa_path: Any
    ) -> Retriever:
        if isinstance(retriever, Retriever):
            return retriever
        if retriever not in LOCAL_BACKENDS:  # "http" (or an unknown name: make_retriever says so)
            return shared_retriever(retriever, None, **kwargs)
        prebuilt = retriever == "pyserini" and "index_dir" in kwargs
        if corpus_path is None and qa_path is not None and not prebuilt:
            raise ValueError(
                "qa_path= was given without corpus_path=: pass the corpus your questions need"
            )
        corpus: Corpus | None = None
        if corpus_path is not None or not prebuilt:
            path = corpus_path if corpus_path is not None else bundled_corpus_path()
            corpus = load_corpus_shared(path)
        return shared_retriever(retriever, corpus, **kwargs)

    # -- Gymnasium API: keep the raw action text ------------------------------------------------
    def step(self, action: str):
        self._raw_action = action if isinstance(action, str) else None
        try:
            return super().step(action)
        finally:
            self._raw_action = None

    # -- TextEnv hooks ---------------------------------------------------------------------------
    def task_text(self) -> str:
        return self._item.question if self._item is not None else ""

    def _is_admissible(self, command: str) -> bool:
        raw = self._raw_action if self._raw_action is not None else command
        self._parsed = parse_action(raw, self.parse_mode)
        return self._parsed.valid

    def _start(self, task_index: int) -> Transition:
        item = self._item = self.items[task_index]
        meta = item.metadata
        self._state = {
            "question": item.question,
            "golden_answers": list(item.golden_answers),
            "question_type": item.type,
            "bridge": meta.get("bridge"),
            "entities": list(meta.get("entities") or []),
            "supporting_ids": [str(i) for i in meta.get("supporting_ids") or []],
            "num_searches": 0,
            "num_invalid": 0,
            "queries": [],
            "retrieved_ids": [],
            "retrieved_titles": [],
            "last_hits": [],
            "new_docs": 0,
            "answer_seen": False,
            "bridge_seen": False,
            "answered": False,
            "answer": None,
            "em": 0.0,
            "f1": 0.0,
            "substring_em": 0.0,
            "last_action": None,
            "last_action_type": None,
            "transcript": [],
        }
        observation = make_prompt(item.question) if self.prompt == "search-r1" else item.question
        return self._transition(observation)

    def _act(self, command: str) -> Transition:
        parsed, raw = self._parsed, self._raw_action if self._raw_action is not None else command
        state = self._state
        state["last_action"], state["last_action_type"] = raw, parsed.kind
        if parsed.kind == "search":
            hits = self.retriever.search([parsed.content], self.topk)[0]
            self._record_search(parsed.content, hits)
            observation = format_information(hits)
            self._log(raw, observation)
            return self._transition(observation)
        scores = score_answer(parsed.content, self._item.golden_answers)
        state.update(answered=True, answer=parsed.content, **scores)
        self._log(raw, "")
        won = scores["em"] == 1.0
        return self._transition("", reward=scores["em"], terminated=True, won=won)

    def _invalid(self, command: str) -> Transition:
        state = self._state
        state["num_invalid"] += 1
        state["last_action_type"] = "invalid"
        state["last_action"] = self._raw_action if self._raw_action is not None else command
        self._log(state["last_action"], self.invalid_feedback)
        done = bool(state["answered"])
        return self._transition(
            self.invalid_feedback, won=done and state["em"] == 1.0, terminal=done
        )

    # -- helpers ---------------------------------------------------------------------------------
    def _record_search(self, query: str, hits: list[Hit]) -> None:
        state, golds = self._state, self._item.golden_answers
        state["num_searches"] += 1
        state["queries"].append(query)
        seen = set(state["retrieved_ids"])
        new = [h for h in hits if h["id"] not in seen]
        state["new_docs"] = len(new)
        for hit in new:
            state["retrieved_ids"].append(hit["id"])
            state["retrieved_titles"].append(split_contents(hit["contents"])[0].strip().strip('"'))
        state["last_hits"] = [{"id": h["id"], "score": h["score"]} for h in hits]
        if any(has_answer(h["contents"], golds) for h in hits):
            state["answer_seen"] = True
        state["bridge_seen"] = self._bridge_seen()

    def _bridge_seen(self) -> bool:
        """Bridge question: the bridge entity's passage retrieved (by id, else by title).

        Comparison: every supporting passage retrieved. Single-hop / no metadata: never.
        """
        state, qtype = self._state, self._item.type
        ids, titles = (
            set(state["retrieved_ids"]),
            {normalize_answer(t) for t in state["retrieved_titles"]},
        )
        support = state["supporting_ids"]
        if qtype == "comparison":
            if support:
                return all(i in ids for i in support)
            return bool(state["entities"]) and all(
                normalize_answer(e) in titles for e in state["entities"]
            )
        bridge = state["bridge"]
        if not bridge:
            return False
        if qtype == "bridge" and len(support) >= 2:
            return support[1] in ids
        return normalize_answer(bridge) in titles

    def _log(self, action: str, observation: str) -> None:
        self._state["transcript"].append(
            {"action": action[:TRANSCRIPT_ACTION_CHARS], "observation": observation}
        )

    def _transition(
        self,
        observation: str,
        reward: float = 0.0,
        terminated: bool = False,
        won: bool = False,
        terminal: bool = False,
    ) -> Transition:
        state = self._state
        over = terminated or terminal
        extras = {
            "em": state["em"],
            "f1": state["f1"],
            "substring_em": state["substring_em"],
            "answer": state["answer"],
            "question_type": state["question_type"],
            "golden_answers": list(state["golden_answers"]),
        }
        return Transition(
            observation=observation,
            admissible=[] if over else list(ACTION_TEMPLATES),
            # a snapshot: the tracker keeps the previous state, which later steps must not mutate
            state=copy.deepcopy({**state, "won": won, "observation": observation}),
            reward=reward,
            terminated=terminated,
            won=won,
            extras=extras,
        )


def make_searchqa(**kwargs: Any) -> SearchQAEnv:
    return SearchQAEnv(**kwargs)
