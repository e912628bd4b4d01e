"""The known answer of ``mvpo/MilestoneChain-v0``: shortest plans and optimal actions.

docs/control_task.md, "Contract". In state ``(place, done)`` the shortest remaining plan walks to
the next milestone's place, uses its fixture, and so on to the last one, so its length is a
sum of place-graph distances (``Layout.distances``) plus one fixture use per milestone left.
An action is *optimal* when it shortens that plan (by exactly one step: no action does more);
``info["oracle_progress"]`` is 1 after an optimal action, 0 after any other, -1 at reset.
The tests check these numbers against a breadth-first search over the env's own transition
function (:class:`mvpo_envs.milestone_chain.world.Rules`).
"""

from __future__ import annotations

from mvpo_envs.milestone_chain.layout import Layout

#: ``info["oracle_progress"]`` at reset (no action taken yet)
UNKNOWN = -1


def plan_length(layout: Layout, place: int, done: int) -> int:
    """Steps of the shortest plan from ``(place, done)`` to the goal (0 when won)."""
    k = layout.num_milestones
    if done >= k:
        return 0
    d, route = layout.distances, layout.milestone_places
    total = d[place][route[done]] + (k - done)
    for i in range(done, k - 1):
        total += d[route[i]][route[i + 1]]
    return total


def optimal_actions(layout: Layout, place: int, done: int) -> list[str]:
    """The admissible commands that shorten the shortest plan, sorted; ``[]`` when won."""
    if done >= layout.num_milestones:
        return []
    target = layout.milestone_places[done]
    if place == target:
        return [layout.fixtures[place]]
    d = layout.distances
    return sorted(
        f"go to {layout.places[q]}" for q in layout.exits[place] if d[q][target] < d[place][target]
    )


def expert_plan(layout: Layout) -> list[str]:
    """One shortest plan from the start (ties: the first optimal action in sorted order)."""
    place, done, plan = 0, 0, []
    while done < layout.num_milestones:
        action = optimal_actions(layout, place, done)[0]
        plan.append(action)
        if action.startswith("go to "):
            place = layout.places.index(action[len("go to ") :])
        else:
            done += 1
    return plan
