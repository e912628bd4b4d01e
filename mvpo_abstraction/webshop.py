"""WebShop's paper abstraction, in two variants (docs/estimators.md §3.1, docs/environments.md).

Signature ``page|focus|d{2*floor(t/2)}``: the page type (``search``, ``results``, ``item``,
``description``, ``features``, ``reviews``, ``done``), up to two goal-relevant terms visible on
the page now (sorted, ``+``-joined; ``none`` when there are none) and a depth bin of two steps,
e.g. ``item|black+sulfate free|d4``. The bin is two steps wide because an expert episode is
4-8 steps (search, maybe a page turn, open, one or two options, buy) inside a 15-step horizon:
three-step bins would merge "just searched" with "already opened an item".

Five milestones of shopping progress:

``search_issued``     a search has been made
``relevant_listed``   the results page lists a product of the goal's kind
``matching_opened``   an item page of a product that fits the goal before options are chosen
``options_selected``  on such an item, every goal option is selected
``purchased``         ``buy now`` was clicked

``webshop`` (default, exact) reads the engine state the environment exposes in
``info["state"]``: goal terms are the goal's attributes and option values; a product of the
goal's kind is the goal's asin or one with the goal's WebShop ``query``; an item "fits" when it
is the goal's asin or its reward without options (``state["item_match_score"]``, WebShop's
formula with the option terms left out) is at least ``match_threshold`` (default 1.0: every
goal attribute, the price and the product type match, so only the options can still go wrong;
lower it to count near misses). ``webshop-text`` reads only strings the agent sees: goal terms
are the option values (``with name: value`` clauses) and the content words of the instruction;
a product of the goal's kind is a listed title sharing ``min(2, #keywords)`` keywords; an item
fits when its title shares ``min_overlap`` (default 1) keywords and its shown price is under
the cap (``price lower than X dollars``); chosen options are the option clicks kept in
``state["text_view"]``. Where they differ (measured in the tests): titles rarely repeat the
instruction's words (``t-shirt`` vs ``Crew Neck Tee``) and attributes hide in bullet points,
so the text variant is looser on random play and misses a few expert items; human goals'
options are not in a parseable clause, so for them ``options_selected`` fires with
``matching_opened``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from rapidfuzz import fuzz
from rapidfuzz.utils import default_process

from mvpo_abstraction.base import Abstraction, State, depth_bin
from mvpo_abstraction.registry import register_abstraction

MILESTONES = (
    "search_issued",
    "relevant_listed",
    "matching_opened",
    "options_selected",
    "purchased",
)
ITEM_PAGES = ("item", "description", "features", "reviews")
MATCH_THRESHOLD = 1.0
DEPTH_WIDTH = 2
SEP = " [SEP] "
_WORD = re.compile(r"[a-z0-9]+")
_PRICE_CAP = re.compile(r",? and price lower than ([\d.]+) dollars", re.IGNORECASE)
_DOLLARS = re.compile(r"\$([\d.]+)")
_GENERIC = frozenset(
    """find me i im i'm need want wanted looking look buy get for a an the with and or of to in
    on at by is it be should which that this some please would like am are my price lower than
    dollars size color pack count""".split()
)


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def words(text: str) -> set[str]:
    """Lower-case alphanumeric words, plural ``s`` stripped."""
    return {_stem(w) for w in _WORD.findall(text.lower())}


def fuzzy_match(a: str, b: str) -> bool:
    """WebShop's option test: token-set ratio above 85 (rapidfuzz, default processing)."""
    return round(fuzz.token_set_ratio(default_process(a), default_process(b))) > 85


def focus(terms: Iterable[str], page_text: str) -> str:
    """Up to two of ``terms`` that occur in ``page_text`` (sorted), ``none`` if none do."""
    low = page_text.lower()
    found = sorted({t for t in terms if t and t.lower() in low})[:2]
    return "+".join(found) if found else "none"


# -- what the instruction text says -------------------------------------------------------------
def parse_instruction(text: str) -> dict[str, Any]:
    """Price cap, ``with name: value`` option values and content keywords of an instruction."""
    cap = _PRICE_CAP.search(text)
    main = _PRICE_CAP.sub("", text).strip()
    options: list[str] = []
    idx = main.rfind(" with ")
    if idx >= 0 and ": " in main[idx:]:
        clause = main[idx + len(" with ") :]
        for part in clause.split(", and "):
            if ": " in part:
                options.append(part.split(": ", 1)[1].strip().lower())
        if options:
            main = main[:idx]
    keywords = sorted(w for w in words(main) if w not in _GENERIC and not w.isdigit())
    return {
        "price_cap": float(cap.group(1)) if cap else None,
        "options": options,
        "keywords": keywords,
    }


def _page_segments(observation: str, instruction: str) -> list[str]:
    """The observation's segments without the instruction block."""
    return [s for s in observation.split(SEP) if s not in ("WebShop", "Instruction:", instruction)]


def _titles_on_results(segments: list[str]) -> list[tuple[str, str]]:
    """(title, price) of each listed product: segments after an asin-looking one."""
    out = []
    for i, seg in enumerate(segments[:-2]):
        if re.fullmatch(r"[A-Z0-9]{10}", seg) and seg.startswith("B"):
            out.append((segments[i + 1], segments[i + 2]))
    return out


