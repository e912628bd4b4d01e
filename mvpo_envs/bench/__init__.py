"""What the benchmark scripts measure envs with (``benchmarks/*.py``; docs/scaling.md,
docs/environments.md): none of it is part of an env, and the trainer imports none of it.

* :mod:`~mvpo_envs.bench.measure`: memory, latency, a child interpreter's peak RSS, N envs and
  N async workers of one process;
* :mod:`~mvpo_envs.bench.step_rate`: seeded, timed play of one env or a vector of them;
* :mod:`~mvpo_envs.bench.cache_faults`: every env cache's files damaged in turn and opened
  again;
* :mod:`~mvpo_envs.bench.alfworld_engine_speed`, :mod:`~mvpo_envs.bench.alfworld_game_stats`,
  :mod:`~mvpo_envs.bench.alfworld_generate_speed`, :mod:`~mvpo_envs.bench.webshop_speed`,
  :mod:`~mvpo_envs.bench.searchqa_speed`: one benchmark's measurements each.
"""
