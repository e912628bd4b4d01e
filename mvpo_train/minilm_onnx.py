"""MiniLM on onnxruntime: an ONNX export of the frozen sentence encoder, made once, verified
against the PyTorch vectors and cached (docs/policies.md, "Where MiniLM runs").

The export is one graph from word-piece ids (``[rows, tokens]`` int64, ``[CLS] ... [SEP]``, no
padding) to the mean-pooled, unit-length embeddings ``[rows, dim]``: the computation of
:meth:`~mvpo_train.segment_embedder.SegmentEmbedder.encode` on the PyTorch runtime, exported
with torch's TorchScript exporter (``dynamo=False``: it needs the ``onnx`` package but not
``onnxscript``) at opset :data:`OPSET`, rows and tokens dynamic.

**Cached, verified, not trusted.** The export lives in
``$MVPO_CACHE_DIR/minilm-onnx/<encoder SHA-256[:16]>-v<EXPORT_VERSION>/`` (default
``~/.cache/mvpo``), a folder written by :func:`mvpo_envs.cache_files.build_into` with a manifest
of each file's size and SHA-256 and opened by :func:`~mvpo_envs.cache_files.open_verified`
(digests checked at every open): a damaged export is one warning line and rebuilt once, and a
second failure one :class:`~mvpo_envs.cache_files.CacheError` line, never used.

**Checked at build.** Before the folder is renamed into place, the new export embeds
:data:`CHECK_TEXTS` (ALFWorld-like sentences) and seeded random id sequences, each in a
pass of its own (the ``onnx`` runtime's batching) and in PyTorch's 8-row passes of short
texts, up to 258 tokens, and its vectors are compared with PyTorch's (each in the same pass
shape): a largest absolute difference above
:data:`TOLERANCE` refuses the export (:class:`OnnxExportError`, one line; nothing is cached).
The measured difference is written to ``export.json`` (about 3e-7 on an x86 CPU).

**Threads.** A session's intra-op threads are torch's thread count when it is made (the
trainer's ``--threads``), one inter-op thread, and waiting threads sleep instead of spinning
(the trainer's passive OpenMP policy, :mod:`mvpo_train.threads`).
"""

from __future__ import annotations

import json
import random
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = [
    "CHECK_TEXTS",
    "EXPORT_VERSION",
    "OPSET",
    "TOLERANCE",
    "OnnxEncoder",
    "check_batches",
    "OnnxExportError",
    "export_folder",
    "onnx_available",
    "open_export",
]

#: the ONNX opset of the export
OPSET = 17
#: bumped when the exported graph changes (a new folder; old ones are left alone)
EXPORT_VERSION = 2
#: the largest absolute difference from PyTorch's vectors an export may have at build
TOLERANCE = 1e-5
#: the model file and the build record inside an export folder
MODEL_FILE = "model.onnx"
RECORD_FILE = "export.json"
#: real texts of the kind the policies embed (tasks, observations, actions), checked at build
CHECK_TEXTS = (
    "Your task is to: put a clean apple in the fridge.",
    "You are in the middle of a room. Looking quickly around you, you see a cabinet 6, a "
    "cabinet 5, a cabinet 4, a cabinet 3, a cabinet 2, a cabinet 1, a coffeemachine 1, a "
    "countertop 3, a countertop 2, a countertop 1, a diningtable 1, a drawer 2, a drawer 1, a "
    "fridge 1, a garbagecan 1, a microwave 1, a shelf 3, a shelf 2, a shelf 1, a sinkbasin 1, "
    "a stoveburner 4, a stoveburner 3, a stoveburner 2, a stoveburner 1, and a toaster 1.",
    "go to countertop 1",
    "take apple 1 from countertop 1",
    "You arrive at countertop 1. On the countertop 1, you see a apple 1, a bread 1, and a knife 2.",
    "Nothing happens.",
    "clean apple 1 with sinkbasin 1",
    "search[ 3 ounce bottle of bright citrus deodorant for sensitive skin ]",
)


class OnnxExportError(RuntimeError):
    """The ONNX export could not be made or differs from PyTorch beyond :data:`TOLERANCE`."""


