"""Generate the bundled WebShop catalog: products and goals in WebShop's own file formats.

docs/environments.md, "mvpo/WebShop-v0", Data ("a bundled generated catalogue with goals in
WebShop's schema"). Writes into ``data/webshop/`` (or ``--out``):

* ``items_shuffle_bundled.json`` - raw products as WebShop's ``items_shuffle*.json``;
* ``items_ins_v2_bundled.json`` - asin -> ``attributes`` (+ ``instruction``,
  ``instruction_attributes`` for most products), as ``items_ins_v2*.json``;
* ``items_human_ins_bundled.json`` - asin -> human-style instructions with
  ``instruction_attributes`` and ``instruction_options``, as ``items_human_ins.json``;
* ``reviews_bundled.json`` - a few reviews, as WebShop's ``reviews.json``.

Goals are not stored: the loader derives them exactly as for real files (one synthetic goal per
option combination of each instructed product, seeded price caps, seed-233 shuffle), so the
correct product of every goal exists and satisfies its attributes, options and price.
Everything is a pure function of ``--seed``. ``--check`` replays the scripted expert on every
test goal and fails unless each one scores 1.0.

Run: ``python -m mvpo_envs.webshop.generate [--seed 0] [--per-type 24] [--out DIR] [--check]``.
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path
from typing import Any

from mvpo_envs.cli_args import FlagSpellingParser
from mvpo_envs.cli_args import int_at_least as _count
from mvpo_envs.webshop.catalog_vocab import (
    AUDIENCES,
    BRANDS,
    HUMAN_TEMPLATES,
    INSTRUCTION_TEMPLATES,
    REVIEW_BODIES,
    REVIEW_TITLES,
    STYLE_WORDS,
    TYPES,
    ProductType,
)
from mvpo_envs.webshop.data import bundled_dir

FILES = {
    "products": "items_shuffle_bundled.json",
    "attributes": "items_ins_v2_bundled.json",
    "human": "items_human_ins_bundled.json",
    "reviews": "reviews_bundled.json",
}


def _asin(rng: random.Random, used: set[str]) -> str:
    while True:
        asin = "B0" + "".join(rng.choices(string.digits + string.ascii_uppercase, k=8))
        if asin not in used:
            used.add(asin)
            return asin


def _title_case(text: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in text.split())


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _product(
    t: ProductType, rng: random.Random, used: set[str]
) -> tuple[dict[str, Any], list[str]]:
    asin = _asin(rng, used)
    attrs = rng.sample(t.attributes, rng.randint(2, 4))
    noun = rng.choice(t.nouns)
    brand = rng.choice(BRANDS)
    style = rng.choice(STYLE_WORDS) if rng.random() < 0.5 else ""
    audience = rng.choice(AUDIENCES)
    title_words = [brand, style, _title_case(attrs[0]), noun, audience]
    title = " ".join(w for w in title_words if w)
    if rng.random() < 0.6:
        title += f", {_title_case(attrs[1])}"
    options: dict[str, list[dict[str, Any]]] = {}
    for name, pool in t.options:
        if rng.random() < 0.8:
            k = rng.randint(2, min(4, len(pool)))
            chosen = set(rng.sample(pool, k))
            values = [v for v in pool if v in chosen]
            options[_title_case(name)] = [{"value": _title_case(v), "image": None} for v in values]
    bullets = [f"{a.upper()}: this {noun.lower()} is {a} by design." for a in attrs[1:]]
    bullets.append(f"WHAT YOU GET: one {noun.lower()} from {brand}, backed by a 30 day guarantee.")
    low, high = t.price
    price = round(rng.uniform(low, high), 2)
    pricing = f"${price}"
    if rng.random() < 0.2:
        pricing = f"${price} - ${round(price * rng.uniform(1.1, 1.6), 2)}"
    description = (
        f"The {brand} {noun.lower()} combines {_join(attrs[:2])}. "
        f"Made for everyday use, it is a {rng.choice(['simple', 'reliable', 'popular', 'practical'])} "
        f"choice for anyone shopping for {t.query}."
    )
    raw = {
        "name": title,
        "full_description": description,
        "pricing": pricing,
        "images": [""],
        "product_category": t.product_category,
        "average_rating": "",
        "small_description": bullets,
        "customization_options": options or "",
        "asin": asin,
        "category": t.category,
        "query": t.query,
    }
    return raw, attrs


def _instruction(t: ProductType, attrs: list[str], rng: random.Random) -> str:
    template = rng.choice(INSTRUCTION_TEMPLATES)
    return template.format(
        attrs=", ".join(attrs), query=t.query, first=attrs[0], rest=", ".join(attrs[1:]) or attrs[0]
    )


def _human(
    t: ProductType, raw: dict[str, Any], attrs: list[str], rng: random.Random
) -> dict[str, Any]:
    wanted = rng.sample(attrs, rng.randint(1, 2))
    text = rng.choice(HUMAN_TEMPLATES).format(a="a", query=t.query, attrs=" and ".join(wanted))
    chosen = []
    for name, values in (raw["customization_options"] or {}).items():
        value = rng.choice(values)["value"].lower()
        chosen.append(value)
        text += f", {value} {name.lower()}" if name.lower() != "size" else f", size {value}"
    return {
        "asin": raw["asin"],
        "instruction": text,
        "attributes": attrs,
        "instruction_attributes": wanted,
        "instruction_options": chosen,
    }


def generate(seed: int = 0, per_type: int = 24) -> dict[str, Any]:
    """All four files' contents (a pure function of ``seed`` and ``per_type``)."""
    rng = random.Random(seed)
    used: set[str] = set()
    products, attributes, human, reviews = [], {}, {}, []
    for t in TYPES:
        for _ in range(per_type):
            raw, attrs = _product(t, rng, used)
            products.append(raw)
            info: dict[str, Any] = {"attributes": attrs}
            if rng.random() < 0.85:
                wanted = rng.sample(attrs, rng.randint(min(2, len(attrs)), min(3, len(attrs))))
                info["instruction"] = _instruction(t, wanted, rng)
                info["instruction_attributes"] = wanted
            attributes[raw["asin"]] = info
            if rng.random() < 0.9:
                human[raw["asin"]] = [_human(t, raw, attrs, rng) for _ in range(rng.randint(1, 3))]
            if rng.random() < 0.3:
                rs = [
                    {
                        "title": rng.choice(REVIEW_TITLES),
                        "stars": rng.randint(2, 5),
                        "review": rng.choice(REVIEW_BODIES),
                    }
                    for _ in range(rng.randint(1, 2))
                ]
                avg = round(sum(r["stars"] for r in rs) / len(rs), 1)
                reviews.append({"asin": raw["asin"], "reviews": rs, "average_rating": avg})
    rng.shuffle(products)  # WebShop's items_shuffle files are shuffled
    return {"products": products, "attributes": attributes, "human": human, "reviews": reviews}


