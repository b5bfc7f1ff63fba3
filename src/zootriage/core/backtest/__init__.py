"""The studies: one package, one pre-registered method, two registered studies as its parameterisations.

Shared by every study (one place each):

- ``config``: the configs (study 2 ``StudyConfig``, study 3 ``Study3Config``) and one loader
  (``load_config(path, study)``);
- ``splits``: the task images and their seeded draws; ``nets``, ``training``: models and training;
  ``probes``: the OOD probes (full, ``probe20``, few-shot) and the choice of C; ``measure``: one
  model's record;
- ``run``: the one runner and shard loop (``run_zoo``), resumable, with per-model records, per-epoch
  checkpoints and the cost check's epoch timing;
- ``stats``: the statistics (one Spearman ρ, permutation and exact sign-flip tests, bootstraps, Holm,
  pair tallies, admission, calibration); ``tables``, ``hypotheses``: recipe rows and the tests on them;
- ``report``: the report writer family (formatters, tables, ``results.json`` + figures + ``report.md``).

Study 2 (docs/study/PLAN.md): ``recipes``, ``analysis``, ``decision``, ``evidence``, ``figures``,
``study2_report``, ``run.run_study``; its corrected report ``recheck``, ``recheck_report``.
Study 3 (docs/study/PLAN-3.md): ``study3_models``, ``study3_recipes``, ``study3_run``,
``study3_analysis``, ``study3_decision`` (the plan's rule is ``core.defaults.plan3_decision``),
``study3_report``; its frozen rule ``freeze_rule``.
The methods on a user's zoo: study 3's ``on_runs3`` (the default of ``POST /v1/backtests``), study 2's
``on_runs`` (``method="preregistered"``, ``zootriage backtest``; ``csv_runs`` reads a CSV); the first
study's per-model method, kept for ``method="first-study"``: ``first_method``.
"""
