"""Checkpoints that a killed run resumes from bit for bit, verified before they are used.

docs/training.md ("Checkpoints and resume", "Reliability"). A checkpoint is a folder
``run_dir/checkpoints/iter-000012/`` holding

* ``model.safetensors`` (+ ``config.json`` + the tokenizer files): the policy
  (``save_pretrained``; the folder loads with ``AutoModelForCausalLM.from_pretrained``); a LoRA
  run (``lora_rank > 0``) holds its adapters only instead, ``adapter_model.safetensors`` +
  ``adapter_config.json`` (:mod:`mvpo_train.lora`; ``PeftModel.from_pretrained`` reads them);
* ``optimizer.pt``: the optimizer state (tensors and numbers only);
* ``rng.json`` + ``rng.pt``: the RNG states: Python ``random``, NumPy's global state, torch's
  CPU (and CUDA) state, and the trainer's own generators (task sampler, action sampler,
  minibatch order); the torch states are tensors in ``rng.pt``, the rest is JSON;
* ``state.json``: iteration, estimator state (MVPO's EMA + AMP weights), the config, and the
  number of metrics lines written;
* ``SHA256SUMS``: the SHA-256 of every other file (``sha256sum -c SHA256SUMS`` checks it), written
  last: a folder without it is incomplete.

Nothing is unpickled: ``.pt`` files load with ``torch.load(..., weights_only=True)``.

Writes are atomic: everything goes to ``iter-000012.tmp-<pid>/`` first, which is renamed to
``iter-000012/`` only when complete; then the ``LATEST`` pointer file is replaced with
``os.replace``. A kill at any moment leaves the previous checkpoint intact and ``LATEST``
pointing at a complete folder. Old checkpoints are pruned by iteration number; the one just
written is never pruned. A write that fails (a full disk, a file-size limit) removes its
temporary folder and, when storage ran out, is one :class:`StorageFullError` line naming the
intact previous checkpoint.

Verification reads only inside the folder: every ``SHA256SUMS`` entry must be a plain relative
path (no ``..``, not absolute, no symbolic link on the way), every file of the folder must be
listed, and a checkpoint folder or file that is a symbolic link is refused. A checkpoint set
aside is never deleted: :func:`keep_aside` picks a free ``iter-K.corrupt`` / ``.corrupt-2`` ...
name.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import random
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mvpo_train.atomic_write import write_text_atomic

__all__ = [
    "ADAPTER_CONFIG",
    "ADAPTER_WEIGHTS",
    "LATEST",
    "SUMS",
    "CheckpointError",
    "StorageFullError",
    "capture_rng",
    "complete_checkpoints",
    "find_intact_checkpoint",
    "keep_aside",
    "latest_checkpoint",
    "load_adapters",
    "load_checkpoint",
    "load_model_weights",
    "remove_stale_temporaries",
    "restore_rng",
    "save_adapters",
    "save_checkpoint",
    "storage_full_reason",
    "verify_checkpoint",
]

LATEST = "LATEST"
SUMS = "SHA256SUMS"
_NAME = re.compile(r"iter-(\d+)")
_SUM_LINE = re.compile(r"([0-9a-f]{64})  (\S(?:.*\S)?)")
_TMP_NAME = re.compile(r"iter-\d+\.tmp-\d+")
#: how torch / safetensors / the OS word "the disk is full" or "the file-size limit is reached"
_FULL = re.compile(
    r"No space left|File too large|Disk quota|file write failed|unexpected pos|"
    r"os error (?:27|28|122)\b",
    re.IGNORECASE,
)


class CheckpointError(RuntimeError):
    """A checkpoint file is missing, corrupt or unreadable; the message names the file."""


class StorageFullError(CheckpointError):
    """Storage ran out (full disk, quota, file-size limit) while the run wrote a file; the
    message names the file and what is still intact (docs/training.md, "Reliability")."""


def storage_full_reason(err: BaseException) -> str | None:
    """``"No space left on device"``-like text when ``err`` means storage ran out, else None
    (torch reports it as ``RuntimeError: [enforce fail at inline_container.cc...]``,
    safetensors as ``I/O error ... (os error 28)``)."""
    if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        return err.strerror or os.strerror(err.errno)
    text = " ".join(str(err).split())
    if _FULL.search(text):
        for code in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
            if os.strerror(code).lower() in text.lower():
                return os.strerror(code)
        return text[:80] + "..." if len(text) > 80 else text
    return None


# ================================================================== RNG states


def capture_rng(generators: dict[str, Any]) -> dict[str, Any]:
    """Global RNG states plus named ``torch.Generator`` / ``np.random.Generator`` objects,
    as JSON values and tensors only (so the checkpoint needs no pickle)."""
    version, words, gauss = random.getstate()
    np_state = np.random.get_state(legacy=False)
    out: dict[str, Any] = {
        "python": {"version": version, "state": list(words), "gauss": gauss},
        "numpy": {
            **np_state,
            "state": {**np_state["state"], "key": np_state["state"]["key"].tolist()},
        },
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        "generators": {},
    }
    for name, g in generators.items():
        if isinstance(g, torch.Generator):
            out["generators"][name] = {"kind": "torch", "state": g.get_state()}
        else:
            out["generators"][name] = {"kind": "numpy", "state": g.bit_generator.state}
    return out


def restore_rng(state: dict[str, Any], generators: dict[str, Any]) -> None:
    """Restore :func:`capture_rng` (also after a JSON round trip)."""
    py = state["python"]
    random.setstate((py["version"], tuple(py["state"]), py["gauss"]))
    np_state = dict(state["numpy"])
    np_state["state"] = {
        **np_state["state"],
        "key": np.asarray(np_state["state"]["key"], dtype=np.uint32),
    }
    np.random.set_state(np_state)
    torch.set_rng_state(state["torch"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    for name, g in generators.items():
        entry = state["generators"][name]
        if entry["kind"] == "torch":
            g.set_state(entry["state"])
        else:
            g.bit_generator.state = entry["state"]


def _split_tensors(obj: Any, tensors: dict[str, torch.Tensor], key: str) -> Any:
    """``obj`` with every tensor replaced by ``{"__tensor__": key}`` (collected in ``tensors``)."""
    if isinstance(obj, torch.Tensor):
        tensors[key] = obj.detach().cpu().contiguous()
        return {"__tensor__": key}
    if isinstance(obj, dict):
        return {k: _split_tensors(v, tensors, f"{key}/{k}") for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_split_tensors(v, tensors, f"{key}/{i}") for i, v in enumerate(obj)]
    return obj


def _join_tensors(obj: Any, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(obj, dict):
        if set(obj) == {"__tensor__"}:
            return tensors[obj["__tensor__"]]
        return {k: _join_tensors(v, tensors) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_join_tensors(v, tensors) for v in obj]
    return obj


# ================================================================== writing


def _sha256(path: Path, fsync: bool = False) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
        if fsync:  # on disk before SHA256SUMS says the folder is complete
            os.fsync(fh.fileno())
    return h.hexdigest()


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file in folder ``path`` durable (best effort: some file
    systems cannot open or sync a folder)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    """Remove a file, a symbolic link (never followed) or a folder tree."""
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def keep_aside(path: str | Path, suffix: str = ".corrupt") -> Path:
    """Rename ``path`` to the first free ``<name><suffix>``, ``<name><suffix>-2``, ... (an
    existing name, a symbolic link included, is never replaced or followed); the new path."""
    path = Path(path)
    n = 1
    while True:
        target = path.with_name(f"{path.name}{suffix}" + (f"-{n}" if n > 1 else ""))
        if not os.path.lexists(target):
            os.rename(path, target)
            return target
        n += 1


def _iteration_of(path: Path) -> int | None:
    m = _NAME.fullmatch(path.name)
    return int(m.group(1)) if m else None


def complete_checkpoints(run_dir: str | Path) -> list[tuple[int, Path]]:
    """``(iteration, folder)`` of every complete checkpoint (has ``SHA256SUMS``), sorted by
    iteration number (not by name)."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    found = [(_iteration_of(p), p) for p in root.iterdir() if p.is_dir() and not p.is_symlink()]
    return sorted((it, p) for it, p in found if it is not None and (p / SUMS).is_file())


