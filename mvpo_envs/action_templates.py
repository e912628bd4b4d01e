"""Admissible action *templates*: an action with a placeholder that someone must fill.

docs/environments.md ("Common contract"). Two forms are in use: ``name[<slot>]`` (WebShop's
``search[<query>]``) and ``<tag> slot </tag>`` (Search-R1's ``<search> query </search>``). The
patterns are env-neutral: ``mvpo-play`` asks the player for the slot's text, random play fills a
query slot with the task text (:func:`fill_template`), and the trainer refuses a template in
score mode (``mvpo_train.rollout.check_score_candidates``).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["TAG_TEMPLATE", "TASK_SLOTS", "TEMPLATE", "fill_template"]

#: an admissible action whose brackets hold a placeholder to fill in: ``search[<query>]``
TEMPLATE = re.compile(r"^(?P<head>[^\[]+)\[<(?P<slot>[a-z_ ]+)>\]$")
#: tag templates, ``<search> query </search>`` / ``<answer> text </answer>``
TAG_TEMPLATE = re.compile(r"^<(?P<tag>[a-z_]+)> (?P<slot>[a-z_]+) </(?P=tag)>$")
#: the template slots random play fills with the task text (:func:`fill_template`)
TASK_SLOTS = frozenset({"query"})


def fill_template(action: str, info: dict[str, Any]) -> str:
    """What random play sends for the admissible ``action`` (docs/abstractions.md, "Fit and use"):
    a template whose slot is a query is filled with the task text ``info["task"]``, whitespace
    collapsed; anything else goes as it is.

    WebShop's ``search[<query>]`` becomes ``search[<the instruction>]``, the query WebShop's own
    random player sends (``mvpo_envs.webshop.expert.random_episode``) and the one
    ``search_query="instruction"`` lists (docs/webshop.md, "Score mode"); SearchQA's ``<search>
    query </search>`` becomes ``<search> <the question> </search>``. SearchQA's ``<answer> text
    </answer>`` has no natural filler and stays (docs/searchqa.md, "Training"); so does a
    template when the task text is empty."""
    task = " ".join(str(info.get("task", "")).split())
    if not task:
        return action
    m = TEMPLATE.match(action)
    if m is not None and m["slot"] in TASK_SLOTS:
        return f"{m['head']}[{task}]"
    tag = TAG_TEMPLATE.match(action)
    if tag is not None and tag["slot"] in TASK_SLOTS:
        return f"<{tag['tag']}> {task} </{tag['tag']}>"
    return action
