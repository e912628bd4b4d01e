"""What the benchmark scripts measure envs with, and the pages they write (``benchmarks/*.py``;
docs/scaling.md, docs/environments.md): each module plays or builds envs of the packages beside
it, none is part of an env, and the trainer imports none of it. The process, memory and latency
measurements they share are :mod:`mvpo_envs.measure`, one layer down (the env server's load
generator and SearchQA's IVF recall use them too).

* :mod:`~mvpo_envs.bench.step_rate`: seeded, timed play of one env or a vector of them;
* :mod:`~mvpo_envs.bench.cache_faults`: every env cache's files damaged in turn and opened
  again;
* :mod:`~mvpo_envs.bench.alfworld_engine_speed`, :mod:`~mvpo_envs.bench.alfworld_game_stats`,
  :mod:`~mvpo_envs.bench.alfworld_generate_speed`, :mod:`~mvpo_envs.bench.webshop_speed`,
  :mod:`~mvpo_envs.bench.searchqa_speed`, :mod:`~mvpo_envs.bench.searchqa_scale`,
  :mod:`~mvpo_envs.bench.webshop_scale`, :mod:`~mvpo_envs.bench.retrieval_server_load`,
  :mod:`~mvpo_envs.bench.serve_load`, :mod:`~mvpo_envs.bench.pyserini_overlap`,
  :mod:`~mvpo_envs.bench.vector_backends`, :mod:`~mvpo_envs.bench.info_copy_cost`,
  :mod:`~mvpo_envs.bench.alfworld_listing`, :mod:`~mvpo_envs.bench.uniform_policy`,
  :mod:`~mvpo_envs.bench.vector_start`, :mod:`~mvpo_envs.bench.scripted_episodes`,
  :mod:`~mvpo_envs.bench.oracle_replay`: one
  benchmark's measurements each (most with the page they are written to);
* :mod:`~mvpo_envs.bench.alfworld_env_page`, :mod:`~mvpo_envs.bench.alfworld_stats_table`,
  :mod:`~mvpo_envs.bench.searchqa_scale_page`, :mod:`~mvpo_envs.bench.webshop_scale_page`:
  one benchmark's results page each; :mod:`~mvpo_envs.bench.scale_table` the cells the two
  scale pages share.
"""
