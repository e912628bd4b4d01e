"""Distractor passages: a SearchQA corpus of any size around the bundled world (docs/searchqa.md,
"Large corpora").

The bundled world (:mod:`mvpo_envs.searchqa.world`) has a few hundred entities; a retrieval
benchmark at wiki scale needs a million passages or more. :func:`distractor_passages` streams as
many extra passages as asked, one at a time (nothing is kept in memory), deterministic from the
seed: invented people, towns, rivers, companies and books written with the world's own sentence
templates (:data:`~mvpo_envs.searchqa.world.TEMPLATES`), naming each other, so they look like the
supporting passages and compete with them for every query word.

What keeps the bundled questions honest: no distractor names a world entity. Distractor names
come from their own syllables, and a name whose normalised form contains a world name's (or the
reverse) is never used (checked once per distinct name). Distractors may share the generic
vocabulary (regions, lakes, occupations, years), as real passages do. Names repeat across
distractors (two invented towns may be called alike), as in a real encyclopedia.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Iterator

from mvpo_envs.searchqa.data import Doc
from mvpo_envs.searchqa.metrics import normalize_answer
from mvpo_envs.searchqa.world import (
    GENRES,
    INDUSTRIES,
    LAKES,
    OCCUPATIONS,
    PRODUCTS,
    REGIONS,
    SCHOOLS,
    TEMPLATES,
    _article,
    _names,
)

#: bump when the passages a seed gives change
DISTRACTOR_VERSION = 1

_P_FIRST_A = _names(
    "Ab Ber Cas Dov Em Fal Gil Hen Ith Jen Kir Lem Mab Nor Ot Pim Rud Sab Tov Urb Val Wil Xan Ygg"
)
_P_FIRST_B = _names("bel dor fa gin hild ko lun mir nette ra sio tor")
_P_LAST_A = _names(
    "Arn Bolt Crey Drum Egg Fitch Grim Holl Ibb Jenk Kemb Lund Mott Nib Ock Prow Rook Stow "
    "Thwa Upp Vick Wynd Yeo Zeb"
)
_P_LAST_B = _names("ham croft worth bourne field hurst more shaw stone way win lock")
_T_A = _names("Ald Brom Chel Dern Edg Fox Grant Heb Ick Kib Lang Med Neth Oak Pad Quen Ridd Sand")
_T_B = _names("bridge wick cot ley minster well brook fell moor side gate")
_R_A = _names("Alb Bir Cor Dun Eir Fly Gwy Hum Ist Jor Kal Lyn")
_R_B = _names("ava ent ion oru asca ute ilde arro")
_C_A = _names("Ampl Brix Cald Dorn Elix Form Glen Hex Ion Jet Kin Lum")
_C_B = _names("ar is ora ent ex ica ium on")
_C_KIND = _names("Holdings|Company|Group|Partners|Manufacturing|Associates")
_B_ADJ = _names("Red Iron Hidden Last Golden Little Painted Second Velvet Wandering")
_B_NOUN = _names("River Road Letter Window Mirror Season Bridge Island Promise Voyage")

KINDS = ("person", "town", "river", "company", "book")
#: share of each kind among distractors (roughly an encyclopedia's: people first)
KIND_WEIGHTS = (0.4, 0.2, 0.1, 0.15, 0.15)


class _Namer:
    """Distractor names of each kind, never clashing with a reserved (world) name."""

    def __init__(self, rng: random.Random, reserved: Iterable[str]):
        self.rng = rng
        norms = sorted({normalize_answer(n) for n in reserved if normalize_answer(n)}, key=len)
        self._reserved = norms
        self._pattern = (
            re.compile("|".join(re.escape(n) for n in reversed(norms))) if norms else None
        )
        self._ok: dict[str, bool] = {}
        self.makers: dict[str, Callable[[], str]] = {
            "person": lambda: (
                self._pick(_P_FIRST_A)
                + self._pick(_P_FIRST_B)
                + " "
                + self._pick(_P_LAST_A)
                + self._pick(_P_LAST_B)
            ),
            "town": lambda: self._pick(_T_A) + self._pick(_T_B),
            "river": lambda: self._pick(_R_A) + self._pick(_R_B) + " River",
            "company": lambda: self._pick(_C_A) + self._pick(_C_B) + " " + self._pick(_C_KIND),
            "book": lambda: (
                f"The {self._pick(_B_ADJ)} {self._pick(_B_NOUN)} of "
                + self._pick(_T_A)
                + self._pick(_T_B)
            ),
        }

    def _pick(self, options: tuple[str, ...]) -> str:
        return options[int(self.rng.random() * len(options))]

    def clean(self, name: str) -> bool:
        """Whether ``name`` neither contains nor is contained in a reserved name."""
        ok = self._ok.get(name)
        if ok is None:
            norm = normalize_answer(name)
            ok = not (
                (self._pattern is not None and self._pattern.search(norm))
                or any(norm in other for other in self._reserved if len(other) >= len(norm))
            )
            self._ok[name] = ok
        return ok

    def name(self, kind: str) -> str:
        make = self.makers[kind]
        for _ in range(1000):
            name = make()
            if self.clean(name):
                return name
        raise RuntimeError(f"no clean {kind} name found; the reserved names cover the syllables")


def _facts(rng: random.Random, namer: _Namer, kind: str) -> tuple[dict[str, str], list[str]]:
    """A distractor's facts (the template fields of its kind) and its extra sentences."""
    pick = rng.choice
    if kind == "person":
        occupation = pick(OCCUPATIONS)
        facts = {
            "birth_year": str(rng.randint(1800, 1995)),
            "birthplace": namer.name("town"),
            "a_occupation": _article(occupation),
            "school": pick(SCHOOLS),
        }
        extra = []
        if rng.random() < 0.2:
            extra.append(f"{{pron}} founded {namer.name('company')} in {rng.randint(1830, 2020)}.")
        if rng.random() < 0.2:
            extra.append(f"{{pron}} is the author of {namer.name('book')}.")
        return facts, extra
    if kind == "town":
        return {
            "region": pick(REGIONS),
            "founded": str(rng.randint(1050, 1850)),
            "river": namer.name("river"),
            "population": f"{rng.randint(1_200, 480_000):,}",
            "product": pick(PRODUCTS),
        }, []
    if kind == "river":
        return {
            "length": f"{rng.randint(60, 2400)} km",
            "mouth": pick(LAKES),
            "towns": ", ".join(namer.name("town") for _ in range(3)),
        }, []
    if kind == "company":
        return {
            "industry": pick(INDUSTRIES),
            "founded": str(rng.randint(1830, 2020)),
            "founder": namer.name("person"),
            "hq": namer.name("town"),
        }, []
    return {
        "genre": pick(GENRES),
        "author": namer.name("person"),
        "year": str(rng.randint(1820, 2023)),
    }, []


def distractor_passages(
    seed: int, count: int, start_id: int = 0, reserved: Iterable[str] = ()
) -> Iterator[Doc]:
    """``count`` distractor passages with ids ``str(start_id)``, ``str(start_id + 1)``, ...

    A pure function of ``seed`` and ``reserved`` (the names no distractor may use, normally the
    world's): the same arguments give the same passages, streamed one at a time.
    """
    rng = random.Random(f"searchqa-distractors-{DISTRACTOR_VERSION}-{seed}")
    namer = _Namer(rng, reserved)
    for i in range(count):
        kind = rng.choices(KINDS, KIND_WEIGHTS)[0]
        name = namer.name(kind)
        pronoun = rng.choice(("He", "She")) if kind == "person" else "It"
        facts, extra = _facts(rng, namer, kind)
        values = {**facts, "name": name, "pron": pronoun}
        sentences = [rng.choice(options).format(**values) for options in TEMPLATES[kind].values()]
        sentences += [s.format(pron=pronoun) for s in extra]
        yield Doc(str(start_id + i), f'"{name}"\n' + " ".join(sentences))
