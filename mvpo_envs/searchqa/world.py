"""The invented world behind the bundled SearchQA corpus: entities, facts and passage text.

docs/environments.md, "mvpo/SearchQA-v0", Data ("the bundled invented corpus"). Everything here is
made up and deterministic from a seed: towns, rivers, people, companies and books with names
built from syllables (checked so that no name's normalised form occurs inside another's, which
keeps :func:`~mvpo_envs.searchqa.metrics.has_answer` honest), their facts, and one passage each,
written from per-fact sentence templates. :data:`TEMPLATES` is also what
:mod:`mvpo_envs.searchqa.oracle` reads passages back with (:func:`read_passage`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from mvpo_envs.searchqa.metrics import normalize_answer


def _names(text: str) -> tuple[str, ...]:
    """``"a|b c|d"`` -> ``("a", "b c", "d")`` (``|``-separated), else split on white space."""
    return tuple(p.strip() for p in text.split("|")) if "|" in text else tuple(text.split())


REGIONS = _names(
    "Eastmarch|Lowvale|Brindle Coast|Highfold|Sarrow Plains|Ketterdown|Westreach|Mirefen"
)
LAKES = tuple(
    "Lake " + n for n in _names("Orvane Thessil Myrren Caldor Ysolde Pethra Umbrel Varsa")
)
OCCUPATIONS = _names(
    "painter engineer architect botanist composer journalist surgeon astronomer sculptor "
    "economist navigator chemist"
)
INDUSTRIES = _names(
    "textile shipbuilding glassmaking printing railway brewing mining clockmaking "
    "pharmaceutical software"
)
GENRES = _names("novel|memoir|travelogue|poetry collection|history|cookbook")
PRODUCTS = _names("wool glassware clocks cider salt lace boats cheese paper copper")
SCHOOLS = _names(
    "Royal Academy of Arts|Polytechnic Institute|Naval College|Conservatory of Music|"
    "School of Medicine|Institute of Letters"
)
# syllables of invented names, one inventory per kind
_FIRST_A = _names(
    "Al Bren Cor Da El Fen Gar Hal Is Jor Ka Lio Mar Nel Or Pe Quin Ros Sel Tam Ul Vin Wen Yor Zel"
)
_FIRST_B = _names("a en is o ric wyn ette an ia us ine el")
_LAST_A = _names(
    "Ash Brack Corm Dun Eld Frel Gorm Hesk Ilv Jass Kell Lorv Mord Nask Orm Pell Quarn Rask "
    "Sorv Tull Wex Yarr Zorn Brum"
)
_LAST_B = _names("ley wick mere ton ard ell ing sen ov ane rick aby")
_TOWN_A = _names(
    "Var Kes Mol Tarn Hob Gil Pry Dor Lun Sket Bel Cran Wid Fal Ost Rim Sul Nor Ebb Hark"
)
_TOWN_B = _names("ford haven stead bury mouth dale port ham thorpe combe garth holm")
_RIVER_A = _names("Os Vel Tam Ry Ke Lu Sa Dre Mo Ith Ca Ar")
_RIVER_B = _names("tra mira wen dell ssa vane rith olo nara quell")
_CO_A = _names("Kor Al Ve Tri Quo Zan Bel Ostr Mar Cyl Fen Dra")
_CO_B = _names("vex trion dyne lux mora tek vane quist ford nyx")
_CO_KIND = _names("Industries|Works|Systems|Foundry|Mills|Labs|Trading Company|Instruments")
_BOOK_ADJ = _names(
    "Silent Copper Hollow Distant Seventh Glass Amber Northern Broken Quiet Winter Salt"
)
_BOOK_NOUN = _names(
    "Orchard Lantern Harbor Meridian Archive Bell Garden Compass Tide Ledger Staircase Crossing"
)

#: kind -> fact -> sentence templates; ``{name}`` is the passage's entity, ``{pron}`` its pronoun
TEMPLATES: dict[str, dict[str, tuple[str, ...]]] = {
    "person": {
        "bio": (
            "{name} (born {birth_year} in {birthplace}) is {a_occupation}.",
            "{name} is {a_occupation} who was born in {birthplace} in {birth_year}.",
        ),
        "school": (
            "{pron} studied at the {school}.",
            "{pron} trained at the {school} before working abroad.",
        ),
    },
    "town": {
        "bio": (
            "{name} is a town in the {region} region, founded in {founded}.",
            "Founded in {founded}, {name} is a town in the {region} region.",
        ),
        "river": ("The {river} flows through {name}.", "{name} lies on the banks of the {river}."),
        "population": (
            "{name} has a population of {population}.",
            "About {population} people live in {name}.",
        ),
        "product": (
            "The town is known for its {product}.",
            "Local trade is dominated by {product}.",
        ),
    },
    "river": {
        "bio": (
            "The {name} is a river, {length} long, that flows into {mouth}.",
            "The {name} flows into {mouth}; it is {length} long.",
        ),
        "towns": ("Towns along the {name} include {towns}.", "The {name} passes {towns}."),
    },
    "company": {
        "bio": (
            "{name} is a {industry} company founded in {founded} by {founder}.",
            "{founder} founded {name}, a {industry} company, in {founded}.",
        ),
        "hq": ("{name} is headquartered in {hq}.", "Its headquarters are in {hq}."),
    },
    "book": {
        "bio": (
            "{name} is a {genre} written by {author} and published in {year}.",
            "{author} wrote {name}, a {genre} published in {year}.",
        ),
    },
}


@dataclass
class Entity:
    """One invented entity: ``kind``, ``name``, its facts and (once written) its passage id."""

    kind: str
    name: str
    facts: dict[str, Any] = field(default_factory=dict)
    doc_id: str = ""
    pronoun: str = "It"
    #: extra sentences (back-links: what a person founded or wrote); ``{pron}`` is filled in
    extra: list[str] = field(default_factory=list)


@dataclass
class World:
    """All entities by kind, in generation order."""

    towns: list[Entity]
    rivers: list[Entity]
    people: list[Entity]
    companies: list[Entity]
    books: list[Entity]

    def all(self) -> list[Entity]:
        return [*self.towns, *self.rivers, *self.people, *self.companies, *self.books]

    def by_name(self) -> dict[str, Entity]:
        return {e.name: e for e in self.all()}


class _Names:
    """Unique names: no normalised name occurs inside another (nor inside fixed vocabulary)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.taken: list[str] = [normalize_answer(w) for w in (*REGIONS, *LAKES)]

    def add(self, name: str) -> bool:
        """Take ``name`` if it clashes with no name taken so far."""
        norm = normalize_answer(name)
        if any(norm in other or other in norm for other in self.taken):
            return False
        self.taken.append(norm)
        return True

    def make(self, build: Callable[[random.Random], str]) -> str:
        for _ in range(10_000):
            name = build(self.rng)
            if self.add(name):
                return name
        raise RuntimeError("name space exhausted; lower the entity counts")


