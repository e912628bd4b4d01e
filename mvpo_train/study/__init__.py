"""Studies: arms x seeds of ``mvpo-train`` runs, resumed and analysed (docs/learning_study.md).

The env-neutral harness behind the study scripts of ``benchmarks/`` (which define the envs,
arms and texts of each study: the trainer's package names no env). By job:

* **Running a sweep.** :mod:`~mvpo_train.study.runs` (run folders ``<base>/<arm>-seed<k>/``,
  finished = their ``metrics.jsonl`` rows read with :func:`mvpo_train.metrics.read_metrics`,
  resume from :func:`mvpo_train.checkpoint.latest_checkpoint`, a run's command, the pending
  runs, a settings fingerprint, the local or Ray runner); :mod:`~mvpo_train.study.arms`
  (``[NAME=]ESTIMATOR:KEY=VALUE`` arms); :mod:`~mvpo_train.study.study_env` and
  :mod:`~mvpo_train.study.learning_runs` (one env's learning study and its runs);
  :mod:`~mvpo_train.study.result_runs` (a study kept as compact results);
  :mod:`~mvpo_train.study.gain_sweep` (the oracle-gain sweeps);
  :mod:`~mvpo_train.study.eval_scores` (``mvpo-eval`` that keeps graded scores);
  :mod:`~mvpo_train.study.worktree` (another commit's code: a benchmark's "before").
* **What a study keeps.** :mod:`~mvpo_train.study.compact` (a run's ``result.json``),
  :mod:`~mvpo_train.study.result_archive` (committed per-run results of a long sweep),
  :mod:`~mvpo_train.study.archive` (export/import of a sweep, a checkpoint per unfinished run),
  :mod:`~mvpo_train.study.batch_cache` (played batches kept as records).
* **Statistics and tables.** :mod:`mvpo_train.stats` (every interval and rank statistic);
  :mod:`~mvpo_train.study.summary`, :mod:`~mvpo_train.study.paired`,
  :mod:`~mvpo_train.study.result_summary`, :mod:`~mvpo_train.study.curves`,
  :mod:`~mvpo_train.study.gain_table` (per-arm intervals, pairs by seed, curves, the product
  fit), :mod:`~mvpo_train.study.paired_forms` (two forms of one setting, paired by seed); :mod:`~mvpo_train.study.tables` and :mod:`~mvpo_train.study.analyze_only` (formats, the
  ``Machine:`` line, the md + json + png writer, a page rebuilt byte for byte from its JSON);
  :mod:`~mvpo_train.study.saved_page` (a page rebuilt from its JSON, its hand-added notes
  kept), :mod:`~mvpo_train.study.figures_page` (a page kept with its figures as JSON, for a
  benchmark whose measurements stay outside git), :mod:`~mvpo_train.study.page_command` (a
  bare ``--analyze-only`` takes the arguments of the command its page names);
  :mod:`~mvpo_train.study.figures` and :mod:`~mvpo_train.study.curve_panels` (figures).
* **Pages.** :mod:`~mvpo_train.study.learning_page`, :mod:`~mvpo_train.study.result_report`,
  :mod:`~mvpo_train.study.ablation_report`, :mod:`~mvpo_train.study.gain_pages`,
  :mod:`~mvpo_train.study.gain_results` (the gain sweeps' results and files),
  :mod:`~mvpo_train.study.tuning_grid`; the diagnostics of run sets:
  :mod:`~mvpo_train.study.run_sets`, :mod:`~mvpo_train.study.run_set_draw`,
  :mod:`~mvpo_train.study.run_set_report`, :mod:`~mvpo_train.study.run_set_page`,
  :mod:`~mvpo_train.study.run_set_plot`.
* **Alignment of the repair.** :mod:`~mvpo_train.study.progress_sources` (labelled batches),
  :mod:`~mvpo_train.study.run_replay` (a run's batches replayed for a progress signature),
  :mod:`~mvpo_train.study.option_alignment`, :mod:`~mvpo_train.study.expert_alignment`,
  :mod:`~mvpo_train.study.run_alignment` (a run's batches scored),
  :mod:`~mvpo_train.study.step_kinds` (the repair per step kind),
  :mod:`~mvpo_train.study.option_kinds` (it per option of the potential, and its page),
  :mod:`~mvpo_train.study.credit_mass` (where MVPO's advantage mass goes),
  :mod:`~mvpo_train.study.repair_magnitude` (how much of a run's advantage its repair was),
  :mod:`~mvpo_train.study.routing_tables` (what the routing did and the repair's magnitude,
  per arm, as page tables).
* **Cost.** :mod:`~mvpo_train.study.cost_estimate` (a study's CPU hours before it runs),
  :mod:`~mvpo_train.study.phase_tables` (CPU seconds per phase),
  :mod:`~mvpo_train.study.estimator_cost`,
  :mod:`~mvpo_train.study.credit_timing` and :mod:`~mvpo_train.study.potential_stages` (an
  estimator's and MVPO's stages' milliseconds on :mod:`~mvpo_train.study.synthetic` batches;
  :mod:`~mvpo_train.study.stage_page`: the stages' figures and page),
  :mod:`~mvpo_train.study.bench` (the speed benchmarks' results store, verified when read and
  replaced whole when written, and their pages); :mod:`~mvpo_train.study.variant_pairs`
  (before/after variants measured side by side), :mod:`~mvpo_train.study.thread_cost` (the
  first iteration beside a CPU hog), :mod:`~mvpo_train.study.ddp_update` (a data-parallel PPO
  update), :mod:`~mvpo_train.study.record_size` (a batch record's size),
  :mod:`~mvpo_train.study.eta_replay` (the iteration bar's ETA replayed on committed runs),
  :mod:`~mvpo_train.study.minilm_passes` (MiniLM's passes batched several ways, timed) and
  :mod:`~mvpo_train.study.batching_page` (their page).
* **Policies.** :mod:`~mvpo_train.study.candidates` (policy candidates measured),
  :mod:`~mvpo_train.study.demo_layouts` (demonstrations cut to other prompt layouts),
  :mod:`~mvpo_train.study.abstraction_quality` (a learned abstraction against the rules).
"""