def onnx_available() -> str:
    """'' when the ONNX runtime can be used (``onnxruntime`` imports; ``onnx`` too, which
    the export needs), else the reason in a few words."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return "onnxruntime is not installed"
    try:
        import onnx  # noqa: F401
    except ImportError:
        return "onnx (needed to export the encoder) is not installed"
    return ""


def export_folder(fingerprint: str, root: Path | None = None) -> Path:
    """The cache folder of the export of the encoder with SHA-256 ``fingerprint``."""
    from mvpo_envs.cache_files import cache_dir

    base = root if root is not None else cache_dir() / "minilm-onnx"
    return base / f"{fingerprint[:16]}-v{EXPORT_VERSION}"


class _Pooled(torch.nn.Module):
    """ids -> unit-length mean of the last hidden states (no padding: every mask is 1)."""

    def __init__(self, encoder: torch.nn.Module):
        super().__init__()
        self.encoder = encoder

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(input_ids=input_ids, attention_mask=torch.ones_like(input_ids))[0]
        return torch.nn.functional.normalize(hidden.mean(dim=1), dim=-1)


class OnnxEncoder:
    """An onnxruntime session of an export: ``encoder(ids)`` -> ``[rows, dim]`` float32."""

    def __init__(self, path: Path, threads: int | None = None):
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(threads or torch.get_num_threads())
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.threads = opts.intra_op_num_threads
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])

    def __call__(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``mask``: the ``attention_mask`` input, for an export that takes one (the padded
        passes ``benchmarks/embedding_batching.py`` measures); the project's export has none."""
        feed = {"input_ids": ids.numpy().astype(np.int64, copy=False)}
        if mask is not None:
            feed["attention_mask"] = mask.numpy().astype(np.int64, copy=False)
        return torch.from_numpy(self.session.run(None, feed)[0])


def check_batches(cls_id: int, sep_id: int, rows_for: Callable[[int], int],
                   tokenize: Callable[[str], list[int]]) -> list[torch.Tensor]:  # fmt: skip
    """The id batches an export is checked on: :data:`CHECK_TEXTS` and seeded random ids
    of lengths 1..256, each in a pass of its own (the ``onnx`` runtime's shape) and, where
    that differs, in the shape PyTorch's batching gives it (``rows_for``)."""
    rng = random.Random(0)
    seqs = [tokenize(t) for t in CHECK_TEXTS]
    seqs += [[rng.randrange(1000, 30000) for _ in range(n)] for n in (1, 5, 16, 17, 64, 256)]
    return [torch.tensor([[cls_id, *s, sep_id]] * rows)
            for s in seqs if s for rows in sorted({1, rows_for(len(s))})]  # fmt: skip


def build_export(
    folder: Path,
    encoder: torch.nn.Module,
    fingerprint: str,
    batches: list[torch.Tensor],
) -> None:
    """Write ``model.onnx`` and ``export.json`` into ``folder`` after checking the export on
    ``batches`` against ``encoder`` (:class:`OnnxExportError` when it differs by more than
    :data:`TOLERANCE`)."""
    if reason := onnx_available():
        raise OnnxExportError(f"cannot export MiniLM to ONNX: {reason}")
    model = _Pooled(encoder).eval()
    path = folder / MODEL_FILE
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(
            model, (batches[0],), str(path), input_names=["input_ids"], output_names=["vectors"],
            dynamic_axes={"input_ids": {0: "rows", 1: "tokens"}, "vectors": {0: "rows"}},
            opset_version=OPSET, dynamo=False,
        )  # fmt: skip
    session = OnnxEncoder(path, threads=1)
    worst = 0.0
    with torch.no_grad():
        for ids in batches:
            worst = max(worst, float((session(ids) - model(ids)).abs().max()))
    if not worst <= TOLERANCE:  # NaN refuses too
        raise OnnxExportError(
            f"the ONNX export of MiniLM differs from PyTorch by {worst:.3g} (> {TOLERANCE:g}); "
            "use --embedding-runtime torch"
        )
    import onnxruntime

    record = {"encoder_sha256": fingerprint, "opset": OPSET, "version": EXPORT_VERSION,
              "torch": torch.__version__, "onnxruntime": onnxruntime.__version__,
              "max_abs_diff": worst, "tolerance": TOLERANCE, "checked_batches": len(batches)}  # fmt: skip
    (folder / RECORD_FILE).write_text(json.dumps(record, indent=1) + "\n")


def _open(folder: Path, fingerprint: str, threads: int | None) -> OnnxEncoder:
    record: dict[str, Any] = json.loads((folder / RECORD_FILE).read_text())
    if record.get("encoder_sha256") != fingerprint or record.get("version") != EXPORT_VERSION:
        raise ValueError(f"{folder / RECORD_FILE} records another encoder or export version")
    return OnnxEncoder(folder / MODEL_FILE, threads)


def open_export(
    fingerprint: str,
    encoder: Callable[[], torch.nn.Module],
    batches: Callable[[], list[torch.Tensor]],
    *,
    root: Path | None = None,
    threads: int | None = None,
) -> OnnxEncoder:
    """The verified export of the encoder ``fingerprint`` (built first when missing or
    damaged; module docstring). ``encoder()`` gives the PyTorch model and ``batches()`` the
    check batches, both only called for a build."""
    from mvpo_envs.cache_files import open_verified

    folder = export_folder(fingerprint, root)
    session, _ = open_verified(
        folder,
        lambda tmp: build_export(tmp, encoder(), fingerprint, batches()),
        lambda f: _open(f, fingerprint, threads),
        "MiniLM ONNX export",
        verify=True,
    )
    return session
