"""Headless Chromium for the page: a screenshot (``mvpo-inspect --screenshot``) and the DOM after
the page's script ran (docs/inspect.md, "`mvpo-inspect`" and "The browser test and Chromium").

Uses the system's Chromium (Debian package ``chromium``; ``$MVPO_CHROMIUM`` names another
binary) with no network, no sandbox-dependent features and a throw-away profile.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["BrowserError", "chromium_flags", "dump_dom", "find_chromium", "screenshot"]

_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


class BrowserError(RuntimeError):
    """No Chromium, or it failed; the message says which."""


def find_chromium() -> str | None:
    """Path of a Chromium binary (``$MVPO_CHROMIUM`` first), or None."""
    env = os.environ.get("MVPO_CHROMIUM")
    if env:
        return env if shutil.which(env) or Path(env).is_file() else None
    for name in _NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium_flags(profile: str) -> list[str]:
    """Headless, offline, throw-away-profile flags."""
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--no-first-run",
        "--no-default-browser-check",
        "--hide-scrollbars",
        "--mute-audio",
        f"--user-data-dir={profile}",
    ]


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    binary = find_chromium()
    if binary is None:
        raise BrowserError(
            "no Chromium found (install the Debian package: apt-get install chromium; "
            "or set MVPO_CHROMIUM)"
        )
    with tempfile.TemporaryDirectory(prefix="mvpo-chromium-") as profile:
        try:
            res = subprocess.run(
                [binary, *chromium_flags(profile), *args],
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise BrowserError(f"Chromium did not finish within {timeout:.0f} s") from None
    if res.returncode != 0:
        tail = res.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
        raise BrowserError(f"Chromium exited with {res.returncode}: {' '.join(tail)}")
    return res


def _url(html_path: str | os.PathLike, fragment: str) -> str:
    url = Path(html_path).resolve().as_uri()
    return f"{url}#{fragment.lstrip('#')}" if fragment else url


def screenshot(
    html_path: str | os.PathLike,
    png_path: str | os.PathLike,
    fragment: str = "",
    size: tuple[int, int] = (1400, 900),
    timeout: float = 120.0,
) -> Path:
    """PNG of the page (``fragment`` e.g. ``"est=mvpo&minus=gigpo"``); returns its path."""
    out = Path(png_path).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    _run(
        [f"--window-size={size[0]},{size[1]}", f"--screenshot={out}", _url(html_path, fragment)],
        timeout,
    )
    if not out.is_file() or out.stat().st_size == 0:
        raise BrowserError(f"Chromium wrote no screenshot to {out}")
    return out


def dump_dom(html_path: str | os.PathLike, fragment: str = "", timeout: float = 120.0) -> str:
    """The serialised DOM after the page's script ran."""
    res = _run(["--dump-dom", _url(html_path, fragment)], timeout)
    return res.stdout.decode("utf-8", "replace")