def _article(word: str) -> str:
    return ("an " if word[0].lower() in "aeiou" else "a ") + word


def build_world(
    rng: random.Random,
    n_towns: int = 70,
    n_rivers: int = 24,
    n_people: int = 160,
    n_companies: int = 70,
    n_books: int = 70,
) -> World:
    """Entities and facts. Founders and authors are distinct people; values are unique per kind."""
    names = _Names(rng)
    pick = rng.choice
    rivers = [
        Entity("river", names.make(lambda r: pick(_RIVER_A) + pick(_RIVER_B) + " River"))
        for _ in range(n_rivers)
    ]
    for river, length in zip(rivers, rng.sample(range(60, 2400), n_rivers), strict=True):
        river.facts.update(length=f"{length} km", mouth=pick(LAKES))
    towns = [
        Entity("town", names.make(lambda r: pick(_TOWN_A) + pick(_TOWN_B))) for _ in range(n_towns)
    ]
    for town, pop in zip(towns, rng.sample(range(1_200, 480_000), n_towns), strict=True):
        town.facts.update(
            region=pick(REGIONS),
            founded=str(rng.randint(1050, 1850)),
            river=pick(rivers).name,
            population=f"{pop:,}",
            product=pick(PRODUCTS),
        )
    for river in rivers:
        along = [t.name for t in towns if t.facts["river"] == river.name][:3]
        river.facts["towns"] = ", ".join(along) if along else "no towns of note"
    people = [
        Entity(
            "person",
            names.make(
                lambda r: pick(_FIRST_A) + pick(_FIRST_B) + " " + pick(_LAST_A) + pick(_LAST_B)
            ),
        )
        for _ in range(n_people)
    ]
    for person, year in zip(people, rng.sample(range(1800, 1995), n_people), strict=True):
        occupation = pick(OCCUPATIONS)
        person.pronoun = pick(("He", "She"))
        person.facts.update(
            birth_year=str(year),
            birthplace=pick(towns).name,
            occupation=occupation,
            a_occupation=_article(occupation),
            school=pick(SCHOOLS),
        )
    founders, authors = _split_roles(rng, people, n_companies, n_books)
    companies = [
        Entity("company", names.make(lambda r: pick(_CO_A) + pick(_CO_B) + " " + pick(_CO_KIND)))
        for _ in range(n_companies)
    ]
    for company, founder in zip(companies, founders, strict=True):
        born = int(founder.facts["birth_year"])
        founded = rng.randint(born + 20, min(born + 60, 2020))
        company.facts.update(
            industry=pick(INDUSTRIES),
            founded=str(founded),
            founder=founder.name,
            hq=pick(towns).name,
        )
    titles = [f"The {a} {n}" for a in _BOOK_ADJ for n in _BOOK_NOUN]
    rng.shuffle(titles)
    titles = [t for t in titles if names.add(t)]
    if len(titles) < len(authors):
        raise ValueError(f"only {len(titles)} book titles available for {len(authors)} books")
    books = []
    for author, title in zip(authors, titles, strict=False):
        book = Entity("book", title)
        book.facts.update(
            genre=pick(GENRES),
            author=author.name,
            year=str(
                rng.randint(
                    int(author.facts["birth_year"]) + 18,
                    min(int(author.facts["birth_year"]) + 70, 2023),
                )
            ),
        )
        books.append(book)
    _unique_years(rng, companies, "founded")
    _unique_years(rng, books, "year")
    return World(towns, rivers, people, companies, books)


