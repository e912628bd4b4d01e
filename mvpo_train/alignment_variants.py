"""Estimator variants named on a command line: ``NAME`` or ``NAME:key=value,...``
(docs/alignment.md, "Benchmark").

``parse_variant("mvpo:lambda_L=0,form=paper")`` gives ``("mvpo", {"lambda_L": 0, "form":
"paper"})``: each value is read as JSON when it parses (numbers, ``true``, quoted strings),
else kept as text. :func:`make_variant` builds the estimator from the registry
(:func:`mvpo_train.credit.get_estimator`), over an optional base config (a run's recorded
estimator config the variant overrides). A bad variant is a :class:`VariantError` whose one
line names the variant and what is wrong, raised before any rollout or replay.
"""

from __future__ import annotations

import json
from typing import Any

from mvpo_train.credit import get_estimator

__all__ = ["VariantError", "make_variant", "parse_variant"]


class VariantError(ValueError):
    """A bad command-line value (printed in one line; the benchmarks exit 2)."""


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    """``"mvpo:lambda_L=0,form=paper"`` -> ``("mvpo", {"lambda_L": 0, "form": "paper"})``."""
    name, _, rest = text.partition(":")
    name = name.strip()
    if not name:
        raise VariantError(f"--variant {text!r}: no estimator name")
    kwargs: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise VariantError(f"--variant {text!r}: {part!r} is not key=value")
        try:
            kwargs[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key.strip()] = value.strip()
    return name, kwargs


def make_variant(text: str, base: dict[str, Any] | None = None) -> Any:
    """A new estimator for a variant (``base``: a recorded config it overrides)."""
    name, kwargs = parse_variant(text)
    try:
        return get_estimator(name, **{**(base or {}), **kwargs})
    except (KeyError, TypeError, ValueError) as err:
        msg = err.args[0] if err.args else str(err)
        raise VariantError(f"--variant {text!r}: {msg}") from None
