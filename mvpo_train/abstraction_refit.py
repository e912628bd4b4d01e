"""Fit a learned abstraction from the trainer's own rollouts, refit it every K iterations.

docs/abstractions.md ("In the trainer"). :class:`AbstractionRefit` is the whole state machine;
the trainer calls three methods and checkpoints one dict:

* ``observe(iteration, batch)`` after each rollout: keeps the episodes (the observation of
  every step, from the batch's ``anchor`` column, and the episode's return) of the last
  ``window`` iterations;
* ``due(iteration)``: fit after ``fit_after`` iterations of data, then every ``refit_every``;
* ``refit(iteration)``: fits a fresh :class:`EmbeddingClusterAbstraction` (seeded with
  ``(seed + iteration) mod 2**32``) on the window and returns it; ``install(venv)`` hands it to every
  sub-env (sync or async) for the following episodes.

While every episode of the window has the same return (a policy that never succeeds yet), no
event can predict success: the fit keeps the clusters and learns no milestone (``events`` is
empty, said in ``abstraction.json``-style ``state_dict``), and the next refit tries again.
The episodes are the batch's anchors, so the terminal observation of each episode is not
part of a fit (it is labelled when the abstraction is used, like every other observation).

``state_dict()`` holds the window and the fitted arrays (plain lists, JSON-able, no pickle);
``load_state_dict`` rebuilds the same abstraction, so a resumed run labels its rollouts exactly
as the uninterrupted one. The optimizer code does not change: it reads ``signature`` and
``milestones`` from the infos as before.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from mvpo_abstraction.learned import EmbeddingClusterAbstraction
from mvpo_abstraction.learned_milestones import Event, MilestoneLearner
from mvpo_train.errors import ConfigError


@dataclass
class RefitConfig:
    """Knobs of :class:`AbstractionRefit` (docs/abstractions.md, "In the trainer")."""

    fit_after: int = 1
    refit_every: int = 0  # 0: fit once, never refit
    window: int = 4  # iterations of episodes kept for a fit
    k: int = 32
    milestones: str = "learned"  # or a registered abstraction name (its rule milestones)
    top_k: int = 5
    min_support: int = 3
    seed: int = 0
    model_path: str | None = None

    def __post_init__(self) -> None:
        if self.fit_after < 1 or self.refit_every < 0 or self.window < 1:
            raise ValueError("fit_after >= 1, refit_every >= 0 and window >= 1 are required")


class AbstractionRefit:
    """See the module docstring."""

    def __init__(self, config: RefitConfig | None = None, **kwargs: Any):
        self.config = config or RefitConfig(**kwargs)
        self.episodes: list[tuple[int, list[str], float]] = []  # (iteration, texts, return)
        self.fitted_at: int | None = None
        self.abstraction: EmbeddingClusterAbstraction | None = None

    # -- data ------------------------------------------------------------------------------------
    def observe(self, iteration: int, batch: Any) -> None:
        """Keep the episodes of a :class:`~mvpo_train.batch.StepBatch` (anchors, returns)."""
        b = batch
        traj = np.asarray(b.traj)
        order = np.lexsort((np.asarray(b.t), traj))
        env_reward = b.extras.get("env_reward") if getattr(b, "extras", None) else None
        reward = np.asarray(env_reward if env_reward is not None else b.reward, np.float64)
        for i in np.unique(traj):
            rows = order[traj[order] == i]
            texts = [str(x) for x in np.asarray(b.anchor)[rows]]
            self.episodes.append((int(iteration), texts, float(reward[rows].sum())))
        oldest = int(iteration) - self.config.window + 1
        self.episodes = [e for e in self.episodes if e[0] >= oldest]

    def due(self, iteration: int) -> bool:
        c = self.config
        if self.fitted_at is None:
            return iteration + 1 >= c.fit_after
        return c.refit_every > 0 and iteration - self.fitted_at >= c.refit_every

    def refit(self, iteration: int) -> EmbeddingClusterAbstraction:
        """Fit on the window; the new abstraction becomes :attr:`abstraction`."""
        c = self.config
        if not self.episodes:
            raise RuntimeError("AbstractionRefit.refit: no episodes observed yet")
        distinct = len({x for _, texts, _ in self.episodes for x in texts})
        if distinct < c.k:  # k-means cannot make k clusters: a one-line error naming the fix
            raise ConfigError(
                f"--abstraction learned: the fit after iteration {iteration + 1} has "
                f"{distinct} distinct observations for k={c.k} clusters; lower k "
                f"(--abstraction-kwargs '{{\"k\": {max(2, distinct // 2)}}}'), fit later "
                '("fit_after") or give it more steps (--num-groups, --group-size, --max-steps)'
            )
        seed = (c.seed + int(iteration)) % 2**32  # numpy and KMeans take seeds < 2**32
        abstraction = EmbeddingClusterAbstraction(
            k=c.k,
            milestones_from=c.milestones,
            seed=seed,
            model_path=c.model_path,
            learner=MilestoneLearner(top_k=c.top_k, min_support=c.min_support, seed=seed),
        )
        states = [[{"observation": x} for x in texts] for _, texts, _ in self.episodes]
        abstraction.fit_episodes(states, [r for _, _, r in self.episodes], require_milestones=False)
        self.abstraction, self.fitted_at = abstraction, int(iteration)
        return abstraction

    def step(self, iteration: int, batch: Any) -> EmbeddingClusterAbstraction | None:
        """``observe`` then, when due, ``refit``; the new abstraction or ``None``."""
        self.observe(iteration, batch)
        return self.refit(iteration) if self.due(iteration) else None

    def install(self, venv: Any) -> None:
        """Give every sub-env of a vector env (``GroupedVectorEnv`` or Gymnasium's; sync, async
        or Ray) the current abstraction through the public
        :meth:`mvpo_envs.base.TextEnv.set_abstraction`: it labels episodes from the next
        ``reset`` (each sub-env builds its own tracker then)."""
        if self.abstraction is None:
            raise RuntimeError("AbstractionRefit.install: nothing fitted yet")
        getattr(venv, "env", venv).call("set_abstraction", self.abstraction)

    # -- checkpoints -----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        a = self.abstraction
        return {
            "config": asdict(self.config),
            "episodes": [[it, list(texts), ret] for it, texts, ret in self.episodes],
            "fitted_at": self.fitted_at,
            "abstraction": None
            if a is None
            else {
                "config": a.config(),
                "centroids": a.centroids.tolist(),
                "events": [e.to_dict() for e in a.events],
                "cluster_names": list(a.cluster_names),
            },
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.config = RefitConfig(**state["config"])
        self.episodes = [(int(it), list(texts), float(r)) for it, texts, r in state["episodes"]]
        self.fitted_at = state["fitted_at"]
        saved = state["abstraction"]
        self.abstraction = (
            None
            if saved is None
            else EmbeddingClusterAbstraction(
                **saved["config"],
                model_path=self.config.model_path,
                centroids=np.asarray(saved["centroids"], dtype=np.float32),
                events=[Event(**e) for e in saved["events"]],
                cluster_names=saved["cluster_names"],
            )
        )