def remove_stale_temporaries(run_dir: str | Path, keep: Path | None = None) -> None:
    """Remove half-written ``iter-*.tmp-<pid>/`` folders and ``LATEST.tmp-<pid>`` files that
    a killed process left (except ``keep``)."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return
    for stale in root.glob("iter-*.tmp-*"):
        if stale != keep and _TMP_NAME.fullmatch(stale.name):
            _remove(stale)
    for stale in root.glob(f"{LATEST}.tmp-*"):
        if not stale.is_dir() or stale.is_symlink():
            stale.unlink(missing_ok=True)


def save_checkpoint(
    run_dir: str | Path,
    iteration: int,
    model: Any,
    optimizer: torch.optim.Optimizer,
    rng: dict[str, Any],
    state: dict[str, Any],
    keep: int = 2,
    tokenizer: Any = None,
) -> Path:
    """Write checkpoint ``iteration`` atomically with its checksums; keep the newest ``keep``.

    With ``tokenizer`` the folder is also a complete model folder for ``from_pretrained``.
    Pruning is by iteration number and never removes the checkpoint just written.
    """
    root = Path(run_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    name = f"iter-{iteration:06d}"
    final = root / name
    tmp = root / f"{name}.tmp-{os.getpid()}"
    try:
        _write_folder(tmp, model, optimizer, rng, {"iteration": iteration, **state}, tokenizer)
        if os.path.lexists(final):  # e.g. written after LATEST's target, before a kill
            _remove(final)  # a symbolic link is removed, never followed
        os.replace(tmp, final)
        fsync_dir(root)
        write_text_atomic(root / LATEST, name + "\n")
    except BaseException as err:
        _remove(tmp)
        reason = storage_full_reason(err) if isinstance(err, Exception) else None
        if reason is None:
            raise
        prev = latest_checkpoint(run_dir)
        kept = f"previous checkpoint {prev.name} intact" if prev else "no earlier checkpoint"
        raise StorageFullError(
            f"no space left writing checkpoint {final} ({reason}); {kept}; free space and "
            "rerun with --resume"
        ) from None
    older = [p for it, p in complete_checkpoints(run_dir) if it < iteration]
    for old in older[: max(len(older) - (max(keep, 1) - 1), 0)]:
        shutil.rmtree(old, ignore_errors=True)
    remove_stale_temporaries(run_dir)
    return final


def _write_folder(
    tmp: Path,
    model: Any,
    optimizer: Any,
    rng: dict[str, Any],
    state: dict[str, Any],
    tokenizer: Any,
) -> None:
    """Every file of a checkpoint into ``tmp`` (made afresh), ``SHA256SUMS`` last."""
    if os.path.lexists(tmp):
        _remove(tmp)
    tmp.mkdir()
    if _is_lora(model):  # the adapters only; state.json names the base (mvpo_train.lora)
        save_adapters(model, tmp)
    else:
        model.save_pretrained(tmp, safe_serialization=True)
    if tokenizer is not None:
        tokenizer.save_pretrained(tmp)
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    tensors: dict[str, torch.Tensor] = {}
    rng_json = _split_tensors(rng, tensors, "rng")
    torch.save(tensors, tmp / "rng.pt")
    (tmp / "rng.json").write_text(json.dumps(rng_json))
    (tmp / "state.json").write_text(json.dumps(state, indent=1, sort_keys=True))
    files = sorted(p for p in tmp.rglob("*") if p.is_file())
    sums = "".join(f"{_sha256(p, fsync=True)}  {p.relative_to(tmp).as_posix()}\n" for p in files)
    with open(tmp / SUMS, "w") as fh:  # written last: its presence marks a complete folder
        fh.write(sums)
        fh.flush()
        os.fsync(fh.fileno())


# ================================================================== finding and verifying


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The complete folder ``LATEST`` points at, else the newest complete one, else None
    (not verified: see :func:`find_intact_checkpoint`)."""
    root = Path(run_dir) / "checkpoints"
    pointer = root / LATEST
    try:
        target = pointer.read_text().strip() if pointer.is_file() else ""
    except (OSError, UnicodeDecodeError):
        target = ""  # an unreadable pointer: fall back to the newest complete folder
    if _NAME.fullmatch(target):  # a plain name inside checkpoints/, nothing else
        cand = root / target
        if cand.is_dir() and not cand.is_symlink() and (cand / SUMS).is_file():
            return cand
    done = complete_checkpoints(run_dir)
    return done[-1][1] if done else None


