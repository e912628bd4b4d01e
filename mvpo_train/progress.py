"""Progress inside long work: the bars below ``mvpo-train``'s iteration bar.

Nothing long runs silently: an iteration's rollout ticks per environment step and per finished
episode, its update per mini-batch, an evaluation per finished episode (in ``mvpo-train``,
``mvpo-showcase`` and ``mvpo-eval``), and ``mvpo-fit-abstraction`` per episode. The bars go
to stderr, vanish when their work is done (``leave=False``) and are absent with
``progress=False`` (``--no-progress``). The iteration bar's ETA uses the mean time per
iteration so far (``smoothing=0``): after the first iteration it is that iteration's time
times the iterations left.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["episode_ticker", "iteration_bar", "work_bar"]


def iteration_bar(enabled: bool, desc: str, total: int, initial: int = 0) -> Any:
    """The run's bar over iterations (``None`` when not ``enabled``)."""
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit="it", smoothing=0.0)


def work_bar(enabled: bool, desc: str, total: int, unit: str) -> Any:
    """A transient bar for one piece of work (``tqdm(disable=True)`` when not ``enabled``:
    every call on it does nothing)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, leave=False, disable=not enabled)


def episode_ticker(bar: Any) -> Callable[[int], None]:
    """The ``on_step`` callback of :meth:`~mvpo_train.rollout.RolloutCollector.collect` for
    ``bar``: each call is one environment step; ``ended`` episodes finished in it (counted up
    to the bar's total: an evaluation's padding episodes are not shown)."""
    steps = 0

    def tick(ended: int) -> None:
        nonlocal steps
        steps += 1
        bar.set_postfix_str(f"step {steps}", refresh=False)
        left = (bar.total - bar.n) if bar.total is not None else ended
        bar.update(min(ended, max(0, left)))
        if not ended:
            bar.refresh()

    return tick
