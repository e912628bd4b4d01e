"""Flag types and checks the console commands share: every flag is checked before anything is
read or written (integers within their range come from :func:`mvpo_envs.cli_args.int_at_least`;
here finite floats, non-empty paths and names, output files that are not folders, inputs that are
regular files or folders, a device this torch can use). Each failure is one
:class:`~mvpo_train.config.ConfigError` or ``argparse`` line.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

from mvpo_train.config import INT_MAX, ConfigError


def short_path(path: Path, width: int = 80) -> str:
    """``path`` for a one-line message (a 300-character name is cut in the middle)."""
    text = str(path)
    return text if len(text) <= width else f"{text[: width // 2]}...{text[-width // 2 :]}"


def check_device(device: str) -> None:
    """A ``cuda``/``cuda:N``/``mps`` device this torch can use, else one line (it was torch's
    ``AssertionError: Torch not compiled with CUDA enabled`` after the model loaded)."""
    if device in ("auto", "cpu"):
        return
    import torch

    if device.startswith("cuda"):
        index = int(device.split(":")[1]) if ":" in device else 0
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if index >= count:
            raise ConfigError(
                f"device: {device} is not available (torch {torch.__version__} sees {count} "
                "CUDA device(s)); use --device cpu or auto"
            )
    elif device == "mps" and not torch.backends.mps.is_available():
        raise ConfigError("device: mps is not available here; use --device cpu or auto")


def add_debug(p: argparse.ArgumentParser) -> None:
    p.add_argument("--debug", action="store_true", help="show the traceback of an error")


def _cut(text: str, width: int = 60) -> str:
    """``repr(text)`` cut to ``width`` characters (the one line stays short)."""
    r = repr(text)
    return r if len(r) <= width else r[: width - 3] + "..."


def finite_float(low: float, strict: bool) -> Callable[[str], float]:
    """``type=`` of a float flag: finite and ``> low`` (strict) or ``>= low``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {_cut(text)}") from None
        if not math.isfinite(value) or (value <= low if strict else value < low):
            raise argparse.ArgumentTypeError(
                f"expected a finite number {'>' if strict else '>='} {low:g}, got {_cut(text)}"
            )
        return value

    parse.__name__ = "number"
    return parse


def non_empty(text: str) -> str:
    """``type=`` of a path or name flag: ``""`` would silently mean the current folder or the
    default, so it is refused."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty; give a value")
    if "\x00" in text:
        raise argparse.ArgumentTypeError(f"contains a NUL character, got {_cut(text)}")
    return text


def check_output_file(flag: str, path: str) -> None:
    """An output file that exists must be a regular file (not a folder, FIFO or device)."""
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{flag}: {path} is a folder; give a file name")
    if p.exists() and not p.is_file():
        raise ConfigError(f"{flag}: {path} exists and is not a regular file")


def check_input_path(flag: str, path: str) -> None:
    """An input that exists must be a regular file or a folder (reading a FIFO would block)."""
    p = Path(path)
    try:
        odd = p.exists() and not p.is_file() and not p.is_dir()
    except OSError as err:  # e.g. a name longer than the file system allows
        raise ConfigError(f"{flag}: {short_path(p)}: {err.strerror or err}") from None
    if odd:
        raise ConfigError(f"{flag}: {path} is not a regular file or folder")


def task_list(text: str) -> list[int]:
    try:
        tasks = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated task indices such as 1,8,13, got {_cut(text)}"
        ) from None
    if not tasks or min(tasks) < 0 or max(tasks) > INT_MAX:
        raise argparse.ArgumentTypeError(f"expected task indices >= 0, got {_cut(text)}")
    return tasks
