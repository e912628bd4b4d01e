"""``mvpo/WebShop-v0``: WebShop's text-mode shopping task as a Gymnasium text env.

docs/environments.md, "mvpo/WebShop-v0" and "Common contract". Observations are WebShop's text
mode (visible strings joined by `` [SEP] ``, see :mod:`mvpo_envs.webshop.engine`); actions are
``search[<query>]`` (any page, as in WebShop) and ``click[<clickable>]``. ``click[buy now]``
ends the episode with reward = WebShop's score (``info["task_score"]``); ``won`` iff the score
is 1.0. Gymnasium's ``TimeLimit`` truncates at 15 steps.

``info["admissible_actions"]`` lists ``click[x]`` for every clickable of the page (WebShop's
``get_available_actions``, minus ``search``) and, on the search page, the template
``search[<query>]``: any non-empty text in the brackets is a valid search (accepted on every
page with the default ``protocol="original"``, docs/fidelity.md). ``search_query="instruction"``
(opt-in) lists ``search[<the task instruction>]`` there instead, so that a policy choosing among
the admissible actions can search (docs/webshop.md, "Score mode"). An inadmissible action is a
no-op as in WebShop: the same page comes back, reward 0, ``invalid_action=True``.

Data (kwargs): bundled catalog by default (``split="train"|"test"|"all"``); ``data_dir=`` or
``$WEBSHOP_DATA`` for WebShop's own files (:func:`mvpo_envs.webshop.data.load_data_dir`);
``goal_source="synthetic"|"human"``; ``search_backend="bm25s"|"pyserini"``;
``reward="original"|"fixed"``; ``protocol="original"|"strict"``;
``search_query="template"|"instruction"``; ``catalog="auto"|"memory"|"compact"`` (see
:class:`WebShopEnv`). ``expert_actions(i)``: the scripted expert's winning actions for task
``i`` (docs/webshop.md, "Expert plans").
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from mvpo_abstraction.base import Abstraction
from mvpo_envs.base import TextEnv, Transition, canonical_command
from mvpo_envs.webshop.data import (
    NUM_TEST_GOALS,
    PRICE_SEED,
    WebShopData,
    load_bundled,
    load_data_dir,
    resolve_files,
)
from mvpo_envs.webshop.engine import Session, WebShopEngine
from mvpo_envs.webshop.expert import expert_episode
from mvpo_envs.webshop.nouns import NounExtractor, default_noun_extractor, extractor_name
from mvpo_envs.webshop.reward import REWARD_RULES
from mvpo_envs.webshop.search import BM25sRetriever, default_cache_dir, make_retriever
from mvpo_envs.webshop.store import CompactData, TaskIds, fingerprint, open_or_build
from mvpo_envs.webshop.text_view import initial_view, update_view

SEARCH_TEMPLATE = "search[<query>]"
_ACTION = re.compile(r"^(search|click)\[(.*)\]$", re.DOTALL)
#: WebShop's ``parse_action``: ``re.match`` (no end anchor, ``.`` stops at a newline)
_ORIGINAL_ACTION = re.compile(r"(.+)\[(.+)\]")
#: ``protocol=``: WebShop's action handling, or the stricter mvpo-v0 form (docs/fidelity.md)
PROTOCOLS = ("original", "strict")
#: ``search_query=``: what the search page lists: WebShop's template, or the filled-in search
#: of the task instruction (an opt-in for policies that choose among admissible actions)
SEARCH_QUERIES = ("template", "instruction")

_DATA_CACHE: dict[tuple, WebShopData | CompactData] = {}
#: ``catalog=``: in memory, compact store (memory-mapped), or compact from a size on
CATALOGS = ("auto", "memory", "compact")
#: ``catalog="auto"`` opens a products file of this size or more as a compact store
COMPACT_AUTO_BYTES = 64 * 2**20
_ENGINE_CACHE: dict[tuple, WebShopEngine] = {}


def parse_action(command: str) -> tuple[str, str] | None:
    """``"click[next >]" -> ("click", "next >")``; ``None`` when it is neither form."""
    m = _ACTION.match(command.strip())
    return (m.group(1), m.group(2).strip()) if m else None


def parse_action_original(action: str) -> tuple[str, str | None]:
    """WebShop's ``parse_action`` then ``step``'s lower-casing: ``(name, lower-cased arg)``.

    ``"click[Buy Now]" -> ("click", "buy now")``; ``"Search[x]" -> ("Search", "x")`` (the
    name is case-sensitive, so that is a no-op); ``"search[]" -> ("search[]", None)``.
    """
    m = _ORIGINAL_ACTION.match(action)
    if m is None:
        return action, None
    return m.group(1), m.group(2).lower()


def use_compact(
    catalog: str, data_dir: Any, products_file: Any, cache_dir: Any
) -> tuple[bool, Path | None]:
    """Whether a catalog opens as a compact store, and its folder (docs/webshop.md,
    "Large catalogs"): ``"compact"`` always, ``"memory"`` never, ``"auto"`` when the products
    file has at least :data:`COMPACT_AUTO_BYTES` and a disk cache is allowed."""
    if catalog not in CATALOGS:
        raise ValueError(f"catalog must be one of {CATALOGS}, got {catalog!r}")
    if catalog == "memory" or not data_dir:
        if catalog == "compact":
            raise ValueError("catalog='compact' needs data_dir= (the bundled catalog is small)")
        return False, None
    if cache_dir is False or cache_dir is None:
        if catalog == "compact":
            raise ValueError("catalog='compact' needs a disk cache: cache_dir must not be False")
        return False, None
    _, found = resolve_files(data_dir, products_file)
    products = found["products"]
    assert products is not None
    if catalog == "auto" and products.stat().st_size < COMPACT_AUTO_BYTES:
        return False, None
    base = default_cache_dir() if cache_dir is True else Path(cache_dir)
    return True, base


def load_data(
    data_dir: str | os.PathLike | None,
    goal_source: str,
    products_file: str | os.PathLike | None = None,
    num_products: int | None = None,
    price_seed: int = PRICE_SEED,
    catalog: str = "auto",
    cache_dir: str | os.PathLike | bool | None = True,
) -> WebShopData | CompactData:
    """Products and goals, cached per process (every env of a sync vector env shares them).

    A compact catalog (:mod:`mvpo_envs.webshop.store`) is keyed by its fingerprint, so every
    env of the process and every process of the machine maps the same files.
    """
    compact, base = use_compact(catalog, data_dir, products_file, cache_dir)
    if compact and base is not None:
        folder, found = resolve_files(data_dir, products_file)  # type: ignore[arg-type]
        fp = fingerprint(
            [found[k] for k in ("products", "attributes", "human", "reviews")]
            + ([found["human_goals"]] if found.get("human_goals") else []),  # the goals' order
            {"goal_source": goal_source, "num_products": num_products, "price_seed": price_seed},
        )
        key = ("compact", fp, str(base))
        if key not in _DATA_CACHE:
            _DATA_CACHE[key] = open_or_build(
                base / f"catalog-{fp}",
                lambda: load_data_dir(
                    data_dir,  # type: ignore[arg-type]
                    goal_source,
                    products_file,
                    num_products,
                    price_seed,
                ),
            )
        return _DATA_CACHE[key]
    key = (str(data_dir or ""), goal_source, str(products_file or ""), num_products, price_seed)
    if key not in _DATA_CACHE:
        if data_dir:
            _DATA_CACHE[key] = load_data_dir(
                data_dir, goal_source, products_file, num_products, price_seed
            )
        else:
            _DATA_CACHE[key] = load_bundled(goal_source)
    return _DATA_CACHE[key]


def make_engine(
    data: WebShopData, backend: str, cache_dir: Any, nouns: NounExtractor
) -> WebShopEngine:
    key = (id(data), backend, str(cache_dir), id(nouns))
    if key not in _ENGINE_CACHE:
        compact = isinstance(data, CompactData)
        if compact and backend == "bm25s" and data.bm25s_dir is not None:
            retriever: Any = BM25sRetriever.from_saved(data.bm25s_dir, data.asins)
        else:
            retriever = make_retriever(data.products, backend, cache_dir=cache_dir)
        warm = getattr(nouns, "warm", None)
        # goal names are tagged in one batch at the first reward; a compact catalog's millions
        # of goals are tagged when played instead (same tags, cached per name)
        if warm is not None and not compact:
            warm({str(g.get("name", "")) for g in data.goals})
        _ENGINE_CACHE[key] = WebShopEngine(data.by_asin, data.prices, retriever, nouns)
    return _ENGINE_CACHE[key]


class WebShopEnv(TextEnv):
    """WebShop's text-mode shopping task (``mvpo/WebShop-v0``).

    ## Description
    The agent reads a shopping instruction ("i need a sulfate free shampoo ... with size:
    8 fl oz, and price lower than 30.00 dollars"), searches a product catalog, opens products,
    picks options and buys one. The score is WebShop's ``get_reward`` of the purchase
    (docs/webshop.md; every deviation from the original is an opt-in, docs/fidelity.md).

    ## Action space
    Free text (:class:`mvpo_envs.spaces.AnyText`): ``search[<query>]`` or ``click[<name>]``.
    ``protocol="original"`` (default) handles them as WebShop's ``WebAgentTextEnv.step``:
    WebShop's ``parse_action`` regex, a case-sensitive action name, the argument lower-cased
    (not stripped); ``search[...]`` works on every page, the done page included; the special
    queries ``<r>``, ``<a>``, ``<c>``, ``<q>``; a click needs a clickable of the page (not
    ``search``). ``info["admissible_actions"]`` lists what WebShop's ``get_available_actions``
    offers: the ``search[<query>]`` template on the search page, ``click[x]`` per clickable.
    With ``search_query="instruction"`` the search page lists ``search[<instruction>]`` (the
    task instruction, whitespace collapsed: the query WebShop's random player sends) in place
    of the template; what is accepted does not change.

    ## Observation space
    Free text: WebShop's ``observation_mode="text"`` page (visible strings joined by
    `` [SEP] ``). ``info["state"]`` holds structured page facts for the abstraction.

    ## Rewards
    0 on every step except ``click[buy now]``: WebShop's score in [0, 1]
    (``info["task_score"]``, parts in ``info["reward_info"]``); ``reward="original"``
    (default) keeps WebShop's option-matching quirk on synthetic goals. ``success_reward=True``
    pays 1.0 on the step that wins (a purchase scoring 1.0) and 0 otherwise, the MVPO paper's
    WebShop reward (verl-agent's WebShop worker); ``info["task_score"]`` still holds the score.

    ## Starting state
    The search page of the task chosen by ``reset(seed=..., options=...)`` (see
    :func:`mvpo_envs.base.select_task_index`); goals are WebShop's, shuffled with seed 233.

    ## Episode end
    Termination: a purchase (``won`` iff the score is 1.0). Truncation: Gymnasium's
    ``TimeLimit`` at 15 steps. With ``protocol="original"`` a step after a purchase is
    handled as WebShop does (a search starts over; nothing is clickable on the done page).

    ## Arguments
    ``split`` ("train" | "test" | "all": the first ``num_test_goals`` goals are the test
    split), ``data_dir`` (or ``$WEBSHOP_DATA``: WebShop's own files; bundled catalog when
    unset), ``goal_source`` ("synthetic" | "human"), ``search_backend`` ("bm25s" | "pyserini"),
    ``reward`` ("original" | "fixed"), ``success_reward`` (bool, default False: see Rewards),
    ``protocol`` ("original" | "strict": search only on
    the search page, no special queries, action names compared after lower-casing and
    collapsing spaces), ``search_query`` ("template" | "instruction": the admissible search
    on the search page, docs/webshop.md "Score mode"), ``catalog`` ("auto" | "memory" |
    "compact"; ``"auto"`` opens a products file of 64 MiB or more as a memory-mapped compact
    store, docs/webshop.md "Large catalogs"), ``abstraction``, ``render_mode``,
    ``products_file``, ``num_products``, ``num_test_goals``, ``cache_dir``, ``nouns``.

    ## Expert plans
    :meth:`expert_actions` (the optional hook of :mod:`mvpo_train.tiny_model` and the encoder
    policy's warm start): the scripted expert's actions on a task where it wins, played on a
    private copy of the env, so the current episode is left alone (docs/webshop.md).

    ## Version history
    * v0: WebShop's protocol and reward by default; ``reward="fixed"`` and
      ``protocol="strict"`` keep the earlier mvpo behaviour as opt-ins;
      ``search_query="instruction"`` fills the search page's template for score-mode policies;
      ``success_reward=True`` pays only a won episode.
    """

    default_abstraction = "webshop"
    invalid_feedback = ""  # WebShop's no-op shows the same page again (see _invalid)

    def __init__(
        self,
        split: str = "train",
        data_dir: str | os.PathLike | None = None,
        goal_source: str = "synthetic",
        search_backend: str = "bm25s",
        abstraction: str | Abstraction | None = None,
        render_mode: str | None = None,
        products_file: str | os.PathLike | None = None,
        num_products: int | None = None,
        num_test_goals: int = NUM_TEST_GOALS,
        cache_dir: str | os.PathLike | bool | None = True,
        nouns: NounExtractor | None = None,
        reward: str = "original",
        protocol: str = "original",
        search_query: str = "template",
        catalog: str = "auto",
        success_reward: bool = False,
    ):
        if not isinstance(success_reward, bool):  # a string "false" would be truthy
            raise ValueError(f"success_reward must be True or False, got {success_reward!r}")
        if reward not in REWARD_RULES:
            raise ValueError(f"reward must be one of {REWARD_RULES}, got {reward!r}")
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
        if search_query not in SEARCH_QUERIES:
            raise ValueError(
                f"search_query must be one of {SEARCH_QUERIES}, got {search_query!r} "
                "('instruction' lists search[<the task instruction>] on the search page)"
            )
        if isinstance(data_dir, str) and not data_dir.strip():  # not a silent "bundled data"
            raise ValueError("data_dir is empty: give a folder, or omit it for the bundled data")
        data_dir = data_dir if data_dir is not None else os.environ.get("WEBSHOP_DATA") or None
        for name, value, low in (
            ("num_products", num_products, 1),
            ("num_test_goals", num_test_goals, 0),
        ):
            if value is None and name == "num_products":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                # a negative count would slice from the end: silently other products or goals
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        if not data_dir and (num_products is not None or products_file is not None):
            raise ValueError(
                "num_products / products_file select WebShop's own files: give data_dir= (or "
                "$WEBSHOP_DATA); the bundled catalog is used whole"
            )
        self.data = load_data(
            data_dir, goal_source, products_file, num_products, catalog=catalog, cache_dir=cache_dir
        )
        self.split = split
        self.goal_source = goal_source
        self.reward_rule = reward
        self.protocol = protocol
        self.search_query = search_query
        self.success_reward = success_reward
        self.goals = self.data.split(split, num_test_goals)
        if not self.goals:
            raise ValueError(
                f"no tasks to play: split={split!r} of the {len(self.data.goals)} "
                f"{goal_source} goals in {self.data.source} is empty (the first "
                f"num_test_goals={num_test_goals} goals form 'test', the rest 'train'); pass "
                "split='test' or split='all', or a smaller num_test_goals"
            )
        if isinstance(self.data, CompactData):  # ids read on demand, not a list per env
            lazy = TaskIds(f"{goal_source}-{split}", self.goals, self.data.goal_asins)
            super().__init__(lazy[:1], abstraction, render_mode)
            self.task_ids = lazy  # type: ignore[assignment]
        else:
            ids = [f"{goal_source}-{split}-{i:05d}-{g['asin']}" for i, g in enumerate(self.goals)]
            super().__init__(ids, abstraction, render_mode)
        self.nouns = nouns or default_noun_extractor()
        self.engine = make_engine(self.data, search_backend, cache_dir, self.nouns)
        self.search_backend = search_backend
        # what a private copy for the expert needs (expert_actions); data_dir resolved above
        self._settings: dict[str, Any] = {
            "split": split,
            "data_dir": data_dir,
            "goal_source": goal_source,
            "search_backend": search_backend,
            "products_file": products_file,
            "num_products": num_products,
            "num_test_goals": num_test_goals,
            "cache_dir": cache_dir,
            "reward": reward,
            "protocol": protocol,
            "search_query": search_query,
            "catalog": catalog,
            "success_reward": success_reward,
        }
        self._expert_env: WebShopEnv | None = None
        self._session: Session | None = None
        self._text_view: dict[str, Any] = {}
        self._clickables: dict[str, Any] = {}
        self._canon: dict[str, str] = {}
        self._raw_action = ""

    # -- Gymnasium API ---------------------------------------------------------------------------
    def step(self, action: str):
        """Gymnasium's ``step``; WebShop reads the action as typed (not canonicalised)."""
        self._raw_action = action if isinstance(action, str) else ""
        if self.protocol == "original":
            self._done = False  # WebShop keeps the session after a purchase
        obs, reward, terminated, truncated, info = super().step(action)
        if self.success_reward:  # the MVPO paper's WebShop reward: only a won episode pays
            reward = 1.0 if terminated and info.get("won") else 0.0
        return obs, reward, terminated, truncated, info

    # -- TextEnv hooks ---------------------------------------------------------------------------
    def _start(self, task_index: int) -> Transition:
        self._session = self.engine.start(
            self.goals[task_index],
            reward_rule=self.reward_rule,
            seed=int(self.np_random.integers(2**31)),
            special_queries=self.protocol == "original",
        )
        observation = self.engine.render(self._session)
        self._text_view = initial_view(observation)
        return self._transition(observation, "", 0.0)

    def _original_action(self) -> tuple[str, str] | None:
        """The raw action as WebShop's ``step`` accepts it: ``(kind, arg)`` or ``None``."""
        name, arg = parse_action_original(self._raw_action)
        if name == "search" and arg:
            return "search", arg
        if name == "click" and arg is not None and arg in self._clickables and arg != "search":
            return "click", arg
        return None

    def _is_admissible(self, command: str) -> bool:
        if self._session is None:
            return False
        if self.protocol == "original":
            return self._original_action() is not None
        parsed = parse_action(command)
        if parsed is None:
            return False
        kind, arg = parsed
        if kind == "search":
            return self._session.page == "search" and bool(arg)
        return arg in self._canon and arg != "search"

    def _act(self, command: str) -> Transition:
        if self._session is None:
            raise RuntimeError("call reset() first")
        if self.protocol == "original":
            kind, arg = self._original_action() or ("", "")
        else:
            kind, arg = parse_action(command) or ("", "")
            arg = self._canon.get(arg, arg) if kind == "click" else arg
        reward = 0.0
        if kind == "search":
            self.engine.search(self._session, arg)
        else:
            score = self.engine.click(self._session, arg)
            reward = float(score) if score is not None else 0.0
        observation = self.engine.render(self._session)
        self._text_view = update_view(self._text_view, command, observation, valid=True)
        return self._transition(observation, command, reward)

    def _invalid(self, command: str) -> Transition:
        """WebShop's no-op: the same page, reward 0 (the base class flags ``invalid_action``)."""
        if self._last is None:
            raise RuntimeError("call reset() first")
        self._text_view = update_view(self._text_view, command, self._last.observation, valid=False)
        state = {**self._last.state, "last_action": command, "text_view": dict(self._text_view)}
        return Transition(
            observation=self._last.observation,
            admissible=list(self._last.admissible),
            state=state,
            reward=0.0,
            terminated=False,
            won=self._last.won,
            extras={**self._last.extras, "reward_info": {}},
        )

    def task_text(self) -> str:
        return self._session.goal["instruction_text"] if self._session else ""

    # -- optional hooks read by mvpo_train.tiny_model.env_corpus and the encoder warm start ---
    def expert_actions(self, task_index: int) -> list[str] | None:
        """The scripted expert's actions on task ``task_index`` when it wins, else ``None``.

        :func:`mvpo_envs.webshop.expert.expert_episode` (search the instruction, page to the
        goal's asin, else search its name; open it; pick the goal's options; buy) is played on
        a private copy of this env (same data, split, reward, protocol and ``search_query``;
        cached), so this env's episode, RNG and abstraction are left as they were. Replayed
        from ``reset(options={"task_index": task_index})`` the actions win (docs/webshop.md,
        "Expert plans").
        """
        if isinstance(task_index, bool) or not 0 <= int(task_index) < len(self.goals):
            raise IndexError(f"task_index {task_index!r} not in [0, {len(self.goals)})")
        if self._expert_env is None:
            self._expert_env = WebShopEnv(**self._settings, nouns=self.nouns)
            self._expert_env.reset(seed=0)  # seeds its own RNG once: no OS entropy drawn
        score, actions = expert_episode(self._expert_env, int(task_index))
        return actions if score == 1.0 else None

    # -- helpers -------------------------------------------------------------------------------
    def _transition(self, observation: str, command: str, reward: float) -> Transition:
        s = self._session
        if s is None:
            raise RuntimeError("call reset() first")
        self._clickables = self.engine.clickables(s) if s.page != "done" else {}
        self._canon = {canonical_command(name): name for name in self._clickables}
        admissible = [self._search_action(s)] if s.page == "search" else []
        admissible += [f"click[{name}]" for name in self._canon if name != "search"]
        state = self.engine.state(s)
        state["last_action"] = command
        state["text_view"] = dict(self._text_view)
        done = s.page == "done"
        score = s.reward.score if s.reward else 0.0
        reward_info = s.reward.as_dict() if (done and s.reward and command) else {}
        if reward_info:
            reward_info["nouns"] = extractor_name(self.nouns)
        return Transition(
            observation=observation,
            admissible=admissible,
            state=state,
            reward=reward,
            terminated=done,
            won=done and score == 1.0,
            extras={
                "task_score": float(score),
                "reward_info": reward_info,
                "goal_asin": s.goal["asin"],
            },
        )

    def _search_action(self, s: Session) -> str:
        """The search page's admissible search: the template, or the instruction's search."""
        if self.search_query == "template":
            return SEARCH_TEMPLATE
        query = " ".join(str(s.goal["instruction_text"]).split())
        if not query:  # search[] is not a search: say so rather than offer a no-op
            raise ValueError(
                f"search_query='instruction': goal {s.goal['asin']} has an empty instruction; "
                "use search_query='template'"
            )
        return f"search[{query}]"

    def get_available_actions(self) -> dict[str, Any]:
        """WebShop's ``get_available_actions()``: ``has_search_bar`` and ``clickables``."""
        s = self._session
        if s is None:
            raise RuntimeError("call reset() first")
        return {"has_search_bar": s.page == "search", "clickables": list(self._clickables)}


def make_webshop(**kwargs: Any) -> WebShopEnv:
    return WebShopEnv(**kwargs)
