"""Process measurements shared by the scale benchmarks (``webshop_scale.py``,
``searchqa_scale.py``): memory of a process and a child interpreter's JSON with its peak RSS."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def memory(pid: int | str = "self") -> dict[str, float]:
    """RSS / USS (private pages) / PSS of a process in MiB, from ``smaps_rollup``."""
    fields: dict[str, float] = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[2] == "kB":
                fields[parts[0].rstrip(":")] = int(parts[1]) / 1024
    private = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
    return {"rss": fields.get("Rss", 0), "uss": private, "pss": fields.get("Pss", 0)}


def run_child(
    script: str, args: list[str], env: dict[str, str] | None = None
) -> tuple[dict[str, Any], float]:
    """Run ``script --child ARGS`` in a new interpreter; its last JSON line and its peak RSS
    (MiB, from ``/usr/bin/time``)."""
    cmd = ["/usr/bin/time", "-f", "%M", sys.executable, script, "--child", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{proc.stderr[-3000:]}")
    peak = float(proc.stderr.strip().splitlines()[-1]) / 1024
    return json.loads(proc.stdout.strip().splitlines()[-1]), peak
