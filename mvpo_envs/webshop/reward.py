"""WebShop's reward, reimplemented (docs/environments.md, "mvpo/WebShop-v0", Reward).

Behaviour of ``web_agent_site/engine/goal.py`` (``get_reward`` and helpers, main branch)::

    score = (attributes matched + options matched + [price <= price_upper])
            / (len(goal attributes) + len(goal options) + 1)  *  r_type

* attribute matched: fuzzy token-set ratio > 85 against one of the product's ``Attributes``,
  else the attribute is a substring of the lower-cased title, bullet points or description;
* option matched: each goal option (colour-normalised) has a purchased option value
  (colour-normalised) with token-set ratio > 85. The goal options the original matches are
  ``goal["goal_options"].items()`` for synthetic goals (a name -> value dict): ``(name, value)``
  tuples, so ``normalize_color`` tests tuple membership (only a value that *is* a colour name is
  normalised) and the fuzzy ratio compares ``str((name, value))`` (the option name joins the
  tokens). Human goals store a list of values and are matched as strings. ``rule="original"``
  (default) reproduces this; ``rule="fixed"`` matches the dict's values as strings;
* ``r_type`` from the product-name nouns: ``title_score`` = share of the goal name's nouns
  found in the purchased name's nouns (0.2 when the goal name has none); 1.0, or 0.5 when
  neither the query, two product-category levels nor ``title_score > 0.2`` match; 0.1 when
  ``title_score < 0.1``; 0.0 when ``title_score == 0``.

The fuzzy ratio is ``thefuzz.fuzz.token_set_ratio`` as WebShop calls it, rebuilt on
``rapidfuzz``: characters 128-255 dropped (``force_ascii``), rapidfuzz's default processing,
score rounded to an integer before the ``> 85`` test.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rapidfuzz import fuzz
from rapidfuzz.utils import default_process

from mvpo_envs.webshop.nouns import NounExtractor, default_noun_extractor

FUZZY_THRESHOLD = 85
COLOR_SET = (
    "alabaster apricot aqua ash asphalt azure banana beige black blue blush bordeaux bronze "
    "brown burgundy camel camo caramel champagne charcoal cheetah chestnut chocolate christmas "
    "coffee cognac copper coral cranberry cream crystal dark denim eggplant elephant espresso "
    "fuchsia gold granite grape graphite grass gray green grey heather indigo ivory ivy khaki "
    "lavender lemon leopard light lilac lime magenta maroon mauve merlot midnight mint mocha "
    "multicolor mushroom mustard natural navy nude olive orange peach pewter pink plum purple "
    "rainbow red rose royal rust sand sapphire seashell silver skull slate steel stone stonewash "
    "sunflower tan taupe teal tiger turquoise violet walnut wheat white wine yellow"
).split()
_ASCII_ONLY = {i: None for i in range(128, 256)}


def token_set_ratio(a: str, b: str) -> int:
    """``thefuzz.fuzz.token_set_ratio(a, b)`` (full processing, ``force_ascii``), via rapidfuzz."""
    pa = default_process(str(a).translate(_ASCII_ONLY))
    pb = default_process(str(b).translate(_ASCII_ONLY))
    return int(round(fuzz.token_set_ratio(pa, pb)))


def normalize_color(value: Any) -> Any:
    """The first colour of WebShop's colour list contained in ``value``, else ``value``.

    "Contained" is Python's ``in``: a substring test for a string, element equality for the
    ``(name, value)`` tuples the original rule passes (see :func:`goal_option_keys`).
    """
    for color in COLOR_SET:
        if color in value:
            return color
    return value


#: ``get_reward(rule=...)``: WebShop's rule, quirks included, or the corrected option matcher
REWARD_RULES = ("original", "fixed")


def goal_option_values(goal: Mapping[str, Any]) -> list[str]:
    """Goal options as a list of values (synthetic goals store a name -> value dict)."""
    options = goal.get("goal_options") or []
    return list(options.values()) if isinstance(options, Mapping) else list(options)


def goal_option_keys(goal: Mapping[str, Any], rule: str = "original") -> list[Any]:
    """What the option matcher compares purchased values with (module docstring, ``rule``).

    ``"original"``: ``(name, value)`` tuples for a dict (WebShop passes ``.items()``), the
    values for a list; ``"fixed"``: always the values.
    """
    if rule not in REWARD_RULES:
        raise ValueError(f"reward rule must be one of {REWARD_RULES}, got {rule!r}")
    options = goal.get("goal_options") or []
    if isinstance(options, Mapping) and rule == "original":
        return list(options.items())
    return goal_option_values(goal)


def noun_type_reward(
    purchased: Mapping[str, Any], goal: Mapping[str, Any], nouns: NounExtractor
) -> dict[str, Any]:
    """WebShop's ``get_type_reward``: ``r_type`` and the match flags behind it."""
    query_match = purchased.get("query") == goal.get("query")
    p_cat = {x.strip() for x in str(purchased.get("product_category", "")).split("›")}
    g_cat = {x.strip() for x in str(goal.get("product_category", "")).split("›")}
    category_match = len(p_cat & g_cat) >= 2
    p_nouns = set(nouns(str(purchased.get("name", ""))))
    g_nouns = nouns(str(goal.get("name", "")))
    title_score = 0.2 if not g_nouns else len(p_nouns & set(g_nouns)) / len(g_nouns)
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return {
        "r_type": r_type,
        "query_match": query_match,
        "category_match": category_match,
        "title_score": title_score,
    }


