"""``mvpo-inspect``: one batch record on one page (docs/inspect.md).

- :mod:`~mvpo_train.inspect.data` turns a :class:`~mvpo_train.records.BatchRecord` into the
  page's numbers (every estimator's advantages, regions, potentials, routing, loops);
- :mod:`~mvpo_train.inspect.html` writes the self-contained HTML page;
- :mod:`~mvpo_train.inspect.png` draws the same grid with matplotlib;
- :mod:`~mvpo_train.inspect.cli` is the command line;
- :mod:`~mvpo_train.inspect.sample` writes records from seeded random play on any env id.
"""

from __future__ import annotations

from mvpo_train.inspect.data import InspectData, build_inspect_data

__all__ = ["InspectData", "build_inspect_data"]
