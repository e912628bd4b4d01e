"""``mvpo/SearchQA-v0``: Search-R1's search-and-answer protocol as a Gymnasium text env.

docs/searchqa.md (usage, protocol, the fidelity table) and docs/environments.md (the common
contract). The class docstring of :class:`SearchQAEnv` is the reference.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from typing import Any

from mvpo_abstraction.base import Abstraction
from mvpo_envs.base import TextEnv, Transition
from mvpo_envs.searchqa.budget import (
    DEFAULT_TOKENIZER,
    SEARCH_R1_MAX_OBS_TOKENS,
    cut_to_tokens,
    resolve_tokenizer,
)
from mvpo_envs.searchqa.data import (
    Corpus,
    QAItem,
    bundled_corpus_path,
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
from mvpo_envs.searchqa.store import CompactCorpus, open_corpus

PROMPTS = ("search-r1", "question")
#: Search-R1's ``max_turns`` in its training and evaluation scripts (search-able turns)
SEARCH_R1_MAX_TURNS = 4
#: longest raw action kept in ``state["transcript"]``
TRANSCRIPT_ACTION_CHARS = 2000


class SearchQAEnv(TextEnv):
    """Question answering with a search engine, as Search-R1 trains it.

    One episode is one question. The agent writes ``<search> query </search>`` to retrieve the
    top ``topk`` passages, and ends with ``<answer> text </answer>``.

    **Action space**: text (:class:`~mvpo_envs.spaces.AnyText`), the model's whole output for
    the turn. It is parsed from the raw text (case and line breaks kept) with ``parse_mode``:
    ``"search-r1"`` (default; Search-R1's rule: cut after the first ``</search>``, else after
    the first ``</answer>``, then the first ``<(search|answer)>(.*?)</\\1>``, empty content
    allowed) or ``"strict"`` (exactly one non-empty tag pair). A non-``str`` action raises
    ``TypeError``; nothing a model writes raises.

    **Observation space**: text. At reset, Search-R1's instruction followed by ``Question:
    ...?`` (``prompt="search-r1"``) or the bare question (``prompt="question"``). After a search,
    ``"\\n\\n<information>Doc 1(Title: T) text\\n...</information>\\n\\n"``; after an
    answer, ``""``; after an unparsable output, Search-R1's fixed invalid-action text
    (:data:`~mvpo_abstraction.text_rules.searchqa.INVALID_FEEDBACK`). Every step's observation
    is cut to its first ``max_obs_tokens`` tokens of ``tokenizer`` (Search-R1's
    ``max_obs_length=500``; :mod:`mvpo_envs.searchqa.budget`).

    **Reward**: on the answer step, exact match after SQuAD normalisation against any golden
    answer (Search-R1's ``em_check``), 0 or 1; every other step 0. ``info`` adds ``em``,
    ``f1``, ``substring_em``, ``answer``, ``question_type``, ``golden_answers`` and the common
    contract (docs/environments.md).

    **Episode end**: ``terminated`` on the answer. A step after the end (Search-R1 never takes
    one: its loop drops finished rollouts) repeats the end: the invalid text, reward 0,
    ``invalid_action=True``, the state unchanged and ``terminated`` again after an answer
    (``truncated`` again after the final turn); :meth:`reset` starts the next episode. Search-R1's turn budget (``max_turns=4``):
    turns 1..``max_turns`` may search; turn ``max_turns + 1`` is the final, answer-only turn
    (Search-R1's last generation with ``do_search=False``): an answer there scores as usual; a
    search returns the empty ``<information></information>`` block and an unparsable output the
    invalid text, and either ends the episode with ``truncated=True``. The registration's
    ``TimeLimit`` should be ``max_turns + 1`` (5); with ``max_turns=None`` the env sets no
    budget and only ``TimeLimit`` truncates (every turn may search: the behaviour before v0
    revision 2).

    **Arguments**: ``split`` (``"train"``/``"test"``/``"eval"`` of the bundled set, or
    ``<qa_path>/<split>.jsonl``), ``corpus_path``, ``qa_path`` (FlashRAG jsonl), ``retriever``
    (``"bm25"``, ``"dense"``, ``"pyserini"``, ``"http"`` or a
    :class:`~mvpo_envs.searchqa.retrievers.Retriever`), ``retriever_kwargs`` (backend options,
    plus ``query_cache_size``), ``topk`` (3), ``abstraction`` (``"searchqa"``), ``render_mode``
    (``"human"``/``"ansi"``), ``prompt``, ``parse_mode``, ``max_items``, ``max_turns`` (4 or
    ``None``), ``max_obs_tokens`` (500 or ``None`` = no cut), ``tokenizer`` (``"tiny-qwen2"``,
    the default policy's; pass your policy's model folder), ``corpus_store`` (``"auto"``: a
    corpus file of 64 MiB or more is opened as a memory-mapped compact store shared by every
    env and process, docs/searchqa.md "Large corpora"; ``"memory"``, ``"compact"``).

    **Version history**: v0 revision 3 (this one): a step after the end repeats the end
    (was ``terminated=False``, counted as an invalid step); questions nobody can play or win
    are refused at load (docs/searchqa.md, "Bad files"). v0 revision 2: Search-R1's parse
    rule, turn budget and observation cut became the defaults (were ``"strict"`` parsing, 4
    steps that may all search, no cut; all three remain as options). v0: first release.
    """

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
        parse_mode: str = "search-r1",
        max_items: int | None = None,
        max_turns: int | None = SEARCH_R1_MAX_TURNS,
        max_obs_tokens: int | None = SEARCH_R1_MAX_OBS_TOKENS,
        tokenizer: Any = DEFAULT_TOKENIZER,
        corpus_store: str = "auto",
    ):
        if prompt not in PROMPTS:
            raise ValueError(f"prompt must be one of {PROMPTS}, got {prompt!r}")
        if parse_mode not in PARSE_MODES:
            raise ValueError(f"parse_mode must be one of {PARSE_MODES}, got {parse_mode!r}")
        if not isinstance(topk, int) or isinstance(topk, bool) or topk <= 0:
            raise ValueError(f"topk must be a positive int, got {topk!r}")
        for name, value in (("max_turns", max_turns), ("max_obs_tokens", max_obs_tokens)):
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value <= 0
            ):
                raise ValueError(f"{name} must be a positive int or None, got {value!r}")
        self.split, self.topk, self.prompt, self.parse_mode = split, topk, prompt, parse_mode
        self.max_turns, self.max_obs_tokens = max_turns, max_obs_tokens
        self.tokenizer = resolve_tokenizer(tokenizer) if max_obs_tokens is not None else None
        self.qa_path = resolve_qa_path(qa_path, split)
        self.items: list[QAItem] = subset(load_qa(self.qa_path), max_items)
        self.retriever = self._make_retriever(
            retriever, dict(retriever_kwargs or {}), corpus_path, qa_path, corpus_store
        )
        super().__init__([item.id for item in self.items], abstraction, render_mode)
        self._item: QAItem | None = None
        self._raw_action: str | None = None
        self._parsed = ParsedAction(None)
        self._state: dict[str, Any] = {}
        self._turns = 0
        self._final_turn = False

    @staticmethod
    def _make_retriever(
        retriever: str | Retriever,
        kwargs: dict[str, Any],
        corpus_path: Any,
        qa_path: Any,
        corpus_store: str = "auto",
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
        corpus: Corpus | CompactCorpus | None = None
        if corpus_path is not None or not prebuilt:
            path = corpus_path if corpus_path is not None else bundled_corpus_path()
            corpus = open_corpus(path, corpus_store, kwargs.get("cache_dir"))
        return shared_retriever(retriever, corpus, **kwargs)

    # -- Gymnasium API: keep the raw action text ------------------------------------------------
    def step(self, action: str):
        if not isinstance(action, str):
            return super().step(action)  # raises the contract's TypeError
        if not self._done:  # after the end nothing counts (see _invalid)
            self._turns += 1
            self._final_turn = self.max_turns is not None and self._turns > self.max_turns
        self._raw_action = action
        try:
            observation, reward, terminated, truncated, info = super().step(action)
        finally:
            self._raw_action = None
        if self._final_turn and not terminated:
            truncated, self._done = True, True  # the answer-only turn ended without an answer
        return observation, reward, terminated, truncated, info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self._turns, self._final_turn = 0, False
        return super().reset(seed=seed, options=options)

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
            # one type per key (docs/environments.md, "Info contract"): "" = absent
            "question_type": item.type or "",
            "bridge": str(meta.get("bridge") or ""),
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
            "answer": "",
            "em": 0.0,
            "f1": 0.0,
            "substring_em": 0.0,
            "last_action": "",
            "last_action_type": "",
            "transcript": [],
            "turn": 0,
            "observation_cut": False,
        }
        observation = make_prompt(item.question) if self.prompt == "search-r1" else item.question
        return self._transition(observation)

    def _act(self, command: str) -> Transition:
        parsed, raw = self._parsed, self._raw_action if self._raw_action is not None else command
        state = self._state
        state["last_action"], state["last_action_type"] = raw, parsed.kind
        if parsed.kind == "search":
            # the final turn runs with do_search=False: the block comes back empty
            hits = [] if self._final_turn else self.retriever.search([parsed.content], self.topk)[0]
            self._record_search(parsed.content, hits)
            observation = self._cut(format_information(hits))
            self._log(raw, observation)
            return self._transition(observation)
        scores = score_answer(parsed.content, self._item.golden_answers)
        state.update(answered=True, answer=parsed.content, **scores)
        self._log(raw, "")
        won = scores["em"] == 1.0
        return self._transition("", reward=scores["em"], terminated=True, won=won)

    def _invalid(self, command: str) -> Transition:
        state = self._state
        if self._done:  # after the episode ended the end repeats: nothing changes, reward 0
            return self._transition(
                self._cut(self.invalid_feedback),
                terminated=bool(state["answered"]),
                won=bool(state["answered"]) and state["em"] == 1.0,
                terminal=True,
            )
        state["num_invalid"] += 1
        state["last_action_type"] = "invalid"
        state["last_action"] = self._raw_action if self._raw_action is not None else command
        observation = self._cut(self.invalid_feedback)
        self._log(state["last_action"], observation)
        return self._transition(observation)

    # -- helpers ---------------------------------------------------------------------------------
    def _cut(self, observation: str) -> str:
        """Search-R1's ``max_obs_length`` cut (see :mod:`mvpo_envs.searchqa.budget`)."""
        if self.max_obs_tokens is None:
            return observation
        cut, was_cut = cut_to_tokens(observation, self.tokenizer, self.max_obs_tokens)
        self._state["observation_cut"] = was_cut
        return cut

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

    def _templates(self) -> list[str]:
        """The action templates of the next turn: answer only on the final turn."""
        if self.max_turns is not None and self._turns + 1 > self.max_turns:
            return [t for t in ACTION_TEMPLATES if t.startswith("<answer>")]
        return list(ACTION_TEMPLATES)

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
        state["turn"] = self._turns
        over = terminated or terminal or self._final_turn
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
            admissible=[] if over else self._templates(),
            # a snapshot: the tracker keeps the previous state, which later steps must not mutate
            state=copy.deepcopy({**state, "won": won, "observation": observation}),
            reward=reward,
            terminated=terminated,
            won=won,
            extras=extras,
        )


def make_searchqa(**kwargs: Any) -> SearchQAEnv:
    return SearchQAEnv(**kwargs)
