"""WebShop's pages, clicks and text-mode observations, without a web server.

docs/environments.md, "mvpo/WebShop-v0", Protocol. Reimplements what ``WebAgentTextEnv`` with
``observation_mode="text"`` shows: the reference renders Flask/Jinja HTML templates and
joins the visible strings with `` [SEP] `` (BeautifulSoup, whitespace-only strings dropped);
here every page's visible strings are produced directly, in the same order:

* search page: ``WebShop [SEP] Instruction: [SEP] <goal> [SEP] Search``
* results page: ``Instruction: [SEP] <goal> [SEP] Back to Search [SEP] Page 1 (Total results: 50)
  [SEP] Next > [SEP] <ASIN> [SEP] <title> [SEP] <price> ...`` (``< Prev`` before ``Next >``
  from page 2 on; 10 products per page of the top 50; ``Next >`` is always shown)
* item page: ``Instruction: [SEP] <goal> [SEP] Back to Search [SEP] < Prev [SEP] <option name>
  [SEP] <value> ... [SEP] <title> [SEP] Price: <price> [SEP] Rating: <rating> [SEP] Description
  [SEP] Features [SEP] Reviews [SEP] Buy Now``
* sub-pages: ``... [SEP] Back to Search [SEP] < Prev [SEP]`` + the description, each bullet
  point, or each review (``"<title>" [SEP] <score> [SEP] <body>``)
* done page: the visible text of WebShop's ``done_page.html`` (score included).

Clickables (lower-cased, as ``get_available_actions`` lists them): the page's buttons, product
asins, and option values; a click dispatches as ``SimServer.receive`` does (buy now, back to
search, next/prev by page, sub-pages, else item page: a product or an option).
"""

from __future__ import annotations

import json
import random
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from mvpo_envs.webshop.data import Goal, Product
from mvpo_envs.webshop.nouns import NounExtractor, default_noun_extractor
from mvpo_envs.webshop.reward import (
    RewardBreakdown,
    get_reward,
    goal_option_values,
    reward_without_options,
)
from mvpo_envs.webshop.search import SEARCH_RETURN_N, Retriever

SEP = " [SEP] "
PRODUCT_WINDOW = 10
END_BUTTON = "Buy Now"
NEXT_PAGE = "Next >"
PREV_PAGE = "< Prev"
BACK_TO_SEARCH = "Back to Search"
SUB_PAGES = ("Description", "Features", "Reviews")
#: page types exposed in ``info["state"]["page"]``
PAGE_TYPES = ("search", "results", "item", "description", "features", "reviews", "done")


@dataclass(frozen=True)
class Clickable:
    """One clickable element: a button, a product link (asin) or an option radio button."""

    kind: str  # "button" | "product" | "option"
    text: str
    option_name: str | None = None


@dataclass
class Session:
    """One shopping session (WebShop's ``user_sessions[session_id]``)."""

    goal: Goal
    page: str = "search"
    keywords: str | None = None
    results_page: int | None = None
    results: list[str] = field(default_factory=list)
    asin: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    visited: list[str] = field(default_factory=list)
    reward: RewardBreakdown | None = None
    #: ``get_reward``'s ``rule`` (``"original"`` or ``"fixed"``)
    reward_rule: str = "original"
    #: seeds the ``<r>`` special query (WebShop draws from the global ``random``)
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    #: WebShop's ``<r>``/``<a>``/``<c>``/``<q>`` search forms are honoured
    special_queries: bool = True


def _segment(text: Any) -> str | None:
    """How one rendered text node shows in the text observation (``None``: not at all)."""
    text = "" if text is None else str(text)
    if not text:
        return None
    if not text.strip():
        return None if "\n" in text else ""
    return text.strip()


def _join(parts: list[Any]) -> str:
    return SEP.join(s for s in (_segment(p) for p in parts) if s is not None)