def verify_checkpoint(path: str | Path) -> None:
    """Check every file of a checkpoint against ``SHA256SUMS``; raises
    :class:`CheckpointError` naming the first bad file or entry.

    Reads only inside ``path``: an entry that is not a plain relative path inside the folder
    (``..``, absolute, through a symbolic link), a symbolic link in the folder and a file the
    list leaves out are refused, so the checksums cover exactly the files a resume loads.
    """
    path = Path(path)
    sums_file = path / SUMS
    if path.is_symlink():
        raise CheckpointError(f"{path}: is a symbolic link (a checkpoint is a plain folder)")
    try:
        if sums_file.is_symlink():
            raise CheckpointError(f"{sums_file}: is a symbolic link (expected a plain file)")
        lines = sums_file.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise CheckpointError(f"{sums_file}: unreadable ({type(err).__name__})") from None
    listed: dict[str, str] = {}
    for n, line in enumerate(lines, 1):
        m = _SUM_LINE.fullmatch(line)
        if not m:
            raise CheckpointError(f"{sums_file}: malformed line {n}")
        rel = m.group(2)
        parts = rel.split("/")
        if rel.startswith("/") or "\\" in rel or any(p in ("", ".", "..") for p in parts):
            raise CheckpointError(
                f"{sums_file}: line {n} lists {rel!r}, which is not a plain file name inside "
                "the checkpoint folder"
            )
        if rel in listed or rel == SUMS:
            raise CheckpointError(f"{sums_file}: line {n} lists {rel!r} twice")
        listed[rel] = m.group(1)
    has_model = any(
        name in listed
        for name in (
            "model.safetensors",
            "model.safetensors.index.json",
            "adapter_model.safetensors",
        )
    )
    for required in ("optimizer.pt", "rng.pt", "rng.json", "state.json"):
        if required not in listed:
            raise CheckpointError(f"{sums_file}: does not list {required}")
    if not has_model:
        raise CheckpointError(f"{sums_file}: does not list model.safetensors")
    if "adapter_model.safetensors" in listed and "adapter_config.json" not in listed:
        raise CheckpointError(f"{sums_file}: does not list adapter_config.json")
    for dirpath, dirnames, filenames in os.walk(path):  # symbolic links are not followed
        here = Path(dirpath)
        for name in sorted(dirnames + filenames):
            f = here / name
            rel = f.relative_to(path).as_posix()
            if f.is_symlink():
                raise CheckpointError(f"{f}: is a symbolic link (a checkpoint holds plain files)")
            if name in filenames and rel != SUMS and rel not in listed:
                raise CheckpointError(f"{f}: not listed in {SUMS} (a file nobody checked)")
    for rel, digest in listed.items():
        f = path / rel
        if not f.is_file():
            raise CheckpointError(f"{f}: missing")
        if _sha256(f) != digest:
            raise CheckpointError(f"{f}: checksum mismatch (file is corrupt)")


