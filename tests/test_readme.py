"""README.md stays true: its Python snippets run, its links resolve, its numbers have a source.

* every ```python block runs, each in a fresh interpreter in an empty folder (a snippet that
  needs something from an earlier one, or writes into the checkout, fails here);
* every relative link (``[text](path)``, images included) points to a file of the checkout;
* every number of the "Results" table appears in the results file that its row links;
* the "Reliability" table's test counts equal what ``pytest --collect-only -q tests/faults``
  collects, with each fault test in exactly one class (``FAULT_CLASSES``);
* the page stays short: at most ``MAX_LINES`` lines.

Where each detail that is not in the README lives: docs/setup.md and the pages the README links.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
MAX_LINES = 250
SNIPPET_TIMEOUT_S = 120  # each snippet takes well under 10 s; the margin is for a loaded machine

#: (README row label, fault-suite file, regex on the test name): the first match classifies a test
FAULT_CLASSES: tuple[tuple[str, str, str], ...] = (
    ("Killed trainer, launcher or env workers", "test_trainer_faults.py", r"sigkill"),
    ("Killed trainer, launcher or env workers", "test_vector_faults.py", r""),
    ("Killed trainer, launcher or env workers", "test_run_folder.py", r"sigkill"),
    ("Two writers, one run folder", "test_run_folder.py", r"writer|lock"),
    ("Two writers, one run folder", "test_trainer_faults.py", r"holds_a_run|changed_config"),
    ("Torn metrics, full disk", "test_run_folder.py", r"disk|metrics|torn|row_write"),
    ("Torn metrics, full disk", "test_trainer_faults.py", r"full_disk"),
    ("Torn metrics, full disk", "test_tracker_kill.py", r""),
    ("Corrupt or escaping checkpoints and archives", "test_trainer_faults.py", r""),
    ("Corrupt or escaping checkpoints and archives", "test_lora_shapes.py", r""),
    ("Corrupt or escaping checkpoints and archives", "test_archive_import.py", r""),
    ("Bad settings", "test_bad_config.py", r""),
    ("Bad settings", "test_run_folder.py", r"name_too_long"),
    (
        "Game files that try to run code",
        "test_alfworld_data.py",
        r"code_execution|file_read|whitelist|evaluator|same_expressions",
    ),
    ("Malformed data, damaged caches", "test_alfworld_data.py", r""),
    ("Malformed data, damaged caches", "test_data_faults.py", r""),
    ("Malformed data, damaged caches", "test_surrogates.py", r""),
    ("Malformed data, damaged caches", "test_cache_faults.py", r""),
    ("Malformed data, damaged caches", "test_embedding_shards.py", r""),
    ("Server abuse (retrieval server, `mvpo-serve`)", "test_serve_connections.py", r""),
    ("Server abuse (retrieval server, `mvpo-serve`)", "test_server_faults.py", r""),
    ("Env reset/step edges", "test_env_edges.py", r""),
    ("Adversarial model output", "test_malformed_output.py", r""),
)


def readme() -> str:
    return README.read_text(encoding="utf-8")


def python_blocks(text: str) -> list[str]:
    """The bodies of the ```python fenced blocks, in order."""
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def relative_links(text: str) -> list[str]:
    """Targets of ``[text](target)`` / ``![alt](target)`` that are not URLs or anchors."""
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:|#", t)]


def section(text: str, heading: str) -> str:
    """The text of ``## heading`` up to the next ``## `` heading."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"README.md has no '## {heading}' section"
    return match.group(1)


def table_rows(text: str) -> list[list[str]]:
    """The cells of each markdown table row of ``text`` (header and rule rows left out)."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("|") or re.match(r"^\|[-:| ]+\|$", line):
            continue
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows[1:] if rows else rows


def numbers(text: str) -> list[str]:
    """Decimal numbers of ``text`` without thousands separators (``20,189`` -> ``20189``)."""
    return [n.replace(",", "") for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]


SNIPPETS = python_blocks(readme())


def test_the_readme_is_short():
    lines = readme().splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; at most {MAX_LINES}"


def test_the_readme_has_python_snippets_and_the_two_commands():
    assert len(SNIPPETS) >= 4
    text = readme()
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    for target in ("run", "test"):
        assert f"make {target}" in text
        assert re.search(rf"^{target}:", makefile, re.M), f"Makefile lost its '{target}' target"
    assert "make test" in (REPO / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.parametrize("index", range(len(SNIPPETS)), ids=lambda i: f"snippet{i}")
def test_every_python_snippet_runs(index, tmp_path):
    work, tmp = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()  # the snippets' temporary folders land here, not in the system's
    script = work / f"snippet{index}.py"
    script.write_text(SNIPPETS[index], encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "TMPDIR": str(tmp)}
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=SNIPPET_TIMEOUT_S,
    )
    assert proc.returncode == 0, f"README snippet {index} failed:\n{SNIPPETS[index]}\n{proc.stderr}"
    assert sorted(p.name for p in work.iterdir()) == [script.name], "a snippet wrote into its cwd"


def test_every_relative_link_points_to_a_file():
    links = relative_links(readme())
    assert links, "no relative link found: the link pattern is broken"
    missing = [t for t in links if not (REPO / t.split("#")[0]).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


def test_the_link_scan_sees_links_and_skips_urls():
    text = "[a](docs/a.md) ![i](img/x.png) [u](https://x.org/y) [s](#sec) [b](docs/b.md#part)"
    assert relative_links(text) == ["docs/a.md", "img/x.png", "docs/b.md#part"]


def test_every_results_number_is_in_the_file_its_row_links():
    rows = table_rows(section(readme(), "Results"))
    assert len(rows) >= 6
    for what, result, source in rows:
        files = re.findall(r"\]\((benchmarks/results/[^)]+\.md)\)", source)
        assert files, f"Results row {what!r} links no benchmarks/results/*.md file"
        quoted = set(numbers((REPO / files[0]).read_text(encoding="utf-8")))
        missing = [n for n in numbers(result) if n not in quoted]
        assert not missing, f"Results row {what!r}: {missing} not in {files[0]}"


def test_the_number_check_would_catch_an_invented_number():
    assert numbers("fast engine 20,189 steps/s, 763x; 0.14 MiB") == ["20189", "763", "0.14"]
    quoted = numbers("| **fast** | **20189** | **763x** | 0.143 |")
    assert "20189" in quoted and "0.14" not in quoted


def classify(test_id: str) -> str | None:
    """The README class of one collected fault test id (``tests/faults/FILE::NAME[...]``)."""
    path, _, name = test_id.partition("::")
    for label, file, pattern in FAULT_CLASSES:
        if Path(path).name == file and re.search(pattern, name):
            return label
    return None


def test_the_reliability_counts_are_the_fault_suites():
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        + ["tests/faults"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    assert ids, "no fault test collected"
    counts: dict[str, int] = {}
    for test_id in ids:
        label = classify(test_id)
        assert label is not None, f"{test_id}: no class in FAULT_CLASSES (add one)"
        counts[label] = counts.get(label, 0) + 1
    stated = {row[0]: row[-1] for row in table_rows(section(readme(), "Reliability"))}
    expected = {label: str(n) for label, n in counts.items()}
    assert stated == expected, (
        "README.md's Reliability counts differ from tests/faults; "
        f"update the 'tests' column to {expected}"
    )