class WebShopEngine:
    """Products + search + reward: renders pages and applies clicks to a :class:`Session`."""

    def __init__(
        self,
        products: Mapping[str, Product],
        prices: Mapping[str, float],
        retriever: Retriever,
        nouns: NounExtractor | None = None,
        search_cache_size: int = 4096,
    ):
        self.products = products
        self.prices = prices
        self.retriever = retriever
        self.nouns = nouns or default_noun_extractor()
        self._search = lru_cache(maxsize=search_cache_size)(self._search_uncached)

    # -- search ------------------------------------------------------------------------------
    def _asin_at(self, i: int) -> str:
        """The asin of the ``i``-th product in catalog order."""
        asins = getattr(self.products, "asins", None)  # a compact catalog's column
        if asins is None:
            if getattr(self, "_asin_list", None) is None:
                self._asin_list = list(self.products)
            asins = self._asin_list
        return asins[i]

    def _search_uncached(self, keywords: str) -> tuple[str, ...]:
        hits = self.retriever.search(keywords, k=SEARCH_RETURN_N)
        return tuple(a for a in hits if a in self.products)

    def top_n(self, keywords: str) -> list[str]:
        """WebShop's ``get_top_n_product_from_keywords`` (plain keyword search)."""
        return list(self._search(keywords))

    def special_results(self, keywords: str, rng: random.Random) -> list[str] | None:
        """WebShop's special queries (first space-separated word), else ``None``.

        ``<r>``: 50 products drawn at random (``rng``); ``<a> attr``: products with that
        attribute; ``<c> cat``: products of that category (the first word after ``<c>``; none
        without one, where WebShop raises ``IndexError``); ``<q> query``: products of that
        query. All in catalog order, not capped at 50 (docs/fidelity.md, WebShop).
        """
        words = keywords.split(" ")
        head, rest = words[0], words[1:]
        products = self.products.values()  # a compact catalog decodes them one at a time
        if head == "<r>":
            # sample() draws only positions (randbelow(len)): the same draw as on a list
            n = len(self.products)
            picks = rng.sample(range(n), k=min(SEARCH_RETURN_N, n))
            return [self._asin_at(i) for i in picks]
        if head == "<a>":
            attribute = " ".join(rest).strip()
            return [p["asin"] for p in products if attribute in (p.get("Attributes") or [])]
        if head == "<c>":
            category = rest[0].strip() if rest else None
            return [p["asin"] for p in products if category and p.get("category") == category]
        if head == "<q>":
            query = " ".join(rest).strip()
            return [p["asin"] for p in products if p.get("query") == query]
        return None

    # -- session transitions -------------------------------------------------------------------
    def start(
        self,
        goal: Goal,
        reward_rule: str = "original",
        seed: int = 0,
        special_queries: bool = True,
    ) -> Session:
        return Session(
            goal=goal,
            reward_rule=reward_rule,
            rng=random.Random(seed),
            special_queries=special_queries,
        )

    def search(self, s: Session, keywords: str, page: int = 1) -> None:
        """Run a search and show results page ``page`` (resets the item and options).

        As in WebShop, a page change re-runs the query (``<r>`` draws a new sample). With
        ``s.special_queries`` the ``<r>``/``<a>``/``<c>``/``<q>`` forms are honoured.
        """
        s.keywords = keywords
        found = self.special_results(keywords, s.rng) if s.special_queries else None
        if found is not None:
            s.results = found
        else:
            s.results = self.top_n(keywords)
        s.results_page = page
        s.asin = None
        s.options = {}
        s.page = "results"

    def clickables(self, s: Session) -> OrderedDict[str, Clickable]:
        """``text_to_clickable``: buttons, then product links, then option values (later wins)."""
        out: OrderedDict[str, Clickable] = OrderedDict()
        buttons: list[str] = []
        if s.page == "search":
            buttons = ["Search"]
        elif s.page == "results":
            buttons = (
                [BACK_TO_SEARCH] + ([PREV_PAGE] if (s.results_page or 1) > 1 else []) + [NEXT_PAGE]
            )
        elif s.page == "item":
            buttons = [BACK_TO_SEARCH, PREV_PAGE, *SUB_PAGES, END_BUTTON]
        elif s.page in ("description", "features", "reviews"):
            buttons = [BACK_TO_SEARCH, PREV_PAGE]
        for b in buttons:
            out[b.lower()] = Clickable("button", b)
        if s.page == "results":
            for asin in self.visible_asins(s):
                out[asin.lower()] = Clickable("product", asin)
        if s.page == "item":
            for name, values in self.product(s).get("options", {}).items():
                for v in values:
                    out[str(v)] = Clickable("option", str(v), option_name=name)
        return out

    def click(self, s: Session, name: str) -> float | None:
        """Apply ``click[name]`` (``name`` must be a clickable); returns the score on purchase."""
        name = name.lower()
        clickable = self.clickables(s)[name]
        if name == END_BUTTON.lower():
            return self.buy(s)
        if name == BACK_TO_SEARCH.lower():
            s.page, s.keywords, s.results_page, s.results = "search", None, None, []
            s.asin, s.options, s.visited = None, {}, []
        elif name == NEXT_PAGE.lower() and s.page == "results":
            self.search(s, s.keywords or "", (s.results_page or 1) + 1)
        elif name == PREV_PAGE.lower() and s.page == "results":
            self.search(s, s.keywords or "", (s.results_page or 1) - 1)
        elif name == PREV_PAGE.lower() and s.page in ("description", "features", "reviews"):
            s.page = "item"
        elif name == PREV_PAGE.lower() and s.page == "item":
            self.search(s, s.keywords or "", s.results_page or 1)
        elif name in (p.lower() for p in SUB_PAGES):
            s.page = name
        else:
            if clickable.kind == "product":
                s.asin = clickable.text.upper()
                if s.asin not in s.visited:
                    s.visited.append(s.asin)
            elif clickable.kind == "option" and clickable.option_name is not None:
                s.options[clickable.option_name.lower()] = clickable.text
            s.page = "item"
        return None

    def buy(self, s: Session) -> float:
        if s.asin is None:
            raise RuntimeError("buy now is only clickable on an item page")
        s.reward = get_reward(
            self.product(s), s.goal, self.prices[s.asin], s.options, self.nouns, s.reward_rule
        )
        s.page = "done"
        return s.reward.score

    # -- views -------------------------------------------------------------------------------
    def product(self, s: Session) -> Product:
        if s.asin is None:
            raise RuntimeError("no product is open")
        return self.products[s.asin]

    def visible_asins(self, s: Session) -> list[str]:
        if s.page != "results":
            return []
        page = s.results_page or 1
        return s.results[(page - 1) * PRODUCT_WINDOW : page * PRODUCT_WINDOW]

    def instruction(self, s: Session) -> list[str]:
        return ["Instruction:", s.goal["instruction_text"]]

    def page_parts(self, s: Session) -> list[Any]:
        """The page's visible strings after the instruction (what the agent reads)."""
        if s.page == "search":
            return ["Search"]
        if s.page == "results":
            parts: list[Any] = [
                BACK_TO_SEARCH,
                f"Page {s.results_page} (Total results: {len(s.results)})",
            ]
            parts += ([PREV_PAGE] if (s.results_page or 1) > 1 else []) + [NEXT_PAGE]
            for asin in self.visible_asins(s):
                p = self.products[asin]
                parts += [asin, p.get("Title"), p.get("Price")]
            return parts
        if s.page == "done":
            return self._done_parts(s)
        p = self.product(s)
        parts = [BACK_TO_SEARCH, PREV_PAGE]
        if s.page == "item":
            for name, values in p.get("options", {}).items():
                parts += [name, *values]
            parts += [
                p.get("Title"),
                f"Price: {p.get('Price')}",
                f"Rating: {p.get('Rating', 'N.A.')}",
            ]
            return parts + [*SUB_PAGES, END_BUTTON]
        if s.page == "description":
            return parts + [p.get("Description")]
        if s.page == "features":
            return parts + [f" {b}" for b in p.get("BulletPoints") or []]
        for r in p.get("Reviews") or []:
            parts += [f'"{r.get("title", "")}"', r.get("score", ""), r.get("body", "")]
        return parts

    def render(self, s: Session) -> str:
        """The text-mode observation of the current page."""
        if s.page == "search":
            return _join(["WebShop", *self.instruction(s), "Search"])
        if s.page == "done":
            return _join(self._done_parts(s))
        return _join([*self.instruction(s), *self.page_parts(s)])

    def _done_parts(self, s: Session) -> list[Any]:
        """Visible strings of ``done_page.html`` as the text env renders it (no goal passed)."""
        options = json.dumps(s.options, sort_keys=True)
        for char, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("'", "\\u0027")):
            options = options.replace(char, esc)
        score = s.reward.score if s.reward else 0.0
        return [
            "Thank you for shopping with us!",
            "Your code:",
            "None",
            " (Paste it in your MTurk interface.)",
            "Purchased",
            "asin",
            s.asin,
            "options",
            options,
            "attrs",
            "None",
            "category",
            "None",
            "query",
            "None",
            "product category",
            "None",
            "Target",
            "asin",
            "options",
            "attrs",
            "price upper",
            "instuction text",
            "category",
            "product category",
            "query",
            "Goal",
            "None",
            "Reward",
            "Your score (min 0.0, max 1.0)",
            repr(float(score)),
            "Reward Details",
            "None",
        ]

    def state(self, s: Session) -> dict[str, Any]:
        """Structured facts for ``info["state"]`` (the abstraction reads these)."""
        goal = s.goal
        visible = [
            {
                "asin": a,
                "title": self.products[a].get("Title", ""),
                "price": self.products[a].get("Price", ""),
                "query": self.products[a].get("query", ""),
                "category": self.products[a].get("category", ""),
            }
            for a in self.visible_asins(s)
        ]
        item = self.products[s.asin] if s.asin and s.page != "search" else None
        return {
            "page": s.page,
            # one type per key (docs/environments.md, "Info contract"): "" / -1 / -1.0 = absent
            "query": s.keywords if s.keywords is not None else "",
            "results_page": s.results_page if s.results_page is not None else -1,
            "total_results": len(s.results) if s.page == "results" else -1,
            "visible_asins": [v["asin"] for v in visible],
            "visible_products": visible,
            "item_asin": s.asin if item is not None and s.asin is not None else "",
            "item_title": str(item.get("Title", "")) if item is not None else "",
            "item_options": {k: list(v) for k, v in item.get("options", {}).items()}
            if item
            else {},
            "selected_options": dict(s.options),
            "visited_asins": list(s.visited),
            "page_text": _join(self.page_parts(s)) if s.page != "done" else "",
            "instruction": goal["instruction_text"],
            "goal": {
                "asin": goal["asin"],
                "name": goal.get("name", ""),
                "query": goal.get("query", ""),
                "category": goal.get("category", ""),
                "product_category": goal.get("product_category", ""),
                "attributes": list(goal.get("attributes") or []),
                "options": goal_option_values(goal),
                "price_upper": float(goal.get("price_upper", 0) or 0),
            },
            "purchased": s.page == "done",
            "task_score": float(s.reward.score) if s.reward else -1.0,
            "item_match_score": (
                float(reward_without_options(item, goal, self.prices[s.asin], self.nouns))
                if item is not None and s.asin is not None
                else -1.0
            ),
        }
