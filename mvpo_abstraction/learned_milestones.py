"""Learned milestones: events proposed from rollouts, kept when they predict success.

docs/abstractions.md ("Learned milestones") documents the method and its knobs. In short, with
every observation mapped to a cluster id (the learned abstraction's k-means clusters):

1. **Propose** two kinds of events per episode: ``visit`` (the observation is in cluster ``c``)
   and ``move`` (the previous observation was in cluster ``a`` and this one is in ``b != a``).
   An event *occurs* in an episode with exactly the tracker's semantics
   (:class:`mvpo_abstraction.base.AbstractionTracker`): it fires at some step ``t >= 1`` and
   was not already true at ``reset`` (a milestone true at reset is never reported).
2. **Score** each event with at least ``min_support`` occurrences (and at least
   ``min_support`` episodes without it) by the difference of mean episode outcome (return)
   between episodes where it occurs and episodes where it does not, taking the ``quantile``
   of ``n_boot`` bootstrap resamples of the episodes (seeded, hence deterministic): a
   conservative lower bound that penalises rare, noisy events.
3. **Select** the ``top_k`` events with a positive score, best first (ties by name), skipping an
   event that occurs only in episodes where an already selected event occurs (a subset of its
   occurrences: it adds no information).

Names come from the content of the clusters, not from their ids: each cluster is named by its
medoid observation (the fitted text nearest the centroid), by :func:`cluster_label`: up to three
content words of its first sentence that is not boilerplate (a welcome banner, the help text's
command list, the task line, WebShop's instruction), e.g. ``visit:open-fridge-1`` or
``move:arrive-countertop-1>pick-up-apple``; a label two clusters share gets a short hash of its
text (``~1a2b``), see :func:`unique_labels`. So a refit on the same data (any order, any k-means
run that finds the same clusters) gives the same names, and AMP weights keyed by name carry over.

This module knows no environment: it sees cluster ids, texts and outcomes only.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

KINDS = ("visit", "move")


@dataclass(frozen=True)
class Event:
    """One learned milestone: ``visit`` of cluster ``dst`` or ``move`` from ``src`` to ``dst``."""

    name: str
    kind: str
    dst: int
    src: int = -1
    score: float = 0.0
    support: int = 0

    def fires(self, prev_cluster: int | None, cluster: int) -> bool:
        if self.kind == "visit":
            return cluster == self.dst
        return prev_cluster is not None and prev_cluster == self.src and cluster == self.dst

    def to_dict(self) -> dict:
        return asdict(self)


#: sentences (or ``[SEP]`` segments) that say nothing about the state: a banner, the help
#: text's header and command lines (``look:   look around ...``), the task line, WebShop's
#: ``Instruction:`` marker (the instruction after it is skipped too) and its page title
_BOILERPLATE = re.compile(
    r"^(-=.*=-|available commands:?|[a-z][\w ()<>\[\]/-]*:\s{2,}.*|your task is to:.*|"
    r"instruction:?|webshop|amazon shopping game)$",
    re.IGNORECASE,
)
#: words that carry no content in a label
_STOPWORDS = frozenset(
    "a an the you your to at of in on is are it its and or with for from this that there "
    "be i me we us our my see into by as what which here looking quickly around".split()
)
#: the label of a text that is all boilerplate (the help text)
BOILERPLATE_LABEL = "help"


def cluster_label(text: str, words: int = 3) -> str:
    """Short readable label of a cluster from its medoid text (module docstring): up to
    ``words`` content words of the first sentence that is not boilerplate, ``"help"`` when every
    sentence is (the help text), ``"empty"`` for a text without words."""
    skip_next = False
    for sentence in _sentences(text):
        if skip_next:  # the instruction after WebShop's "Instruction:" marker
            skip_next = False
            continue
        if _BOILERPLATE.match(sentence):
            skip_next = sentence.lower().rstrip(":") == "instruction"
            continue
        kept = [w for w in re.findall(r"[a-z0-9]+", sentence.lower()) if w not in _STOPWORDS]
        if kept:
            return "-".join(kept[:words])
    return BOILERPLATE_LABEL if re.search(r"[a-z0-9]", text.lower()) else "empty"


def _sentences(text: str) -> list[str]:
    """Lines, ``[SEP]`` segments and sentences of ``text``, stripped, empty ones dropped."""
    parts = []
    for line in re.split(r"\n|\[SEP\]", text):
        if _BOILERPLATE.match(line.strip()):  # a help line keeps its inner ". "
            parts.append(line.strip())
            continue
        parts += [p.strip() for p in re.split(r"(?<=[.!?])\s+", line)]
    return [p for p in parts if p]


def unique_labels(labels: Sequence[str], texts: Sequence[str]) -> list[str]:
    """``labels`` with ``~<4 hex of the text>`` added to each one that several texts share."""
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return [
        f"{label}~{hashlib.sha1(text.encode('utf-8')).hexdigest()[:4]}"
        if counts[label] > 1
        else label
        for label, text in zip(labels, texts, strict=True)
    ]


@dataclass
class MilestoneLearner:
    """Propose, score and select milestone events (module docstring; docs/abstractions.md)."""

    top_k: int = 5
    min_support: int = 3
    n_boot: int = 200
    quantile: float = 0.1
    kinds: tuple[str, ...] = KINDS
    seed: int = 0

    def __post_init__(self) -> None:
        if self.top_k < 1 or self.min_support < 1 or self.n_boot < 1:
            raise ValueError("top_k, min_support and n_boot must be >= 1")
        if not 0.0 < self.quantile < 1.0:
            raise ValueError(f"quantile must be in (0, 1), got {self.quantile}")
        unknown = set(self.kinds) - set(KINDS)
        if unknown or not self.kinds:
            raise ValueError(f"kinds must be a non-empty subset of {KINDS}, got {self.kinds}")

    def candidates(self, episodes: Sequence[Sequence[int]]) -> dict[tuple, np.ndarray]:
        """Event key ``(kind, src, dst)`` -> bool occurrence per episode (tracker semantics)."""
        occ: dict[tuple, np.ndarray] = {}
        n = len(episodes)
        for i, clusters in enumerate(episodes):
            if not len(clusters):
                continue
            start = int(clusters[0])
            seen: set[tuple] = set()
            for t in range(1, len(clusters)):
                a, b = int(clusters[t - 1]), int(clusters[t])
                if "visit" in self.kinds and b != start:
                    seen.add(("visit", -1, b))
                if "move" in self.kinds and a != b:
                    seen.add(("move", a, b))
            for key in seen:
                occ.setdefault(key, np.zeros(n, dtype=bool))[i] = True
        return occ

    def fit(
        self,
        episodes: Sequence[Sequence[int]],
        outcomes: Sequence[float],
        cluster_names: Sequence[str],
    ) -> list[Event]:
        """The selected events, best first. ``episodes[i]`` holds the cluster id of each
        observation of episode ``i`` (reset observation first); ``outcomes[i]`` its return."""
        y = np.asarray(outcomes, dtype=np.float64)
        if len(episodes) != len(y):
            raise ValueError(f"{len(episodes)} episodes but {len(y)} outcomes")
        if len(y) < 2 * self.min_support:
            raise ValueError(
                f"need at least 2*min_support={2 * self.min_support} episodes to score "
                f"milestones, got {len(y)}"
            )
        if np.ptp(y) == 0.0:
            raise ValueError(
                f"all {len(y)} episodes have the same outcome ({y[0]:g}): no event can predict "
                "success; use a policy that sometimes succeeds (the trainer's refit, docs/abstractions.md) "
                "or keep the rule milestones (--milestones rules)"
            )
        # a canonical episode order (by content, not position or cluster id): the bootstrap
        # resamples the same episodes whatever order they came in and however clusters are numbered
        order = sorted(
            range(len(y)), key=lambda i: ([cluster_names[int(c)] for c in episodes[i]], y[i])
        )
        episodes, y = [episodes[i] for i in order], y[order]
        occ = self.candidates(episodes)
        keys = sorted(
            k for k, v in occ.items() if self.min_support <= v.sum() <= len(y) - self.min_support
        )
        if not keys:
            return []
        matrix = np.stack([occ[k] for k in keys], axis=1).astype(np.float64)  # (n, E)
        scores = self._bootstrap_scores(matrix, y)
        named = [
            (float(s), _event_name(k, cluster_names), k, int(matrix[:, j].sum()), j)
            for j, (k, s) in enumerate(zip(keys, scores, strict=True))
        ]
        named.sort(key=lambda r: (-r[0], r[1]))
        chosen: list[Event] = []
        kept: list[np.ndarray] = []
        for score, name, (kind, src, dst), support, j in named:
            if score <= 0.0 or len(chosen) >= self.top_k:
                break
            pattern = matrix[:, j].astype(bool)
            if any(not (pattern & ~other).any() for other in kept):
                continue  # occurs only where a chosen event occurs: adds no information
            kept.append(pattern)
            chosen.append(Event(name, kind, int(dst), int(src), round(score, 6), support))
        return chosen

    def _bootstrap_scores(self, matrix: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``quantile`` over bootstrap resamples of ``mean(y | occurs) - mean(y | not)``."""
        n = len(y)
        rng = np.random.default_rng(self.seed)
        counts = np.stack(
            [np.bincount(rng.integers(0, n, size=n), minlength=n) for _ in range(self.n_boot)]
        ).astype(np.float64)  # (B, n)
        n_occ = counts @ matrix
        y_occ = (counts * y) @ matrix
        n_not = counts.sum(1, keepdims=True) - n_occ
        y_not = (counts @ y)[:, None] - y_occ
        with np.errstate(invalid="ignore", divide="ignore"):
            diff = y_occ / n_occ - y_not / n_not
        diff = np.where((n_occ > 0) & (n_not > 0), diff, np.nan)
        with warnings.catch_warnings():  # an event absent from every resample: score 0
            warnings.simplefilter("ignore", RuntimeWarning)
            out = np.nanquantile(diff, self.quantile, axis=0) if diff.size else np.zeros(0)
        return np.nan_to_num(out, nan=0.0)


def _event_name(key: tuple, cluster_names: Sequence[str]) -> str:
    kind, src, dst = key
    if kind == "visit":
        return f"visit:{cluster_names[dst]}"
    return f"move:{cluster_names[src]}>{cluster_names[dst]}"
