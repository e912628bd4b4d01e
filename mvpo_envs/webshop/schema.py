"""Field checks of WebShop's data files: every record's fields and types, checked at load.

docs/webshop.md, "Data" ("Bad files"). The loaders of :mod:`mvpo_envs.webshop.data` call these
on every record they load, so a malformed file fails at load time with one
:class:`~mvpo_envs.data_files.DataFileError` line naming the file, the record (product index
and asin, or the asin key) and the field, instead of a ``KeyError`` or ``IndexError`` deep in
the engine or the reward later. A check is a few ``isinstance`` tests per field: linear in the
file and cheap next to parsing the JSON.

Besides types, the checks refuse what would make a goal nobody can play: a blank instruction,
a blank goal attribute or goal option, a blank option value of a product (its ``click[]``
cannot be told apart), and a price that is not a finite number >= 0.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from mvpo_envs.data_files import DataFileError

_PRICE_JUNK = re.compile(r"[^\d.]")
_EMPTY = {
    "asin": "is empty: a product needs an id",
    "instruction": "is empty: a goal with no instruction cannot be played",
    "instruction_text": "is empty: a goal with no instruction cannot be played",
}
#: longest value shown in an error line
_SHOW_CHARS = 60


class FieldError(Exception):
    """A bad field of a record whose file and record the caller adds (internal)."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")
        self.field, self.problem = field, problem


def describe(value: Any) -> str:
    """``int 5``, ``str 'abc'``: the type and a short repr, for one error line."""
    shown = repr(value)
    if len(shown) > _SHOW_CHARS:
        shown = shown[: _SHOW_CHARS - 3] + "..."
    return f"{type(value).__name__} {shown}"


def record_error(source: str | Path, record: str, err: FieldError) -> DataFileError:
    """The one line: ``<file>, <record>: <field>: <problem>``."""
    return DataFileError(f"{source}, {record}: {err}")


def product_label(index: int, item: Any) -> str:
    """``product 3 (asin 'B0...')`` (the asin when the record has a string one)."""
    asin = item.get("asin") if isinstance(item, dict) else None
    return f"product {index} (asin {asin!r})" if isinstance(asin, str) else f"product {index}"


# -- field checks (raise FieldError) --------------------------------------------------------------
def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _items(value: Any, field: str, what: str) -> list[tuple[str, Any]]:
    """``(field[i], item)`` for each item of a list (``null``: none); not a list is an error
    ``expected a list of <what>``."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise FieldError(field, f"expected a list of {what}, got {describe(value)}")
    return [(f"{field}[{i}]", item) for i, item in enumerate(value)]


def _object(value: Any, field: str) -> None:
    """``value`` is a JSON object (a dict), else an error at ``field``."""
    if not isinstance(value, dict):
        raise FieldError(field, f"expected a JSON object, got {describe(value)}")


def text(obj: Mapping[str, Any], key: str, required: bool = False, blank: bool = True) -> str:
    """``obj[key]`` as a string; absent or ``null`` is ``""`` unless ``required``; ``blank=False``
    refuses an empty string."""
    value = obj.get(key)
    if value is None:
        if required:
            raise FieldError(key, "missing (expected a string)")
        return ""
    if not isinstance(value, str):
        raise FieldError(key, f"expected a string, got {describe(value)}")
    if not blank and not value.strip():
        raise FieldError(key, _EMPTY.get(key, "is empty"))
    return value


def text_list(value: Any, field: str, blank: bool = True) -> list[str]:
    """A list of strings (``null`` is ``[]``); ``blank=False`` refuses ``""`` items."""
    for where, item in _items(value, field, "strings"):
        if not isinstance(item, str):
            raise FieldError(where, f"expected a string, got {describe(item)}")
        if not blank and not item.strip():
            raise FieldError(where, "is empty: no product can match it")
    return [] if value is None else value


def scalar(obj: Mapping[str, Any], key: str) -> None:
    """A display-only value (a rating, a review score): a string, a number or ``null``."""
    value = obj.get(key)
    if value is not None and not isinstance(value, (str, int, float)):
        raise FieldError(key, f"expected a string or a number, got {describe(value)}")


def parse_pricing(pricing: Any, field: str = "pricing") -> tuple[list[float], str]:
    """WebShop's price parsing: ``"$12.99"`` / ``"$9.99 - $19.99"`` strings or a processed
    list of numbers -> (``pricing`` list, ``Price`` tag); empty is WebShop's $100 default."""
    if isinstance(pricing, list):  # already processed
        values = []
        for i, p in enumerate(pricing):
            if not _is_number(p) or not math.isfinite(p) or p < 0:
                raise FieldError(f"{field}[{i}]", f"expected a price >= 0, got {describe(p)}")
            values.append(float(p))
        values = values or [100.0]
    elif pricing is None or pricing == "":
        return [100.0], "$100.0"
    elif not isinstance(pricing, str):
        raise FieldError(
            field, f"expected a price string such as '$12.99' or a list, got {describe(pricing)}"
        )
    else:
        parts = pricing.split("$")[1:]
        try:
            values = [float(Decimal(_PRICE_JUNK.sub("", p))) for p in parts]
        except InvalidOperation:
            values = []
        if not values or not all(math.isfinite(v) for v in values):
            raise FieldError(
                field, f"expected a price such as '$12.99' or '$9.99 - $19.99', got {pricing!r}"
            )
    if len(values) == 1:
        return values, f"${values[0]}"
    return values[:2], f"${values[0]} to ${values[1]}"