def find_intact_checkpoint(run_dir: str | Path) -> tuple[Path | None, list[tuple[Path, str]]]:
    """The newest checkpoint that passes :func:`verify_checkpoint`, and the ``(folder,
    reason)`` of each newer one that failed. A complete folder newer than ``LATEST``'s target
    (a kill between the folder's rename and the pointer's update) is the run's newest state:
    its metrics row is already written, so it is preferred to the pointer."""
    candidates = [p for _, p in reversed(complete_checkpoints(run_dir))]
    skipped: list[tuple[Path, str]] = []
    for cand in candidates:
        try:
            verify_checkpoint(cand)
        except CheckpointError as err:
            skipped.append((cand, str(err)))
            continue
        return cand, skipped
    return None, skipped


# ================================================================== loading


def load_checkpoint(path: str | Path, *, verify: bool = True) -> dict[str, Any]:
    """``{"state": ..., "rng": ..., "optimizer": ..., "model_dir": path}``, checksums checked
    first (``verify``); every failure is a :class:`CheckpointError` naming the file."""
    path = Path(path)
    if verify:
        verify_checkpoint(path)

    def read_json(name: str) -> Any:
        try:
            return json.loads((path / name).read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise CheckpointError(f"{path / name}: unreadable ({type(err).__name__})") from None

    def read_tensors(name: str) -> Any:
        try:
            return torch.load(path / name, map_location="cpu", weights_only=True)
        except Exception as err:  # torch raises many types for a bad file
            msg = str(err).strip().splitlines()[0][:120] if str(err).strip() else ""
            raise CheckpointError(
                f"{path / name}: unreadable ({type(err).__name__}{': ' + msg if msg else ''})"
            ) from None

    state = read_json("state.json")
    rng_json = read_json("rng.json")
    rng_tensors = read_tensors("rng.pt")
    optimizer = read_tensors("optimizer.pt")
    if not isinstance(state, dict) or "iteration" not in state:
        raise CheckpointError(f"{path / 'state.json'}: not a checkpoint state")
    if not isinstance(rng_tensors, dict):
        raise CheckpointError(f"{path / 'rng.pt'}: not a mapping of tensors")
    try:
        rng = _join_tensors(rng_json, rng_tensors)
    except (KeyError, TypeError):
        raise CheckpointError(f"{path / 'rng.json'}: does not match rng.pt") from None
    return {"state": state, "rng": rng, "optimizer": optimizer, "model_dir": path}


# ================================================================== LoRA adapters

#: the files of a LoRA checkpoint's adapters (peft's names: ``PeftModel.from_pretrained`` reads
#: the folder; docs/training.md, "LoRA")
ADAPTER_WEIGHTS = "adapter_model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"


def _json_default(obj: Any) -> Any:
    if isinstance(obj, set | frozenset):
        return sorted(obj)
    if hasattr(obj, "value"):  # peft's enums (PeftType, TaskType)
        return obj.value
    raise TypeError(f"not JSON: {type(obj).__name__}")


def save_adapters(model: Any, folder: str | Path) -> None:
    """The adapters of ``model`` into ``folder``: ``adapter_model.safetensors`` (peft's key
    names) and ``adapter_config.json`` (sorted, so the same adapters give the same bytes)."""
    import peft
    from safetensors.torch import save_file

    folder = Path(folder)
    state = peft.get_peft_model_state_dict(model, save_embedding_layers=False)
    tensors = {k: v.detach().cpu().contiguous() for k, v in state.items()}
    save_file(tensors, str(folder / ADAPTER_WEIGHTS), metadata={"format": "pt"})
    config = model.peft_config["default"].to_dict()
    config["inference_mode"] = True  # as peft's own save_pretrained writes it
    base = getattr(model, "_mvpo_lora_base", {}).get("base_model")
    if base:
        config["base_model_name_or_path"] = base
    text = json.dumps(config, indent=2, sort_keys=True, default=_json_default)
    (folder / ADAPTER_CONFIG).write_text(text + "\n")


def load_adapters(model: Any, folder: str | Path) -> None:
    """Load ``folder``'s ``adapter_model.safetensors`` into the peft ``model`` (every adapter
    tensor, finite, and nothing else; else a :class:`CheckpointError` naming the file)."""
    import peft
    from safetensors.torch import load_file

    path = Path(folder) / ADAPTER_WEIGHTS
    device = str(next(model.parameters()).device)
    try:
        state = load_file(str(path), device=device)
    except Exception as err:  # safetensors raises its own error types
        raise CheckpointError(f"{path}: unreadable ({type(err).__name__})") from None
    bad = [k for k, v in state.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if bad:
        raise CheckpointError(f"{path}: non-finite values in {bad[0]}")
    saved = peft.get_peft_model_state_dict(model, save_embedding_layers=False)
    shapes = {k: v.shape for k, v in saved.items()}
    expected = set(shapes)
    if set(state) != expected:
        missing, unexpected = sorted(expected - set(state)), sorted(set(state) - expected)
        raise CheckpointError(
            f"{path}: adapters do not fit the model (missing {missing[:3]}, unexpected "
            f"{unexpected[:3]})"
        )
    other = [k for k in sorted(state) if state[k].shape != shapes[k]]
    if other:  # another rank or base: peft would raise a many-line "size mismatch"
        k = other[0]
        raise CheckpointError(
            f"{path}: adapter {k} has shape {list(state[k].shape)}, the model's is "
            f"{list(shapes[k])} ({len(other)} tensors differ: another rank or base model)"
        )
    result = peft.set_peft_model_state_dict(model, state)
    if result.unexpected_keys:
        raise CheckpointError(f"{path}: unexpected adapter tensors {result.unexpected_keys[:3]}")


def _is_lora(model: Any) -> bool:
    """A peft (LoRA) model: its checkpoint holds the adapters only."""
    return hasattr(model, "peft_config") and hasattr(model, "get_base_model")


def load_model_weights(model: Any, path: str | Path) -> None:
    """Load ``model.safetensors`` of a checkpoint into ``model`` (strict; a bad file is a
    :class:`CheckpointError` naming it); a LoRA model loads ``adapter_model.safetensors``."""
    from safetensors.torch import load_file

    path = Path(path)
    if _is_lora(model):  # a LoRA run: the adapters (mvpo_train.lora)
        load_adapters(model, path)
        return
    device = str(next(model.parameters()).device)
    index = path / "model.safetensors.index.json"
    files = (
        sorted(set(json.loads(index.read_text())["weight_map"].values()))
        if index.is_file()
        else ["model.safetensors"]
    )
    state: dict[str, Any] = {}
    for f in files:
        try:
            state.update(load_file(str(path / f), device=device))
        except Exception as err:  # safetensors raises its own error types
            raise CheckpointError(f"{path / f}: unreadable ({type(err).__name__})") from None
    bad = [k for k, v in state.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if bad:
        raise CheckpointError(f"{path / files[0]}: non-finite values in {bad[0]}")
    missing, unexpected = model.load_state_dict(state, strict=False)
    config = getattr(model, "config", None)  # a Hugging Face model's; any other policy: none
    tied = {"lm_head.weight"} if getattr(config, "tie_word_embeddings", False) else set()
    if set(missing) - tied or unexpected:
        raise CheckpointError(
            f"{path}: checkpoint does not fit the model (missing {sorted(missing)[:3]}, "
            f"unexpected {sorted(unexpected)[:3]})"
        )
