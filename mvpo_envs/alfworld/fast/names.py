"""Display names of ALFWorld entities (docs/alfworld_engine.md, "How the fast engine works").

The rules of ALFWorld's ``Demangler`` (``AlfredDemangler(shuffle=False)``), as ALFWorld
applies them to every entity of a game: ``apple_bar__plus_01_dot_59_...`` becomes ``apple N``,
a receptacle id containing ``basin`` becomes ``sinkbasin N`` / ``bathtubbasin N``. Numbers
count the ids of one name; ids are visited in sorted order and each takes the *largest*
number left (ALFWorld pops the end of ``[1..count]``). An id without ``_bar_`` keeps its text
and gets the name ``"<text> "`` (ALFWorld formats an empty number).
"""

from __future__ import annotations

from collections import Counter

_REPLACEMENTS = (
    ("_bar_", "|"),
    ("_minus_", "-"),
    ("_plus_", "+"),
    ("_dot_", "."),
    ("_comma_", ","),
)


def demangle_all(ids: list[str] | set[str]) -> dict[str, str]:
    """Raw id -> display name for every id of a game (ALFWorld's ``Demangler``)."""
    ordered = sorted(ids)
    counts: Counter[str] = Counter()
    for ident in ordered:
        parts = ident.split("_bar_", 1)
        if len(parts) > 1:
            name = parts[0] + ("basin" if "basin" in ident else "")
            counts[name] += 1
    numbers = {name: list(range(1, n + 1)) for name, n in counts.items()}
    out: dict[str, str] = {}
    for ident in ordered:
        text = ident
        for old, new in _REPLACEMENTS:
            text = text.replace(old, new)
        parts = text.split("|", 1)
        if len(parts) == 1:
            out[ident] = f"{text} "
        else:
            name = parts[0] + ("basin" if "basin" in ident else "")
            out[ident] = f"{name} {numbers[name].pop()}"
    return out
