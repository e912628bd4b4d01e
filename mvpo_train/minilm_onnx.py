"""MiniLM on onnxruntime: ONNX exports of the frozen sentence encoder, made once, verified
against the PyTorch vectors and cached (docs/policies.md, "Where MiniLM runs").

Two exports, each in a folder of its own, one per batching of the ``onnx`` runtime
(:class:`~mvpo_train.segment_embedder.SegmentEmbedder`), both exported with torch's TorchScript
exporter (``dynamo=False``: it needs the ``onnx`` package but not ``onnxscript``) at opset
:data:`OPSET`, rows and tokens dynamic:

* the ids export (:data:`EXPORT_VERSION`, ``rows1``): word-piece ids (``[rows, tokens]``
  int64, ``[CLS] ... [SEP]``, no padding) to the mean-pooled, unit-length embeddings
  ``[rows, dim]``: the computation of the PyTorch runtime. Runs recorded with ``rows1`` resume
  on it bit for bit, so it is never changed in place.
* the masked export (:data:`MASKED_EXPORT_VERSION`, ``pad8xdyn``): ids and an
  ``attention_mask``, the mean over the unmasked tokens. :func:`padded_encode` pads a text of
  ``n`` word pieces to ``n + 2`` tokens rounded up to :data:`PAD_MULTIPLE` and puts every text
  of one padded length of a call in one pass of at least 2 rows (a lone text doubled) and at
  most :data:`DYNAMIC_CAP` (more go in chunks of sizes as even as possible, so none has one
  row). On onnxruntime a text's vector is then the same bits in a pass of any row count >= 2
  whatever its neighbours (a one-row pass takes another kernel and differs):
  ``benchmarks/results/embedding_batching.md``.

**Cached, verified, not trusted.** An export lives in
``$MVPO_CACHE_DIR/minilm-onnx/<encoder SHA-256[:16]>-v<EXPORT_VERSION>/`` (the masked one in
``...-masked-v<MASKED_EXPORT_VERSION>/``; default ``~/.cache/mvpo``), a folder written by
:func:`mvpo_envs.cache_files.build_into` with a manifest of each file's size and SHA-256 and
opened by :func:`~mvpo_envs.cache_files.open_verified` (digests checked at every open): a
damaged export is one warning line and rebuilt once, and a second failure one
:class:`~mvpo_envs.cache_files.CacheError` line, never used.

**Checked at build.** Before the folder is renamed into place, the new export embeds
:data:`CHECK_TEXTS` (ALFWorld-like sentences) and seeded random id sequences of up to 256 word
pieces, and its vectors are compared with PyTorch's: the ids export each text in a pass of its
own (the ``rows1`` batching) and in PyTorch's 8-row passes of short texts (each in the same
pass shape), the masked export each text in its padded pass (doubled) against PyTorch's
unpadded one-row pass. A largest absolute difference above :data:`TOLERANCE` refuses the
export (:class:`OnnxExportError`, one line; nothing is cached). The masked export is also
checked for row counts (:func:`check_row_counts`): the vector of each of several check texts in
passes of every row count of :data:`CHECK_ROWS` among random neighbours of its padded length
must equal its vector in the 2-row pass bit for bit, else it is refused the same way. The
measured difference is written to ``export.json`` (about 3e-7 on an x86 CPU).

**Threads.** A session's intra-op threads are torch's thread count when it is made (the
trainer's ``--threads``), one inter-op thread, and waiting threads sleep instead of spinning
(the trainer's passive OpenMP policy, :mod:`mvpo_train.threads`).
"""

from __future__ import annotations

import json
import random
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = [
    "CHECK_ROWS",
    "CHECK_TEXTS",
    "DYNAMIC_CAP",
    "EXPORT_VERSION",
    "MASKED_EXPORT_VERSION",
    "OPSET",
    "PAD_MULTIPLE",
    "TOLERANCE",
    "OnnxEncoder",
    "OnnxExportError",
    "check_batches",
    "check_row_counts",
    "check_seqs",
    "chunk_sizes",
    "export_folder",
    "onnx_available",
    "open_export",
    "open_masked_export",
    "padded_encode",
    "padded_length",
    "write_masked_model",
]

