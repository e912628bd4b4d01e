"""The arms of a study given on the command line: ``[NAME=]ESTIMATOR[:KEY=VALUE,...]`` (or
``...:{JSON object}``) -> :class:`Arm`, a name (its run folders) and the estimator with its
keywords (``benchmarks/control_study.py --arm``; docs/control_task.md). The estimator and the
keywords are checked by the trainer's config when a run starts."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Arm", "StudyError", "parse_arm", "parse_arms", "parse_pair"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class StudyError(ValueError):
    """Bad input to the study (a spec, a run folder made with other settings): one line."""


@dataclass(frozen=True)
class Arm:
    """One arm: a name (its run folders) and the estimator with its keywords."""

    name: str
    estimator: str
    kwargs: dict[str, Any] = field(default_factory=dict)

    def flags(self) -> list[str]:
        out = ["--estimator", self.estimator]
        if self.kwargs:
            out += ["--estimator-kwargs", json.dumps(self.kwargs, sort_keys=True)]
        return out

    def spec(self) -> dict[str, Any]:
        return {"estimator": self.estimator, "estimator_kwargs": dict(self.kwargs)}


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_arm(spec: str) -> Arm:
    """``ESTIMATOR``, ``NAME=ESTIMATOR`` or ``[NAME=]ESTIMATOR:KEY=VALUE[,KEY=VALUE]`` (or
    ``...:{JSON object}``) -> :class:`Arm`; the estimator and keywords are checked by the
    trainer's config when the run starts. Raises :class:`StudyError` naming the spec."""
    head, sep, rest = spec.partition(":")
    name, eq, estimator = head.partition("=")
    if not eq:
        name, estimator = "", head
    estimator = estimator.strip()
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", estimator):
        raise StudyError(f"--arm {spec!r}: expected [NAME=]ESTIMATOR[:KEY=VALUE,...], "
                         f"estimator {estimator!r} is not a name")  # fmt: skip
    kwargs: dict[str, Any] = {}
    rest = rest.strip()
    if sep and rest.startswith("{"):
        try:
            kwargs = json.loads(rest)
        except json.JSONDecodeError as err:
            raise StudyError(f"--arm {spec!r}: keywords are not a JSON object: {err}") from None
        if not isinstance(kwargs, dict):
            raise StudyError(f"--arm {spec!r}: keywords are not a JSON object")
    elif sep:
        for part in rest.split(","):
            key, eq2, value = part.partition("=")
            if not eq2 or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key.strip()):
                raise StudyError(f"--arm {spec!r}: expected KEY=VALUE, got {part!r}")
            kwargs[key.strip()] = _value(value.strip())
    if not name:
        tail = "-".join(f"{k}-{v}" for k, v in sorted(kwargs.items()))
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{estimator}-{tail}" if tail else estimator)
    if not _NAME.fullmatch(name):
        raise StudyError(f"--arm {spec!r}: arm name {name!r}: use letters, digits, . _ -")
    return Arm(name, estimator, kwargs)


def parse_arms(specs: list[str]) -> list[Arm]:
    arms = [parse_arm(s) for s in specs]
    names = [a.name for a in arms]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise StudyError(f"--arm: the arm name(s) {dup} are given twice; name them NAME=...")
    return arms


def parse_pair(spec: str) -> tuple[str, str]:
    """``A:B``, a paired difference ``A - B`` of two arm names."""
    a, sep, b = spec.partition(":")
    if not sep or not a or not b:
        raise StudyError(f"--pair {spec!r}: expected A:B (arm names)")
    return a, b
