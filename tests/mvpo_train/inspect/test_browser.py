"""The page as a person sees it, in a real headless Chromium (docs/inspect.md): the grid has one
cell per step, choosing another estimator in the page's own control recolours the cells with
that estimator's numbers, and a screenshot is written.

Chromium is Debian's ``chromium`` package (``.ci/run`` installs it); these tests skip only where
it is not installed. The interactive test speaks the Chrome DevTools protocol over
``--remote-debugging-pipe`` (file descriptors 3 and 4), so it needs no Python package.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import tempfile
import time

import numpy as np
import pytest

from mvpo_train.credit import get_estimator
from mvpo_train.inspect.browser import chromium_flags, dump_dom, find_chromium, screenshot
from mvpo_train.inspect.data import build_inspect_data
from mvpo_train.inspect.html import write_html
from mvpo_train.records import read_batch_record

CHROMIUM = find_chromium()
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium is not installed and could not be installed here (.ci/run runs "
    "'apt-get install chromium'; it needs apt and root)",
)


@pytest.fixture()
def page(tmp_path, recorded):
    rec = read_batch_record(recorded)
    data = build_inspect_data(rec, ["grpo", "gigpo", "mvpo"])
    return write_html(data, tmp_path / "page.html"), data


def _cells(dom: str) -> list[tuple[int, str, str]]:
    """(row, data-value, background colour) of every grid cell in a dumped DOM."""
    out = []
    for tag in re.findall(r'<div class="cell[^"]*"[^>]*>', dom):
        row = int(re.search(r'data-row="(\d+)"', tag).group(1))
        value = re.search(r'data-value="([^"]*)"', tag).group(1)
        colour = re.search(r"background-color: ([^;]+);", tag).group(1)
        out.append((row, value, colour))
    return out


@needs_chromium
def test_grid_renders_one_cell_per_step_with_the_estimators_values(page, batch):
    path, data = page
    dom_grpo = dump_dom(path, "est=grpo")
    dom_mvpo = dump_dom(path, "est=mvpo")
    cells_grpo, cells_mvpo = _cells(dom_grpo), _cells(dom_mvpo)
    assert len(cells_grpo) == len(cells_mvpo) == len(batch)
    assert 'data-est="grpo"' in dom_grpo and 'data-est="mvpo"' in dom_mvpo
    rows = json.loads(re.search(r'id="mvpo-data">(.*?)</script>', dom_grpo, re.S).group(1))[
        "row_ids"
    ]
    for name, cells in (("grpo", cells_grpo), ("mvpo", cells_mvpo)):
        shown = np.array([float(v) for _, v, _ in sorted(cells)])
        np.testing.assert_array_equal(shown, data.adv[name][rows], err_msg=name)
    # a different estimator, different colours; exact zeros share the neutral colour
    assert [c for *_, c in sorted(cells_grpo)] != [c for *_, c in sorted(cells_mvpo)]
    zero = {c for _, v, c in cells_grpo if float(v) == 0.0}
    assert zero == {"rgb(238, 238, 238)"}
    # 12 trajectory rows, the all-failed group's rows marked as zero-credit under GRPO
    assert dom_grpo.count('class="grow') == batch.n_traj
    assert dom_grpo.count('class="grow zrow"') == len(data.zero_rows("grpo")) > 0
    # a link can pin one step's details (record row K): action, signature, every estimator
    k = int(np.flatnonzero(batch.t == 2)[0])
    pinned = dump_dom(path, f"est=mvpo&row={k}")
    details = pinned.split('id="details"', 1)[1].split("</aside>", 1)[0]
    assert f"record row {k}" in details and batch.action[k] in details
    assert batch.signature[k] in details and details.count("A gigpo") == 1
    # the difference view: mvpo - gigpo
    diff = _cells(dump_dom(path, "est=mvpo&minus=gigpo"))
    want = data.adv["mvpo"] - data.adv["gigpo"]
    np.testing.assert_array_equal(np.array([float(v) for _, v, _ in sorted(diff)]), want[rows])


@needs_chromium
def test_screenshot_is_written(page, tmp_path):
    path, _ = page
    png = screenshot(path, tmp_path / "shot.png", "est=mvpo", size=(900, 600))
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    assert (width, height) == (900, 600)


class PipeCDP:
    """Minimal Chrome DevTools protocol client over --remote-debugging-pipe."""

    def __init__(self, binary: str, profile: str):
        self._to_r, self._to_w = os.pipe()
        self._from_r, self._from_w = os.pipe()
        to_r, from_w = self._to_r, self._from_w

        def setup():  # in the child: the browser reads commands on fd 3, replies on fd 4
            a = fcntl.fcntl(to_r, fcntl.F_DUPFD, 10)  # out of the way of 3 and 4 first
            b = fcntl.fcntl(from_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)  # dup2 makes 3 and 4 inheritable: they survive exec
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [binary, *chromium_flags(profile), "--remote-debugging-pipe", "about:blank"],
            close_fds=False,
            preexec_fn=setup,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(self._to_r)
        os.close(self._from_w)
        self._buf = b""
        self._id = 0

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 60.0) -> dict:  # fmt: skip
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply["result"]
            if time.monotonic() > deadline:
                raise TimeoutError(method)
            chunk = os.read(self._from_r, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the pipe")
            self._buf += chunk

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_w)
        os.close(self._from_r)


@needs_chromium
def test_choosing_another_estimator_in_the_page_recolours_the_grid(page, batch):
    path, data = page
    with tempfile.TemporaryDirectory() as profile:
        cdp = PipeCDP(CHROMIUM, profile)
        try:
            target = cdp.send("Target.createTarget", {"url": path.resolve().as_uri()})
            sess = cdp.send(
                "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
            )["sessionId"]

            def js(expr: str):
                res = cdp.send(
                    "Runtime.evaluate", {"expression": expr, "returnByValue": True}, sess
                )
                return res["result"].get("value")

            deadline = time.monotonic() + 60
            while js("document.body && document.body.dataset.ready") != "1":
                assert time.monotonic() < deadline, "the page never finished rendering"
                time.sleep(0.1)
            read = (
                "JSON.stringify(Array.from(document.querySelectorAll('.cell[data-row]')).map("
                "c => [+c.dataset.row, c.dataset.value, c.style.backgroundColor]))"
            )
            assert js("document.body.dataset.est") == "mvpo"  # the trained one by default
            before = json.loads(js(read))
            js(
                "(() => { const s = document.getElementById('sel-est'); s.value = 'grpo';"
                " s.dispatchEvent(new Event('change')); })()"
            )
            after = json.loads(js(read))
            assert js("document.body.dataset.est") == "grpo"
            assert js("location.hash") == "#est=grpo"
            shot = cdp.send("Page.captureScreenshot", {"format": "png"}, sess)
            row_ids = js("JSON.parse(document.getElementById('mvpo-data').textContent).row_ids")
        finally:
            cdp.close()
    assert len(before) == len(after) == len(batch)
    page_rows = np.array([r for r, *_ in after])
    record_rows = np.asarray(row_ids)[page_rows]
    np.testing.assert_array_equal(
        np.array([float(v) for _, v, _ in after]), get_estimator("grpo")(batch)[0][record_rows]
    )
    np.testing.assert_array_equal(
        np.array([float(v) for _, v, _ in before]), data.adv["mvpo"][record_rows]
    )
    assert [c for *_, c in before] != [c for *_, c in after]
    assert len(shot["data"]) > 1000