#: the ONNX opset of the export
OPSET = 17
#: bumped when the ids export's graph changes (a new folder; old ones are left alone)
EXPORT_VERSION = 2
#: bumped when the masked export's graph or build check changes (its own folders)
MASKED_EXPORT_VERSION = 1
#: the largest absolute difference from PyTorch's vectors an export may have at build
TOLERANCE = 1e-5
#: a padded pass's tokens are a multiple of this (``pad8xdyn``) ...
PAD_MULTIPLE = 8
#: ... and it has at most this many rows
DYNAMIC_CAP = 64
#: the row counts of the masked export's build check (each against the 2-row pass)
CHECK_ROWS = (2, 3, 5, 8, 16, 33, 64)
#: the row counts a session of several threads is checked on when it opens (the build's check
#: runs one thread; another thread count may split a pass's work by its rows)
THREAD_CHECK_ROWS = (3, 9, 33)
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
    """An ONNX export could not be made, differs from PyTorch beyond :data:`TOLERANCE` or
    (the masked one) gives a text other bits at another row count."""


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


def export_folder(fingerprint: str, root: Path | None = None, masked: bool = False) -> Path:
    """The cache folder of the (ids or ``masked``) export of the encoder with SHA-256
    ``fingerprint``."""
    from mvpo_envs.cache_files import cache_dir

    base = root if root is not None else cache_dir() / "minilm-onnx"
    kind = f"masked-v{MASKED_EXPORT_VERSION}" if masked else f"v{EXPORT_VERSION}"
    return base / f"{fingerprint[:16]}-{kind}"


class _Pooled(torch.nn.Module):
    """ids -> unit-length mean of the last hidden states (no padding: every mask is 1)."""

    def __init__(self, encoder: torch.nn.Module):
        super().__init__()
        self.encoder = encoder

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(input_ids=input_ids, attention_mask=torch.ones_like(input_ids))[0]
        return torch.nn.functional.normalize(hidden.mean(dim=1), dim=-1)


class _MaskedPooled(torch.nn.Module):
    """ids and attention mask -> unit-length mean of the unmasked tokens' last hidden states."""

    def __init__(self, encoder: torch.nn.Module):
        super().__init__()
        self.encoder = encoder

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask)[0]
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)


