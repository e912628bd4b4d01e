"""Estimator variants named on a command line: ``NAME`` or ``NAME:key=value,...``
(docs/alignment.md, "Benchmark").

``parse_variant("mvpo:lambda_L=0,form=paper")`` gives ``("mvpo", {"lambda_L": 0, "form":
"paper"})``: each value is read as JSON when it parses (numbers, ``true``, quoted strings),
else kept as text. :func:`make_variant` builds the estimator from the registry
(:func:`mvpo_train.credit.get_estimator`), over an optional base config (a run's recorded
estimator config the variant overrides); :func:`recorded_variant` gives the estimator of a
variant for one of a run's batch records. A bad variant is a :class:`VariantError` whose one
line names the variant and what is wrong, raised before any rollout or replay.
"""

from __future__ import annotations

import json
from typing import Any

from mvpo_train.credit import get_estimator

__all__ = ["VariantError", "make_variant", "parse_variant", "recorded_variant"]


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


def recorded_variant(
    text: str, rec: Any, gamma: float, chained: dict[str, Any], state: str = "chained"
) -> Any:
    """The estimator of variant ``text`` for the batch record ``rec`` of a run
    (docs/alignment.md, "Relabelling a run after the fact": which state): over the trained
    estimator's recorded config and pre-call state when ``text`` names it; else with the run's
    ``gamma`` (dropped for an estimator without a discount), one estimator carried over the
    run's batches in order (``state="chained"``, kept in ``chained``) or a fresh one per
    batch (``"fresh"``)."""
    name, _ = parse_variant(text)
    if name == rec.estimator_name:
        est = make_variant(text, rec.estimator_config)
        if rec.estimator_state:
            try:
                est.load_state_dict(rec.estimator_state)
            except ValueError as err:
                raise VariantError(f"--variant {text!r}: {err}") from None
        return est
    if state == "chained" and text in chained:
        return chained[text]
    try:
        est = make_variant(text, {"gamma": gamma})
    except VariantError:
        est = make_variant(text)  # an estimator without a discount
    if state == "chained":
        chained[text] = est
    return est
