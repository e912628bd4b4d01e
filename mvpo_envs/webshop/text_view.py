"""What the observation strings alone say about a WebShop episode (for ``webshop-text``).

docs/environments.md, "mvpo/WebShop-v0", Paper abstraction (string-rule variant). The
environment keeps this view in ``info["state"]["text_view"]``, updated from each action string
and observation string only - never from the engine - so the string-rule abstraction sees no
more than an agent reading the screen:

* ``page``: ``search`` (starts ``WebShop [SEP]``), ``done`` (``Thank you for shopping``),
  ``results`` (has ``Page N (Total results: M)``), ``item`` (ends ``[SEP] Buy Now``), else the
  sub-page named by the last ``click[description|features|reviews]``;
* ``clicked_options``: values clicked on the current item page that kept it an item page
  (not a fixed button, not an asin), i.e. the option values chosen;
* ``searched``: whether a search has been made this episode.
"""

from __future__ import annotations

import re
from typing import Any

_RESULTS = re.compile(r"\[SEP\] Page \d+ \(Total results: \d+\)")
_ASIN = re.compile(r"^b[0-9a-z]{9}$")
_FIXED = {
    "back to search",
    "< prev",
    "next >",
    "description",
    "features",
    "reviews",
    "buy now",
    "search",
}
_CLICK = re.compile(r"^click\[(.*)\]$", re.DOTALL)


def page_from_text(observation: str, action: str | None, previous: str = "search") -> str:
    """The page type an observation string shows (see the module docstring)."""
    if observation.startswith("WebShop [SEP]"):
        return "search"
    if observation.startswith("Thank you for shopping with us!"):
        return "done"
    if _RESULTS.search(observation):
        return "results"
    if observation.endswith("[SEP] Buy Now"):
        return "item"
    m = _CLICK.match(action or "")
    if m and m.group(1).strip() in ("description", "features", "reviews"):
        return m.group(1).strip()
    return previous


def initial_view(observation: str) -> dict[str, Any]:
    return {"page": page_from_text(observation, None), "clicked_options": [], "searched": False}


def update_view(view: dict[str, Any], action: str, observation: str, valid: bool) -> dict[str, Any]:
    """The view after ``action`` produced ``observation`` (invalid actions change nothing)."""
    if not valid:
        return dict(view, clicked_options=list(view["clicked_options"]))
    page = page_from_text(observation, action, view["page"])
    clicked = list(view["clicked_options"])
    m = _CLICK.match(action)
    arg = m.group(1).strip() if m else ""
    if (
        page == "item"
        and view["page"] == "item"
        and m
        and arg not in _FIXED
        and not _ASIN.match(arg)
    ):
        if arg not in clicked:
            clicked.append(arg)
    elif page in ("results", "search") or (page == "item" and view["page"] == "results"):
        clicked = []
    return {
        "page": page,
        "clicked_options": clicked,
        "searched": view["searched"] or action.startswith("search["),
    }