class OnnxEncoder:
    """An onnxruntime session of an export: ``encoder(ids)`` (the ids export) or
    ``encoder(ids, mask)`` (the masked one) -> ``[rows, dim]`` float32."""

    def __init__(self, path: Path, threads: int | None = None):
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(threads or torch.get_num_threads())
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.threads = opts.intra_op_num_threads
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])

    def __call__(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``mask``: the ``attention_mask`` input of the masked export (none for the ids one)."""
        feed = {"input_ids": ids.numpy().astype(np.int64, copy=False)}
        if mask is not None:
            feed["attention_mask"] = mask.numpy().astype(np.int64, copy=False)
        return torch.from_numpy(self.session.run(None, feed)[0])


# -- padded passes (the masked export) ----------------------------------------------------
def padded_length(n_tokens: int, multiple: int = PAD_MULTIPLE) -> int:
    """Tokens of the padded pass of a text of ``n_tokens`` word pieces ([CLS] and [SEP] too)."""
    return -(-(n_tokens + 2) // multiple) * multiple


def chunk_sizes(texts: int, cap: int = DYNAMIC_CAP) -> list[int]:
    """Rows of the dynamic passes of ``texts`` texts of one padded length: as few passes of at
    most ``cap`` as hold them, their sizes as even as possible (65 -> 33 + 32), so that no
    pass has a single text unless the call has one (its pass doubles it)."""
    if texts <= 0:
        return []
    passes = -(-texts // cap)
    return [texts // passes + (k < texts % passes) for k in range(passes)]


def padded_encode(
    session: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    texts: Sequence[tuple[int, ...]],
    cls_id: int,
    sep_id: int,
    multiple: int = PAD_MULTIPLE,
    rows: int = 0,
    cap: int = DYNAMIC_CAP,
) -> dict[str, Any]:
    """``texts`` (distinct id sequences) in padded passes ``[R, padded_length(n)]`` of the
    masked export ``session``, in the order given, padding tokens 0 and masked, the last text
    repeated as padding rows: with ``rows`` 0 (``pad8xdyn``) every text of one padded length
    in one pass of at least 2 rows (:func:`chunk_sizes`: at most ``cap``), else ``rows`` texts
    to a pass of ``rows`` rows (the fixed shapes ``benchmarks/embedding_batching.py``
    measures). The vectors, passes and tokens computed."""
    by_len: dict[int, list[tuple[int, ...]]] = {}
    for s in texts:
        by_len.setdefault(padded_length(len(s), multiple), []).append(s)
    out: dict[tuple[int, ...], torch.Tensor] = {}
    passes = tokens = 0
    for length, group in by_len.items():
        sizes = chunk_sizes(len(group), cap) if not rows else [rows] * -(-len(group) // rows)
        start = 0
        for size in sizes:
            part = group[start : start + size]
            start += len(part)
            n_rows = rows or max(2, len(part))
            ids = torch.zeros(n_rows, length, dtype=torch.long)
            for r, s in enumerate(part + [part[-1]] * (n_rows - len(part))):
                ids[r, : len(s) + 2] = torch.tensor([cls_id, *s, sep_id])
            vec = session(ids, (ids != 0).long())
            out.update(zip(part, vec[: len(part)], strict=True))
            passes, tokens = passes + 1, tokens + n_rows * length
    return {"vectors": out, "passes": passes, "tokens": tokens}


# -- the build checks -----------------------------------------------------------------------
def check_seqs(tokenize: Callable[[str], list[int]]) -> list[list[int]]:
    """The id sequences an export is checked on: :data:`CHECK_TEXTS` and seeded random ids of
    lengths 1..256."""
    rng = random.Random(0)
    seqs = [tokenize(t) for t in CHECK_TEXTS]
    seqs += [[rng.randrange(1000, 30000) for _ in range(n)] for n in (1, 5, 16, 17, 64, 256)]
    return [s for s in seqs if s]


def check_batches(cls_id: int, sep_id: int, rows_for: Callable[[int], int],
                  tokenize: Callable[[str], list[int]]) -> list[torch.Tensor]:  # fmt: skip
    """The id batches the ids export is checked on: :func:`check_seqs` each in a pass of its
    own (the ``rows1`` shape) and, where that differs, in the shape PyTorch's batching gives
    it (``rows_for``)."""
    return [torch.tensor([[cls_id, *s, sep_id]] * rows)
            for s in check_seqs(tokenize) for rows in sorted({1, rows_for(len(s))})]  # fmt: skip


def check_row_counts(
    session: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    seqs: Sequence[Sequence[int]],
    cls_id: int,
    sep_id: int,
    row_counts: Sequence[int] = CHECK_ROWS,
) -> str:
    """'' when each text of ``seqs`` gets, in dynamic padded passes (:func:`padded_encode`) of
    every row count of ``row_counts`` among seeded random neighbours of its padded length (at
    a row position that changes with the count), the bits of its 2-row pass (itself doubled);
    else the first text and row count that differ, in a few words."""
    rng = random.Random(1)
    for k, seq in enumerate(map(tuple, seqs)):
        length = padded_length(len(seq))
        bucket = [n for n in range(max(1, length - PAD_MULTIPLE - 1), length - 1)
                  if padded_length(n) == length]  # fmt: skip
        want = padded_encode(session, [seq], cls_id, sep_id)["vectors"][seq]
        for rows in row_counts:
            others = {tuple(rng.randrange(1000, 30000) for _ in range(rng.choice(bucket)))
                      for _ in range(rows - 1)} - {seq}  # fmt: skip
            batch = list(others)
            batch.insert(rows // 2 % (len(batch) + 1), seq)
            got = padded_encode(session, batch, cls_id, sep_id, cap=max(row_counts))
            if got["passes"] != 1 or not torch.equal(got["vectors"][seq], want):
                return f"check text {k} ({len(seq)} word pieces) in a pass of {len(batch)} rows"
    return ""


# -- building and opening ------------------------------------------------------------------
def _export(model: torch.nn.Module, example: tuple[torch.Tensor, ...], path: Path,
            inputs: list[str]) -> None:  # fmt: skip
    """``model`` exported to ``path`` (inputs ``[rows, tokens]``, output ``vectors``)."""
    axes: dict[str, dict[int, str]] = {name: {0: "rows", 1: "tokens"} for name in inputs}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(
            model, example, str(path), input_names=inputs, output_names=["vectors"],
            dynamic_axes={**axes, "vectors": {0: "rows"}}, opset_version=OPSET, dynamo=False,
        )  # fmt: skip


def _refuse(worst: float, hint: str) -> None:
    if not worst <= TOLERANCE:  # NaN refuses too
        raise OnnxExportError(
            f"the ONNX export of MiniLM differs from PyTorch by {worst:.3g} (> {TOLERANCE:g}); "
            f"{hint}"
        )


def _write_record(folder: Path, fingerprint: str, version: int, worst: float, **extra: Any) -> None:
    import onnxruntime

    record = {"encoder_sha256": fingerprint, "opset": OPSET, "version": version,
              "torch": torch.__version__, "onnxruntime": onnxruntime.__version__,
              "max_abs_diff": worst, "tolerance": TOLERANCE, **extra}  # fmt: skip
    (folder / RECORD_FILE).write_text(json.dumps(record, indent=1) + "\n")


def build_export(
    folder: Path,
    encoder: torch.nn.Module,
    fingerprint: str,
    batches: list[torch.Tensor],
) -> None:
    """Write the ids export's ``model.onnx`` and ``export.json`` into ``folder`` after checking
    it on ``batches`` against ``encoder`` (:class:`OnnxExportError` when it differs by more
    than :data:`TOLERANCE`)."""
    if reason := onnx_available():
        raise OnnxExportError(f"cannot export MiniLM to ONNX: {reason}")
    model = _Pooled(encoder).eval()
    path = folder / MODEL_FILE
    _export(model, (batches[0],), path, ["input_ids"])
    session = OnnxEncoder(path, threads=1)
    worst = 0.0
    with torch.no_grad():
        for ids in batches:
            worst = max(worst, float((session(ids) - model(ids)).abs().max()))
    _refuse(worst, "use --embedding-runtime torch")
    _write_record(folder, fingerprint, EXPORT_VERSION, worst, checked_batches=len(batches))


def write_masked_model(encoder: torch.nn.Module, path: Path) -> None:
    """The masked export of ``encoder`` written to ``path``, unchecked (the first step of
    :func:`build_masked_export`)."""
    example = torch.tensor([[101, 2000, 102, 0]] * 2)
    _export(_MaskedPooled(encoder).eval(), (example, (example != 0).long()), path,
            ["input_ids", "attention_mask"])  # fmt: skip


#: how a failed masked export says what to do
MASKED_HINT = "pass --embedding-batching rows1 (or --embedding-runtime torch)"


def build_masked_export(
    folder: Path,
    encoder: torch.nn.Module,
    fingerprint: str,
    seqs: list[list[int]],
    cls_id: int,
    sep_id: int,
) -> None:
    """Write the masked export's ``model.onnx`` and ``export.json`` into ``folder`` after
    checking it (module docstring): each of ``seqs`` in its padded pass against ``encoder``'s
    unpadded one-row pass, within :data:`TOLERANCE`, and the row counts of
    :func:`check_row_counts` on one of ``seqs`` per padded length up to 64 word pieces; else one
    :class:`OnnxExportError` line."""
    if reason := onnx_available():
        raise OnnxExportError(f"cannot export MiniLM to ONNX: {reason}")
    path = folder / MODEL_FILE
    write_masked_model(encoder, path)
    session = OnnxEncoder(path, threads=1)
    pooled = _Pooled(encoder).eval()
    padded = padded_encode(session, [tuple(s) for s in seqs], cls_id, sep_id)["vectors"]
    worst = 0.0
    with torch.no_grad():
        for s in seqs:
            ref = pooled(torch.tensor([[cls_id, *s, sep_id]]))[0]
            worst = max(worst, float((padded[tuple(s)] - ref).abs().max()))
    _refuse(worst, MASKED_HINT)
    # one text per padded length of at most 64 word pieces: the row count is what varies
    short = list({padded_length(len(s)): s for s in reversed(seqs) if len(s) <= 64}.values())
    if failed := check_row_counts(session, short, cls_id, sep_id):
        raise OnnxExportError(
            f"the masked ONNX export of MiniLM gives a text other bits at another row count "
            f"({failed}); {MASKED_HINT}"
        )
    _write_record(folder, fingerprint, MASKED_EXPORT_VERSION, worst, kind="masked",
                  checked_texts=len(seqs), row_counts=list(CHECK_ROWS),
                  row_checked_texts=len(short))  # fmt: skip


def _open(folder: Path, fingerprint: str, threads: int | None, version: int) -> OnnxEncoder:
    record: dict[str, Any] = json.loads((folder / RECORD_FILE).read_text())
    if record.get("encoder_sha256") != fingerprint or record.get("version") != version:
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
    """The verified ids export of the encoder ``fingerprint`` (built first when missing or
    damaged; module docstring). ``encoder()`` gives the PyTorch model and ``batches()`` the
    check batches, both only called for a build."""
    return _open_verified(
        export_folder(fingerprint, root),
        lambda tmp: build_export(tmp, encoder(), fingerprint, batches()),
        lambda f: _open(f, fingerprint, threads, EXPORT_VERSION),
        "MiniLM ONNX export",
    )


def open_masked_export(
    fingerprint: str,
    encoder: Callable[[], torch.nn.Module],
    seqs: Callable[[], list[list[int]]],
    cls_id: int,
    sep_id: int,
    *,
    root: Path | None = None,
    threads: int | None = None,
) -> OnnxEncoder:
    """The verified masked export of the encoder ``fingerprint`` (as :func:`open_export`;
    ``seqs()``: the check sequences, :func:`check_seqs`). A session of several threads is
    checked again when it opens, on two short check texts at :data:`THREAD_CHECK_ROWS` rows
    (a fraction of a second): the build checked one thread only; a difference is one
    :class:`OnnxExportError` line."""
    session = _open_verified(
        export_folder(fingerprint, root, masked=True),
        lambda tmp: build_masked_export(tmp, encoder(), fingerprint, seqs(), cls_id, sep_id),
        lambda f: _open(f, fingerprint, threads, MASKED_EXPORT_VERSION),
        "MiniLM masked ONNX export",
    )
    if session.threads > 1:
        short = [s for s in seqs() if len(s) <= 16][:2]
        if failed := check_row_counts(session, short, cls_id, sep_id, THREAD_CHECK_ROWS):
            raise OnnxExportError(
                f"the masked ONNX export of MiniLM gives a text other bits at another row "
                f"count with {session.threads} threads ({failed}); {MASKED_HINT}"
            )
    return session


def _open_verified(folder: Path, build: Callable[[Path], None],
                   open_: Callable[[Path], OnnxEncoder], what: str) -> OnnxEncoder:  # fmt: skip
    from mvpo_envs.cache_files import open_verified

    session, _ = open_verified(folder, build, open_, what, verify=True)
    return session
