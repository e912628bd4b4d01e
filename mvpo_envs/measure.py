"""Moved to :mod:`mvpo_envs.bench.measure` (with the other benchmark-measuring helpers); this
name stays for the modules and pages that still import or name it."""

from __future__ import annotations

from mvpo_envs.bench.measure import *  # noqa: F403
from mvpo_envs.bench.measure import __all__  # noqa: F401