def _split_roles(rng: random.Random, people: list[Entity], n_companies: int, n_books: int):
    if n_companies + n_books > len(people):
        raise ValueError("need at least as many people as companies + books")
    chosen = rng.sample(people, n_companies + n_books)
    return chosen[:n_companies], chosen[n_companies:]


def _unique_years(rng: random.Random, entities: list[Entity], key: str) -> None:
    """Nudge years so that no two entities of a kind share one (comparisons stay decidable)."""
    used: set[int] = set()
    for e in entities:
        year = int(e.facts[key])
        while year in used:
            year += 1
        used.add(year)
        e.facts[key] = str(year)


def link_entities(world: World) -> None:
    """Mention in each person's passage what they founded or wrote (realistic distractors)."""
    by_name = world.by_name()
    for company in world.companies:
        by_name[company.facts["founder"]].extra.append(
            f"{{pron}} founded {company.name} in {company.facts['founded']}."
        )
    for book in world.books:
        by_name[book.facts["author"]].extra.append(f"{{pron}} is the author of {book.name}.")


def write_passage(rng: random.Random, entity: Entity) -> str:
    """``contents`` in FlashRAG form: ``"Title"\\n`` + the passage text (name first)."""
    values = {**entity.facts, "name": entity.name, "pron": entity.pronoun}
    sentences = [
        rng.choice(templates).format(**values) for templates in TEMPLATES[entity.kind].values()
    ]
    sentences += [s.format(pron=entity.pronoun) for s in entity.extra]
    return f'"{entity.name}"\n' + " ".join(sentences)


# -- reading passages back (the oracle's reader) ----------------------------------------------
_FIELD = re.compile(r"\{(\w+)\}")


@lru_cache(maxsize=4096)
def _template_regex(template: str, title: str) -> re.Pattern[str]:
    out, seen, pos = [], set(), 0
    for m in _FIELD.finditer(template):
        out.append(re.escape(template[pos : m.start()]))
        name = m.group(1)
        if name == "name":
            out.append(re.escape(title))
        elif name == "pron":
            out.append(r"(?:He|She|It)")
        elif name in seen:
            out.append(f"(?P={name})")
        else:
            seen.add(name)
            out.append(f"(?P<{name}>[^.;]+?)")
        pos = m.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out))


@lru_cache(maxsize=256)
def _literals(template: str) -> tuple[str, ...]:
    """The fixed text pieces of a template (a cheap pre-filter before any regex)."""
    return tuple(p.strip() for p in _FIELD.split(template)[::2] if p.strip())


def read_passage(title: str, text: str) -> dict[str, str]:
    """The facts a passage states about its title entity, read with :data:`TEMPLATES`."""
    facts: dict[str, str] = {}
    for kind_templates in TEMPLATES.values():
        for templates in kind_templates.values():
            for template in templates:
                if not all(piece in text for piece in _literals(template)):
                    continue
                match = _template_regex(template, title).search(text)
                if match:
                    for key, value in match.groupdict().items():
                        facts.setdefault(key, value)
    if "a_occupation" in facts:
        facts.setdefault("occupation", facts["a_occupation"].split(" ", 1)[-1])
    return facts