def _first_price(text: str) -> float | None:
    m = _DOLLARS.search(text)
    try:
        return float(m.group(1)) if m else None
    except ValueError:
        return None


class _WebShopAbstraction(Abstraction):
    """Shared shape; subclasses say where the facts come from."""

    def __init__(
        self,
        match_threshold: float = MATCH_THRESHOLD,
        depth_width: int = DEPTH_WIDTH,
        min_overlap: int = 1,
    ):
        super().__init__({name: getattr(self, f"_ms_{name}") for name in MILESTONES})
        self.match_threshold = match_threshold
        self.depth_width = depth_width
        self.min_overlap = min_overlap

    def page(self, state: State) -> str:
        raise NotImplementedError

    def terms(self, state: State) -> list[str]:
        raise NotImplementedError

    def page_text(self, state: State) -> str:
        raise NotImplementedError

    def signature(self, state: State, t: int) -> str:
        return f"{self.page(state)}|{focus(self.terms(state), self.page_text(state))}|{depth_bin(t, self.depth_width)}"

    def _ms_purchased(self, prev: State | None, state: State, action: str | None) -> bool:
        return self.page(state) == "done"


@register_abstraction("webshop")
class WebShopStateAbstraction(_WebShopAbstraction):
    """Exact variant: reads the engine facts in ``info["state"]``."""

    name = "webshop"

    def page(self, state: State) -> str:
        return str(state["page"])

    def terms(self, state: State) -> list[str]:
        goal = state["goal"]
        return [*goal["attributes"], *(str(o) for o in goal["options"])]

    def page_text(self, state: State) -> str:
        return str(state.get("page_text", ""))

    def _fits(self, state: State) -> bool:
        if not state.get("item_asin"):  # "" = no item page
            return False
        if state["item_asin"] == state["goal"]["asin"]:
            return True
        return (state.get("item_match_score") or 0.0) >= self.match_threshold

    def _ms_search_issued(self, prev: State | None, state: State, action: str | None) -> bool:
        return bool(state.get("query"))  # "" = no search yet

    def _ms_relevant_listed(self, prev: State | None, state: State, action: str | None) -> bool:
        goal = state["goal"]
        return state["page"] == "results" and any(
            v["asin"] == goal["asin"] or (goal["query"] and v["query"] == goal["query"])
            for v in state.get("visible_products", [])
        )

    def _ms_matching_opened(self, prev: State | None, state: State, action: str | None) -> bool:
        return state["page"] == "item" and self._fits(state)

    def _ms_options_selected(self, prev: State | None, state: State, action: str | None) -> bool:
        if state["page"] not in ITEM_PAGES or not self._fits(state):
            return False
        chosen = list(state.get("selected_options", {}).values())
        return all(any(fuzzy_match(c, str(g)) for c in chosen) for g in state["goal"]["options"])


@register_abstraction("webshop-text")
class WebShopTextAbstraction(_WebShopAbstraction):
    """String-rule variant: reads the observation, the instruction and ``state["text_view"]``."""

    name = "webshop-text"

    def page(self, state: State) -> str:
        return str(state["text_view"]["page"])

    def _goal(self, state: State) -> dict[str, Any]:
        return parse_instruction(str(state.get("instruction", "")))

    def terms(self, state: State) -> list[str]:
        goal = self._goal(state)
        return [*goal["options"], *goal["keywords"]]

    def page_text(self, state: State) -> str:
        return SEP.join(
            _page_segments(str(state.get("observation", "")), str(state.get("instruction", "")))
        )

    def _title_fits(self, title: str, price: str, goal: dict[str, Any], strict: bool) -> bool:
        keywords = goal["keywords"]
        hits = len(words(title) & set(keywords))
        if hits < (self.min_overlap if strict else min(2, len(keywords) or 1)):
            return False
        if strict and goal["price_cap"] is not None:
            shown = _first_price(price)
            return shown is None or shown <= goal["price_cap"]
        return True

    def _item(self, state: State) -> tuple[str, str] | None:
        """(title, price text) of the item page on screen."""
        segments = _page_segments(
            str(state.get("observation", "")), str(state.get("instruction", ""))
        )
        for i, seg in enumerate(segments):
            if seg.startswith("Price: ") and i > 0:
                return segments[i - 1], seg
        return None

    def _ms_search_issued(self, prev: State | None, state: State, action: str | None) -> bool:
        return bool(state["text_view"]["searched"])

    def _ms_relevant_listed(self, prev: State | None, state: State, action: str | None) -> bool:
        if self.page(state) != "results":
            return False
        goal = self._goal(state)
        segments = _page_segments(
            str(state.get("observation", "")), str(state.get("instruction", ""))
        )
        return any(
            self._title_fits(t, p, goal, strict=False) for t, p in _titles_on_results(segments)
        )

    def _ms_matching_opened(self, prev: State | None, state: State, action: str | None) -> bool:
        item = self._item(state) if self.page(state) == "item" else None
        return item is not None and self._title_fits(
            item[0], item[1], self._goal(state), strict=True
        )

    def _ms_options_selected(self, prev: State | None, state: State, action: str | None) -> bool:
        if not self._ms_matching_opened(prev, state, action):
            return False
        clicked = state["text_view"]["clicked_options"]
        return all(any(fuzzy_match(c, g) for c in clicked) for g in self._goal(state)["options"])
