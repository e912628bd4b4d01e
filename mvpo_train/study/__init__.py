"""Studies: arms x seeds of ``mvpo-train`` runs, resumed and analysed (docs/learning_study.md).

The env-neutral harness behind the study scripts of ``benchmarks/`` (which define the envs,
arms and texts of each study: the trainer's package names no env):

* :mod:`mvpo_train.study.runs`: the run folders of a sweep (``<base>/<arm>-seed<k>/``), which
  runs are finished (their ``metrics.jsonl`` rows, read with
  :func:`mvpo_train.metrics.read_metrics`), the resume-or-overwrite rule (from
  :func:`mvpo_train.checkpoint.latest_checkpoint`), a run's ``mvpo-train`` command, the
  pending runs seed by seed, a settings fingerprint, and the local or Ray runner;
* :mod:`mvpo_train.study.archive`: the compact archive of a sweep (export, import, a
  checkpoint per unfinished run) that lets a study continue on another machine;
* :mod:`mvpo_train.stats`: every interval and rank statistic of the tables;
  :mod:`mvpo_train.study.summary`: per-arm intervals and paired differences over seeds;
* :mod:`mvpo_train.study.run_sets`: run sets on disk and the training diagnostics drawn from
  them (zero-advantage ratios, kappa, the potential's checks, time per phase);
  :mod:`mvpo_train.study.run_set_plot` their figure, :mod:`mvpo_train.study.run_set_report`
  the cells and tables of their markdown;
* :mod:`mvpo_train.study.arms`: arms given as ``[NAME=]ESTIMATOR:KEY=VALUE``;
* :mod:`mvpo_train.study.compact`: a run's compact ``result.json``, written from its metrics
  and read back only for the same arm and settings; :mod:`mvpo_train.study.result_summary`
  the table of such results (per-arm intervals and curves, paired differences);
* :mod:`mvpo_train.study.curves`: the learning-curve table (per-seed values from the runs,
  per-arm intervals, pairs) and its figure;
* the oracle-gain studies: :mod:`mvpo_train.study.gain_sweep` (their arms, the runner that
  condenses and archives each finished run), :mod:`mvpo_train.study.gain_table` (per-seed
  values, carried arms, pairs by seed, the product fit), :mod:`mvpo_train.study.gain_pages`
  (their pages) and :mod:`mvpo_train.study.curve_panels` (their figure: panels of arms'
  batch-success curves with their bands); :mod:`mvpo_train.study.cost_estimate` a study's
  CPU hours before it runs;
* how well a potential ranks progress steps: :mod:`mvpo_train.study.progress_sources`
  (labelled batches with progress-carrying signatures), :mod:`mvpo_train.study.option_alignment`
  (rows of estimator options scored per source, and the page),
  :mod:`mvpo_train.study.expert_alignment` (noisy-expert batches scored per variant),
  :mod:`mvpo_train.study.step_kinds` (the repair per step kind),
  :mod:`mvpo_train.study.estimator_cost` (an estimator option's milliseconds per batch);
* :mod:`mvpo_train.study.candidates`: policy candidates measured (success, an iteration, a
  short learning run, history layouts, the LM's scorers) and their tables;
  :mod:`mvpo_train.study.phase_tables` the CPU seconds per phase of an iteration, before and
  after;
  :mod:`mvpo_train.study.figures` what every figure shares (the backend, a row's band, saving);
* :mod:`mvpo_train.study.credit_mass`: where MVPO's advantage mass goes in a run's batch
  records;
* :mod:`mvpo_train.study.paired`: per-arm and paired intervals (t-based, bootstrap beside),
  their cells and JSON, and the settings record of a study's run folder (the oracle-gain
  studies);
* :mod:`mvpo_train.study.tables`: the tables' number formats and cells, the ``Machine:`` line
  kept by ``--analyze-only``, and the results writer (markdown + ``.json`` + ``.png``);
* :mod:`mvpo_train.study.tuning_grid`: the tuning grid over ``benchmarks/learning.py``.
* :mod:`mvpo_train.study.bench`: the speed and scale benchmarks' resumable results store
  (verified when read, replaced whole when written) and results pages (what they measure
  with: :mod:`mvpo_envs.measure`; their scale-table cells: :mod:`mvpo_envs.bench.scale_table`);
  :mod:`mvpo_train.study.synthetic` the synthetic rollout batch the estimators are timed on.
"""