def _reviews_list(value: Any, field: str) -> None:
    for where, review in _items(value, field, "reviews"):
        _object(review, where)
        for key in ("title", "review", "body"):
            if review.get(key) is not None and not isinstance(review[key], str):
                raise FieldError(
                    f"{where}.{key}", f"expected a string, got {describe(review[key])}"
                )
        for key in ("stars", "score"):
            if review.get(key) is not None and not isinstance(review[key], (str, int, float)):
                raise FieldError(
                    f"{where}.{key}", f"expected a number, got {describe(review[key])}"
                )


def customization_options(value: Any) -> None:
    """Raw ``customization_options``: ``""``/``null`` or name -> ``null`` or a list of
    ``{"value": ..., "image": ...}``; values must not be blank."""
    if value is None or value == "":
        return
    if not isinstance(value, dict):
        raise FieldError(
            "customization_options", f"expected a JSON object or '', got {describe(value)}"
        )
    for name, contents in value.items():
        field = f"customization_options.{name}"
        for where, content in _items(contents, field, "options"):
            if not isinstance(content, dict) or "value" not in content:
                raise FieldError(where, f"expected {{'value': ...}}, got {describe(content)}")
            option = content["value"]
            if isinstance(option, bool) or not isinstance(option, (str, int, float)):
                raise FieldError(f"{where}.value", f"expected a string, got {describe(option)}")
            if not str(option).strip():
                raise FieldError(f"{where}.value", "is empty: the option cannot be clicked")


def processed_options(value: Any) -> None:
    """Processed ``options``: name -> list of non-blank value strings."""
    if value is None:
        return
    _object(value, "options")
    for name, values in value.items():
        text_list(values, f"options.{name}")
        for i, option in enumerate(values):
            if not option.strip():
                raise FieldError(f"options.{name}[{i}]", "is empty: the option cannot be clicked")


def images(value: Any) -> None:
    if value is None or isinstance(value, str):
        return
    text_list(value, "images")


def human_instruction(ins: Any, field: str = "") -> None:
    """One human instruction: ``instruction`` (a string; not blank when it has attributes,
    i.e. when it makes a goal), ``instruction_attributes``, ``instruction_options``."""
    prefix = f"{field}." if field else ""
    _object(ins, field or "instruction")
    try:
        attributes = text_list(ins.get("instruction_attributes"), "instruction_attributes", False)
        text_list(ins.get("instruction_options"), "instruction_options", blank=False)
        text_list(ins.get("attributes"), "attributes")
        instruction = text(ins, "instruction", required=True)
        if attributes and not instruction.strip(" .\t\n"):  # the goal text drops a final "."
            raise FieldError("instruction", _EMPTY["instruction"])
    except FieldError as err:
        raise FieldError(prefix + err.field, err.problem) from None