def _dump(obj: Any) -> str:
    """One JSON record per line (readable diffs), compact inside."""
    if isinstance(obj, list):
        return "[\n" + ",\n".join(json.dumps(x, ensure_ascii=False) for x in obj) + "\n]\n"
    items = [f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in obj.items()]
    return "{\n" + ",\n".join(items) + "\n}\n"


def write(out: Path, contents: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for key, name in FILES.items():
        (out / name).write_text(_dump(contents[key]), encoding="utf-8")


def check(out: Path) -> tuple[int, int]:
    """Expert score on every bundled test goal (both goal sources): (goals, goals at 1.0)."""
    from mvpo_envs.webshop.env import WebShopEnv
    from mvpo_envs.webshop.expert import run_expert

    total = perfect = 0
    for source in ("synthetic", "human"):
        env = WebShopEnv(split="test", data_dir=out, goal_source=source, cache_dir=False)
        for i in range(len(env.task_ids)):
            score = run_expert(env, i)
            total += 1
            perfect += score == 1.0
    return total, perfect


def main(argv: list[str] | None = None) -> int:
    p = FlagSpellingParser(prog="mvpo-webshop-generate", description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=_count(0), default=0)
    p.add_argument(
        "--per-type", type=_count(1), default=24, help="products per product type (25 types)"
    )
    p.add_argument("--out", type=Path, default=None, help="output folder (default: data/webshop)")
    p.add_argument("--check", action="store_true", help="replay the expert on every test goal")
    args = p.parse_args(argv)
    out = args.out or bundled_dir()
    contents = generate(args.seed, args.per_type)
    write(out, contents)
    size = sum((out / n).stat().st_size for n in FILES.values())
    print(f"wrote {len(contents['products'])} products to {out} ({size / 1e6:.2f} MB)")
    if args.check:
        total, perfect = check(out)
        print(f"expert: {perfect}/{total} test goals at score 1.0")
        if perfect != total:
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
