"""Scripted players for ``mvpo/WebShop-v0``: an expert that knows the goal, and a random one.

Used by tests, the generator's ``--check`` and the benchmark. Both act only through
``env.step`` and read ``info`` (the expert reads the goal in ``info["state"]["goal"]``).

The env's ``expert_actions(task_index)`` hook returns :func:`expert_episode`'s actions where
it wins (docs/webshop.md, "Expert plans").

Expert: search the instruction text; page through the results (``next >``) until the goal's
asin is listed, else go back and search the goal product's name; open it; click, for each goal
option, the item's option value that matches it best (exact, else highest token-set ratio);
``buy now``.
"""

from __future__ import annotations

import random
from typing import Any

from mvpo_envs.webshop.reward import token_set_ratio

MAX_RESULT_PAGES = 5


def _best_option(goal_option: str, item_options: dict[str, list[str]]) -> str | None:
    values = [v for vs in item_options.values() for v in vs]
    if goal_option in values:
        return goal_option
    scored = sorted(((token_set_ratio(v, goal_option), v) for v in values), reverse=True)
    return scored[0][1] if scored and scored[0][0] > 0 else None


def expert_episode(env: Any, task_index: int, max_steps: int = 15) -> tuple[float, list[str]]:
    """Play task ``task_index`` as the expert; returns (task score, actions taken)."""
    _, info = env.reset(options={"task_index": task_index})
    goal = info["state"]["goal"]
    actions: list[str] = []

    def act(action: str) -> dict[str, Any]:
        nonlocal info
        actions.append(action)
        _, _, terminated, truncated, info = env.step(action)
        return info

    # whitespace collapsed: a newline would not parse, and the instruction's search is then
    # the one ``search_query="instruction"`` lists (mvpo_envs.webshop.env)
    queries = [" ".join(str(q).split()) for q in (info["task"], goal["name"])]
    for query in queries:
        if info["state"]["page"] != "search":
            act("click[back to search]")
        act(f"search[{query}]")
        while goal["asin"] not in info["state"]["visible_asins"]:
            page = info["state"]["results_page"] or 1
            if page >= MAX_RESULT_PAGES or not info["state"]["visible_asins"]:
                break
            act("click[next >]")
        if goal["asin"] in info["state"]["visible_asins"]:
            break
    else:
        return 0.0, actions
    act(f"click[{goal['asin'].lower()}]")
    for option in goal["options"]:
        value = _best_option(str(option).lower(), info["state"]["item_options"])
        if value is not None and f"click[{value}]" in info["admissible_actions"]:
            act(f"click[{value}]")
    act("click[buy now]")
    if len(actions) > max_steps:
        return 0.0, actions
    return float(info.get("task_score", 0.0)), actions


def run_expert(env: Any, task_index: int) -> float:
    return expert_episode(env, task_index)[0]


def random_episode(env: Any, seed: int, max_steps: int = 15) -> float:
    """A uniformly random player: searches the instruction, then clicks random clickables."""
    rng = random.Random(seed)
    _, info = env.reset(seed=seed)
    for _ in range(max_steps):
        actions = info["admissible_actions"]
        if not actions:
            break
        action = rng.choice(actions)
        if action.startswith("search["):
            action = f"search[{info['task']}]"
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    return float(info.get("task_score", 0.0))