def human_instruction_list(value: Any, field: str) -> None:
    for where, ins in _items(value, field, "instructions"):
        human_instruction(ins, where)


def synthetic_instruction(info: Mapping[str, Any], instruction_key: str) -> None:
    """``instruction`` / ``instruction_text`` (not blank) and ``instruction_attributes``."""
    text_list(info.get("instruction_attributes"), "instruction_attributes", blank=False)
    if info.get(instruction_key) is not None:
        text(info, instruction_key, blank=False)


def raw_product(item: Any) -> None:
    """A raw scraped product (``items_shuffle*.json``), before WebShop's processing."""
    _object(item, "record")
    text(item, "asin", required=True, blank=False)
    text(item, "name", required=True)
    for key in ("full_description", "category", "query", "product_category"):
        text(item, key)
    small = item.get("small_description")
    if not isinstance(small, str):
        text_list(small, "small_description")
    parse_pricing(item.get("pricing"))
    customization_options(item.get("customization_options"))
    images(item.get("images"))


def processed_product(p: Any) -> None:
    """A processed product (the form WebShop's ``load_products`` returns)."""
    _object(p, "record")
    text(p, "asin", required=True, blank=False)
    text(p, "Title", required=True)
    for key in ("name", "Description", "Price", "query", "category", "product_category"):
        text(p, key)
    bullets = p.get("BulletPoints")
    if not isinstance(bullets, str):
        text_list(bullets, "BulletPoints")
    parse_pricing(p.get("pricing"))
    processed_options(p.get("options"))
    text_list(p.get("Attributes"), "Attributes")
    _reviews_list(p.get("Reviews"), "Reviews")
    scalar(p, "Rating")
    synthetic_instruction(p, "instruction_text")
    human_instruction_list(p.get("instructions"), "instructions")
    images(p.get("images"))


# -- whole side files (raise DataFileError naming the file) ---------------------------------------
def attributes_file(obj: Any, source: str | Path) -> dict[str, Any]:
    """``items_ins_v2*.json``: asin -> ``{attributes, instruction, instruction_attributes}``."""
    if not isinstance(obj, dict):
        raise DataFileError(
            f"{source}: expected a JSON object asin -> attributes, got {type(obj).__name__}"
        )
    for asin, info in obj.items():
        if info is None:
            continue
        try:
            _object(info, "record")
            text_list(info.get("attributes"), "attributes")
            synthetic_instruction(info, "instruction")
        except FieldError as err:
            raise record_error(source, f"asin {asin!r}", err) from None
    return obj


def human_file(obj: Any, source: str | Path) -> dict[str, Any]:
    """``items_human_ins*.json``: asin -> list of human instructions."""
    if not isinstance(obj, dict):
        raise DataFileError(
            f"{source}: expected a JSON object asin -> list of instructions, "
            f"got {type(obj).__name__}"
        )
    for asin, instructions in obj.items():
        try:
            human_instruction_list(instructions, "instructions")
        except FieldError as err:
            raise record_error(source, f"asin {asin!r}", err) from None
    return obj


def reviews_file(obj: Any, source: str | Path) -> list[dict[str, Any]]:
    """``reviews*.json``: a list of ``{asin, reviews: [...], average_rating}``."""
    if not isinstance(obj, list):
        raise DataFileError(f"{source}: expected a JSON list of reviews, got {type(obj).__name__}")
    for i, row in enumerate(obj):
        try:
            _object(row, "record")
            text(row, "asin", required=True)
            _reviews_list(row.get("reviews"), "reviews")
            scalar(row, "average_rating")
        except FieldError as err:
            label = product_label(i, row).replace("product", "record", 1)
            raise record_error(source, label, err) from None
    return obj


def products_list(obj: Any, source: str | Path) -> Sequence[Any]:
    """The products file holds a non-empty JSON list."""
    if not isinstance(obj, list):
        raise DataFileError(f"{source}: expected a JSON list of products, got {type(obj).__name__}")
    if not obj:
        raise DataFileError(f"{source}: the products file holds no products")
    return obj