def attribute_matches(purchased: Mapping[str, Any], goal_attributes: Sequence[str]) -> int:
    """How many goal attributes the product has (fuzzy on Attributes, else substring of text)."""
    p_attrs = list(purchased.get("Attributes") or [])
    title = str(purchased.get("Title", "")).lower()
    bullets = " ".join(purchased.get("BulletPoints") or []).lower()
    desc = str(purchased.get("Description", "")).lower()
    count = 0
    for g_attr in goal_attributes:
        if any(token_set_ratio(p_attr, g_attr) > FUZZY_THRESHOLD for p_attr in p_attrs):
            count += 1
        elif g_attr in title or g_attr in bullets or g_attr in desc:
            count += 1
    return count


def option_matches(purchased_options: Iterable[str], goal_options: Sequence[Any]) -> int:
    """How many goal options some purchased option value matches (colour-normalised, fuzzy).

    A goal option may be a ``(name, value)`` tuple (the original rule): it is compared as
    ``str(tuple)``, as thefuzz does with a non-string.
    """
    bought = [normalize_color(o) for o in purchased_options]
    count = 0
    for g_option in (normalize_color(o) for o in goal_options):
        if any(token_set_ratio(p, g_option) > FUZZY_THRESHOLD for p in bought):
            count += 1
    return count


@dataclass(frozen=True)
class RewardBreakdown:
    """The score and its parts (WebShop's ``verbose`` info plus the raw counts)."""

    score: float
    r_type: float
    r_att: float
    r_option: float | None
    r_price: bool | None
    num_attr_matches: int
    num_option_matches: int
    num_attributes: int
    num_options: int
    query_match: bool
    category_match: bool
    title_score: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def get_reward(
    purchased: Mapping[str, Any],
    goal: Mapping[str, Any],
    price: float,
    options: Mapping[str, str],
    nouns: NounExtractor | None = None,
    rule: str = "original",
) -> RewardBreakdown:
    """Score of buying ``purchased`` at ``price`` with selected ``options`` for ``goal``.

    ``rule``: ``"original"`` (WebShop's, default) or ``"fixed"`` (goal option values matched
    as strings); see the module docstring.
    """
    g_options = goal_option_keys(goal, rule)
    nouns = nouns or default_noun_extractor()
    type_info = noun_type_reward(purchased, goal, nouns)
    price_upper = float(goal.get("price_upper", 0) or 0)
    r_price = (price <= price_upper) if price_upper > 0 else None
    attrs = list(goal.get("attributes") or [])
    n_attr = attribute_matches(purchased, attrs)
    n_opt = option_matches(options.values(), g_options)
    denom = len(attrs) + len(g_options) + 1
    score = (n_attr + n_opt + int(bool(r_price))) / denom * type_info["r_type"]
    return RewardBreakdown(
        score=float(score),
        r_type=float(type_info["r_type"]),
        r_att=n_attr / len(attrs) if attrs else 0.0,
        r_option=n_opt / len(g_options) if g_options else None,
        r_price=r_price,
        num_attr_matches=n_attr,
        num_option_matches=n_opt,
        num_attributes=len(attrs),
        num_options=len(g_options),
        query_match=bool(type_info["query_match"]),
        category_match=bool(type_info["category_match"]),
        title_score=float(type_info["title_score"]),
    )


def reward_without_options(
    purchased: Mapping[str, Any],
    goal: Mapping[str, Any],
    price: float,
    nouns: NounExtractor | None = None,
) -> float:
    """``r_type * (attributes matched + price ok) / (attributes + 1)``: how well an item fits
    before any option is chosen (the abstraction's ``matching_opened`` reads it)."""
    nouns = nouns or default_noun_extractor()
    r_type = noun_type_reward(purchased, goal, nouns)["r_type"]
    attrs = list(goal.get("attributes") or [])
    price_upper = float(goal.get("price_upper", 0) or 0)
    price_ok = price_upper > 0 and price <= price_upper
    return (attribute_matches(purchased, attrs) + int(price_ok)) / (len(attrs) + 1) * r_type
