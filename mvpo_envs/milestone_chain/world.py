"""The rules and texts of ``mvpo/MilestoneChain-v0``: admissible actions and transitions.

docs/control_task.md, "Rules". The state of an episode is ``(place, milestones done)``; this
module is its whole transition function, which the env plays and the tests search:

* ``go to X`` moves to a neighbouring place ``X``;
* the fixture command of a place (``ring bell``) makes the next milestone when this place is
  the next milestone's place: the agent stays where it is (the *dwell* action); anywhere else,
  or out of order, or a second time, it does nothing;
* ``look`` describes the place again; the difficulty's do-nothing actions (``wait``, ...) do
  nothing.

The goal is every milestone, in order. Per layout the admissible list of each place is built
once (:class:`Rules`), so a step costs a dict lookup and a string format.
"""

from __future__ import annotations

from dataclasses import dataclass

from mvpo_envs.milestone_chain.layout import Layout

#: the intro line of every reset observation
WELCOME = "-= Welcome to the keep =-"
TASK_PREFIX = "Your task is to: "


@dataclass(frozen=True)
class Outcome:
    """The result of one admissible command in ``(place, done)``."""

    place: int
    done: int
    feedback: str


def task_text(layout: Layout) -> str:
    """``ring the bell, then light the brazier, then ... .`` (the milestones, in order)."""
    parts = []
    for command in layout.milestone_fixtures:
        verb, _, noun = command.partition(" ")
        parts.append(f"{verb} the {noun}")
    return ", then ".join(parts) + "."


def article(noun: str) -> str:
    """``a`` or ``an`` before a fixture noun."""
    return "an" if noun[0] in "aeiou" or noun.startswith("hour") else "a"


class Rules:
    """The admissible actions and the transition function of one layout."""

    def __init__(self, layout: Layout):
        self.layout = layout
        places = layout.places
        self._moves: list[dict[str, int]] = [
            {f"go to {places[q]}": q for q in layout.exits[p]} for p in range(len(places))
        ]
        self._noops = dict(layout.noops)
        self._milestone_of = {p: i for i, p in enumerate(layout.milestone_places)}
        self._admissible: list[list[str]] = []
        for p in range(len(places)):
            actions = [*self._moves[p], "look", *self._noops]
            if layout.fixtures[p]:
                actions.append(layout.fixtures[p])
            self._admissible.append(sorted(actions))

    def admissible(self, place: int, done: int) -> list[str]:
        """The commands valid in ``(place, done)``: ``[]`` once every milestone is made."""
        if done >= self.layout.num_milestones:
            return []
        return list(self._admissible[place])

    def is_admissible(self, place: int, done: int, command: str) -> bool:
        if done >= self.layout.num_milestones:
            return False
        return (
            command in self._moves[place]
            or command == "look"
            or command in self._noops
            or (command != "" and command == self.layout.fixtures[place])
        )

    def apply(self, place: int, done: int, command: str) -> Outcome:
        """The outcome of an admissible ``command``; raises ``KeyError`` for any other."""
        if not self.is_admissible(place, done, command):
            raise KeyError(f"{command!r} is not admissible in {self.layout.places[place]!r}")
        moves = self._moves[place]
        if command in moves:
            q = moves[command]
            return Outcome(q, done, self.describe(q, done, arrived=True))
        if command == "look":
            return Outcome(place, done, self.describe(place, done, arrived=False))
        if command in self._noops:
            return Outcome(place, done, self._noops[command])
        verb, _, noun = command.partition(" ")
        if self._milestone_of.get(place) != done:
            return Outcome(place, done, f"You {verb} the {noun}. Nothing happens.")
        done += 1
        k = self.layout.num_milestones
        if done == k:
            text = f"You {verb} the {noun}. That was the last one: the task is complete."
        else:
            text = f"You {verb} the {noun}. Something clicks into place ({done} of {k} done)."
        return Outcome(place, done, text)

    def describe(self, place: int, done: int, arrived: bool) -> str:
        """``You arrive at the forge. You see a bell. Exits: crypt, garden.``"""
        layout = self.layout
        name = layout.places[place]
        head = f"You arrive at the {name}." if arrived else f"You are in the {name}."
        fixture = layout.fixtures[place]
        if fixture:
            noun = fixture.partition(" ")[2]
            milestone = self._milestone_of.get(place)
            mark = " (done)" if milestone is not None and milestone < done else ""
            seen = f"You see {article(noun)} {noun}{mark}."
        else:
            seen = "You see nothing special."
        exits = ", ".join(layout.places[q] for q in layout.exits[place])
        return f"{head} {seen} Exits: {exits}."

    def intro(self) -> str:
        """The reset observation: the start place and the task."""
        return (
            f"{WELCOME}\n{self.describe(0, 0, arrived=False)}\n\n"
            f"{TASK_PREFIX}{task_text(self.layout)}"
        )
