"""What an agent can know from ALFWorld's feedback text alone (the paper's string rules).

The environment updates a :class:`TextView` with every feedback string and exposes it as
``state["text_view"]``, which the ``alfworld-text`` abstraction reads. It follows ALFWorld's
grammar (``alfred.twl2``): ``You arrive at X.``, ``On the X, you see a, b, and c.``, ``The X is
open. In it, you see ...``, ``You pick up the O from the R.``, ``You move the O to the R.``,
``You heat|cool|clean the O using the R.``, ``You turn on the O.``, ``You sliced the O with
the K.``, ``You are carrying: ...``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_ARRIVE = re.compile(r"You arrive at (?P<r>[^.]+)\.")
_SEE = re.compile(r"you see (?P<items>[^.]*)\.")
_PICK = re.compile(r"You pick up the (?P<o>.+?) from the (?P<r>[^.]+)\.")
_MOVE = re.compile(r"You move the (?P<o>.+?) to the (?P<r>[^.]+)\.")
_OPERATE = re.compile(r"You (?P<op>heat|cool|clean) the (?P<o>.+?) using the (?P<r>[^.]+)\.")
_TURN_ON = re.compile(r"You turn on the (?P<o>[^.]+)\.")
_TURN_OFF = re.compile(r"You turn off the (?P<o>[^.]+)\.")
_SLICE = re.compile(r"You sliced the (?P<o>.+?) with the (?P<k>[^.]+)\.")
_CARRY = re.compile(r"You are carrying: (?P<items>[^.]*)\.")
_OP_FLAG = {"heat": "hot", "cool": "cool", "clean": "clean"}


def parse_item_list(text: str) -> list[str]:
    """``"a apple 1, a knife 2, and a mug 1" -> ["apple 1", "knife 2", "mug 1"]``."""
    if text.strip() in ("", "nothing"):
        return []
    parts = re.split(r",\s*(?:and\s+)?|\s+and\s+", text)
    items = []
    for part in parts:
        part = part.strip()
        part = re.sub(r"^(a|an|the)\s+", "", part)
        if part:
            items.append(part)
    return items


@dataclass
class TextView:
    """Incremental parse of feedback strings; :meth:`as_dict` is ``state["text_view"]``."""

    location: str = "middle of room"
    visible: list[str] = field(default_factory=list)
    holding: list[str] = field(default_factory=list)
    object_states: dict[str, list[str]] = field(default_factory=dict)
    lamp_on: bool = False
    placed: list[tuple[str, str]] = field(default_factory=list)

    def update(self, feedback: str) -> None:
        if m := _ARRIVE.search(feedback):
            self.location = m["r"].strip()
            self.visible = []
        if m := _SEE.search(feedback):
            if not feedback.startswith("-= Welcome"):  # the intro lists receptacles, not objects
                self.visible = parse_item_list(m["items"])
        if m := _PICK.search(feedback):
            obj = m["o"].strip()
            self.holding = [obj]
            self.visible = [v for v in self.visible if v != obj]
            self.placed = [(o, r) for o, r in self.placed if o != obj]
        if m := _MOVE.search(feedback):
            obj, recep = m["o"].strip(), m["r"].strip()
            self.holding = [h for h in self.holding if h != obj]
            self.visible = sorted({*self.visible, obj})
            self.placed.append((obj, recep))
        if m := _OPERATE.search(feedback):
            self._flag(m["o"].strip(), _OP_FLAG[m["op"]])
        if m := _SLICE.search(feedback):
            self._flag(m["o"].strip(), "sliced")
        if m := _TURN_ON.search(feedback):
            self._flag(m["o"].strip(), "on")
            self.lamp_on = True
        if m := _TURN_OFF.search(feedback):
            self.lamp_on = False
        if m := _CARRY.search(feedback):
            self.holding = parse_item_list(m["items"])
        elif "You are not carrying anything." in feedback:
            self.holding = []

    def _flag(self, obj: str, flag: str) -> None:
        flags = set(self.object_states.get(obj, []))
        flags.add(flag)
        self.object_states[obj] = sorted(flags)

    def as_dict(self) -> dict[str, Any]:
        return {
            "location": self.location,
            "visible": sorted(self.visible),
            "holding": sorted(self.holding),
            "object_states": {k: list(v) for k, v in sorted(self.object_states.items())},
            "lamp_on": self.lamp_on,
            "placed": [list(p) for p in self.placed],
        }
