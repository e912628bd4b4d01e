"""Generate the bundled SearchQA set: an invented corpus and single-/two-hop questions.

docs/environments.md, "mvpo/SearchQA-v0", Data. ``python -m mvpo_envs.searchqa.generate --out
data/searchqa --seed 0`` writes, deterministically from the seed:

* ``corpus.jsonl``: one passage per invented entity (FlashRAG form ``{"id", "contents"}``);
* ``train.jsonl`` / ``test.jsonl``: ``{"id", "question", "golden_answers", "type", "metadata"}``
  with ``type`` in ``single`` | ``bridge`` | ``comparison`` and metadata ``relations`` (the fact
  path), ``entities`` (named in the question), ``bridge`` (the intermediate entity of a bridge
  question, else ``null``), ``supporting_ids`` / ``supporting_titles`` (the passages needed);
* ``meta.json``: seed, counts and the generator version.

Every answer is stated in the corpus: single-hop in the subject's passage, bridge questions
through the bridge entity's passage, comparisons by reading both entities' passages.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from mvpo_envs.cli_args import FlagSpellingParser
from mvpo_envs.cli_args import int_at_least as _count
from mvpo_envs.searchqa.data import Doc, QAItem, bundled_dir, write_jsonl
from mvpo_envs.searchqa.world import World, build_world, link_entities, write_passage

GENERATOR_VERSION = 1

# relation -> (entity kind that has it, kind the value names or None for a literal)
RELATIONS: dict[str, tuple[str, str | None]] = {
    "birthplace": ("person", "town"),
    "birth_year": ("person", None),
    "occupation": ("person", None),
    "founder": ("company", "person"),
    "hq": ("company", "town"),
    "founded": ("company", None),
    "river": ("town", "river"),
    "region": ("town", None),
    "mouth": ("river", None),
    "length": ("river", None),
    "author": ("book", "person"),
    "year": ("book", None),
}

SINGLE: dict[str, tuple[str, ...]] = {
    "birthplace": ("In which town was {x} born?", "Where was {x} born?"),
    "birth_year": ("In what year was {x} born?",),
    "occupation": ("What is the occupation of {x}?",),
    "founder": ("Who founded {x}?",),
    "hq": ("In which town is {x} headquartered?", "Where is {x} headquartered?"),
    "founded": ("In what year was {x} founded?",),
    "river": ("Which river flows through {x}?",),
    "region": ("In which region is {x}?",),
    "mouth": ("Into which lake does the {x} flow?",),
    "length": ("How long is the {x}?",),
    "author": ("Who wrote {x}?",),
    "year": ("In what year was {x} published?",),
}

BRIDGE: dict[tuple[str, str], str] = {
    ("founder", "birthplace"): "In which town was the founder of {x} born?",
    ("founder", "birth_year"): "In what year was the founder of {x} born?",
    ("founder", "occupation"): "What is the occupation of the founder of {x}?",
    ("hq", "river"): "Which river flows through the town where {x} is headquartered?",
    ("hq", "region"): "In which region is the town where {x} is headquartered?",
    ("author", "birthplace"): "In which town was the author of {x} born?",
    ("author", "birth_year"): "In what year was the author of {x} born?",
    ("birthplace", "river"): "Which river flows through the birthplace of {x}?",
    ("birthplace", "region"): "In which region is the town where {x} was born?",
    ("river", "mouth"): "Into which lake does the river that flows through {x} empty?",
    ("river", "length"): "How long is the river that flows through {x}?",
}

# relation -> (question, "min" | "max")
COMPARISON: dict[str, tuple[str, str]] = {
    "birth_year": ("Who was born first, {a} or {b}?", "min"),
    "founded": ("Which company was founded earlier, {a} or {b}?", "min"),
    "length": ("Which river is longer, the {a} or the {b}?", "max"),
    "population": ("Which town has a larger population, {a} or {b}?", "max"),
    "year": ("Which book was published first, {a} or {b}?", "min"),
}
_COMPARISON_KIND = {
    "birth_year": "person",
    "founded": "company",
    "length": "river",
    "population": "town",
    "year": "book",
}


def number(value: str) -> float:
    """``"12,345"`` / ``"412 km"`` / ``"1932"`` -> a number."""
    return float(value.replace(",", "").split()[0])


def answers_for(relation: str, value: str) -> list[str]:
    """Golden answers of a fact value, with the aliases a reader may fairly give."""
    if relation == "river" or value.endswith(" River"):
        return [value, value.removesuffix(" River")]
    if relation == "mouth":
        return [value, value.removeprefix("Lake ")]
    if relation == "length":
        n = value.split()[0]
        return [value, f"{n} kilometres", f"{n} kilometers", n]
    if relation == "region":
        return [value, f"{value} region"]
    return [value]


class _Questions:
    """Builds question rows; ``seen`` keeps question texts unique."""

    def __init__(self, rng: random.Random, world: World):
        self.rng, self.world = rng, world
        self.by_name = world.by_name()
        self.kinds = {
            "person": world.people,
            "company": world.companies,
            "town": world.towns,
            "river": world.rivers,
            "book": world.books,
        }
        self.seen: set[str] = set()

    def _row(
        self, question: str, answers: list[str], qtype: str, meta: dict[str, Any]
    ) -> dict[str, Any] | None:
        if question in self.seen:
            return None
        self.seen.add(question)
        support = [self.by_name[n] for n in meta.pop("support")]
        return {
            "question": question,
            "golden_answers": answers,
            "type": qtype,
            "metadata": {
                "type": qtype,
                **meta,
                "supporting_ids": [e.doc_id for e in support],
                "supporting_titles": [e.name for e in support],
            },
        }

    def single(self) -> dict[str, Any] | None:
        relation = self.rng.choice(sorted(SINGLE))
        subject = self.rng.choice(self.kinds[RELATIONS[relation][0]])
        value = subject.facts[relation]
        question = self.rng.choice(SINGLE[relation]).format(x=subject.name)
        meta = {
            "relations": [relation],
            "entities": [subject.name],
            "bridge": None,
            "support": [subject.name],
        }
        return self._row(question, answers_for(relation, value), "single", meta)

    def bridge(self) -> dict[str, Any] | None:
        first, second = self.rng.choice(sorted(BRIDGE))
        subject = self.rng.choice(self.kinds[RELATIONS[first][0]])
        bridge = self.by_name[subject.facts[first]]
        value = bridge.facts[second]
        question = BRIDGE[(first, second)].format(x=subject.name)
        meta = {
            "relations": [first, second],
            "entities": [subject.name],
            "bridge": bridge.name,
            "support": [subject.name, bridge.name],
        }
        return self._row(question, answers_for(second, value), "bridge", meta)

    def comparison(self) -> dict[str, Any] | None:
        relation = self.rng.choice(sorted(COMPARISON))
        template, pick = COMPARISON[relation]
        a, b = self.rng.sample(self.kinds[_COMPARISON_KIND[relation]], 2)
        va, vb = number(a.facts[relation]), number(b.facts[relation])
        if va == vb:
            return None
        winner = a if (va < vb) == (pick == "min") else b
        question = template.format(a=a.name, b=b.name)
        meta = {
            "relations": [relation],
            "compare": pick,
            "entities": [a.name, b.name],
            "bridge": None,
            "support": [a.name, b.name],
        }
        return self._row(question, answers_for(relation, winner.name), "comparison", meta)


def generate(
    seed: int = 0,
    n_train: int = 800,
    n_test: int = 200,
    mix: tuple[float, float, float] = (0.4, 0.4, 0.2),
) -> tuple[list[Doc], list[QAItem], list[QAItem]]:
    """The corpus and the train/test questions, a pure function of the arguments."""
    rng = random.Random(seed)
    world = build_world(rng)
    link_entities(world)
    entities = world.all()
    rng.shuffle(entities)
    docs = []
    for i, entity in enumerate(entities):
        entity.doc_id = str(i)
        docs.append(Doc(entity.doc_id, write_passage(rng, entity)))
    maker = _Questions(rng, world)
    makers: list[Callable[[], dict[str, Any] | None]] = [
        maker.single,
        maker.bridge,
        maker.comparison,
    ]
    total = n_train + n_test
    rows: list[dict[str, Any]] = []
    for make, share in zip(makers, mix, strict=False):
        want, tries, made = round(total * share), 0, []
        while len(made) < want:
            tries += 1
            if tries > 50 * total:
                raise RuntimeError("could not generate enough distinct questions; lower the counts")
            row = make()
            if row is not None:
                made.append(row)
        rows += made
    rows = rows[:total]
    rng.shuffle(rows)
    splits = {"test": rows[:n_test], "train": rows[n_test:]}
    out = {}
    for split, split_rows in splits.items():
        out[split] = [
            QAItem(f"{split}_{i:04d}", r["question"], r["golden_answers"], r["type"], r["metadata"])
            for i, r in enumerate(split_rows)
        ]
    return docs, out["train"], out["test"]


def write_bundle(
    out_dir: str | Path,
    seed: int = 0,
    n_train: int = 800,
    n_test: int = 200,
    distractors: int = 0,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Write ``corpus.jsonl``, ``train.jsonl``, ``test.jsonl`` and ``meta.json`` to ``out_dir``.

    ``distractors`` extra passages (:mod:`mvpo_envs.searchqa.distractors`) follow the world's
    in ``corpus.jsonl``, streamed to the file (docs/searchqa.md, "Large corpora"); the
    questions and the world's passages do not change.
    """
    out_dir = Path(out_dir)
    docs, train, test = generate(seed, n_train, n_test)
    corpus: Iterable[Doc] = docs
    if distractors:
        from mvpo_envs.searchqa.distractors import distractor_passages
        from mvpo_envs.searchqa.world import LAKES, REGIONS

        reserved = [d.title for d in docs] + list(REGIONS) + list(LAKES)
        extra = distractor_passages(seed, distractors, len(docs), reserved)
        if show_progress:
            from tqdm import tqdm

            extra = tqdm(extra, total=distractors, desc="distractors", mininterval=1.0)
        corpus = itertools.chain(docs, extra)
    write_jsonl(out_dir / "corpus.jsonl", ({"id": d.id, "contents": d.contents} for d in corpus))
    write_jsonl(out_dir / "train.jsonl", (q.to_json() for q in train))
    write_jsonl(out_dir / "test.jsonl", (q.to_json() for q in test))
    meta = {
        "generator": "mvpo_envs.searchqa.generate",
        "version": GENERATOR_VERSION,
        "seed": seed,
        "passages": len(docs) + distractors,
        "train": len(train),
        "test": len(test),
        "types": {s: _count_types(qs) for s, qs in (("train", train), ("test", test))},
    }
    if distractors:  # the bundled set's meta.json stays as it was
        meta["distractors"] = distractors
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def _count_types(items: list[QAItem]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[str(item.type)] = counts.get(str(item.type), 0) + 1
    return dict(sorted(counts.items()))


def main(argv: list[str] | None = None) -> int:
    p = FlagSpellingParser(prog="mvpo-searchqa-generate", description=__doc__.split("\n")[0])
    p.add_argument(
        "--out", default=str(bundled_dir()), help="output folder (default: data/searchqa)"
    )
    p.add_argument("--seed", type=_count(0), default=0)
    p.add_argument("--train", type=_count(1), default=800, help="number of training questions")
    p.add_argument("--test", type=_count(1), default=200, help="number of test questions")
    p.add_argument(
        "--distractors",
        type=_count(0),
        default=0,
        help="extra passages after the world's, e.g. 1000000 (docs/searchqa.md, Large corpora)",
    )
    args = p.parse_args(argv)
    try:
        meta = write_bundle(
            args.out, args.seed, args.train, args.test, args.distractors, args.distractors > 0
        )
    except RuntimeError as err:  # more questions than the invented world holds
        p.error(str(err))
    print(json.dumps(meta))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
