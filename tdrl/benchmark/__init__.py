"""Benchmark sweeps: many algorithm x task x seed runs, resumable, with a report.

* :mod:`tdrl.benchmark.plan`: the runs of a sweep, their budgets and directories;
* :mod:`tdrl.benchmark.runner`: one run in one process (launcher, logs, checkpoints);
* :mod:`tdrl.benchmark.pool`: the local worker pool and the sweep's progress display;
* :mod:`tdrl.benchmark.ray_backend`: the same runs as Ray tasks;
* :mod:`tdrl.benchmark.report`: ``report.md`` (rliable IQM) and ``curves.png``;
* :mod:`tdrl.benchmark.seed_sweep`: the other sweep, each run to its task's threshold, one
  JSON line per run (reached or not, the steps it took) and the README's seed table.

``tdrl bench ...`` (:mod:`tdrl.cli.bench`; ``tdrl bench --to-threshold ...`` for the
seed sweep) and ``tdrl report DIR`` (``tdrl report --seed-table [FILE]``;
:mod:`tdrl.cli.report`) are the command-line front ends; ``docs/benchmark.md`` the
guide. ``scripts/seed_sweep.py`` and ``benchmarks/run_mujoco_sweep.sh`` are thin callers.
"""

from __future__ import annotations

from tdrl.benchmark.plan import RunSpec, epochs_for_budget, plan_sweep
from tdrl.benchmark.pool import SweepResult, run_sweep
from tdrl.benchmark.report import load_runs, write_report

__all__ = [
    "RunSpec",
    "SweepResult",
    "epochs_for_budget",
    "load_runs",
    "plan_sweep",
    "run_sweep",
    "write_report",
]
