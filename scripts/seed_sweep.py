"""Seed sweep: train each preset on seeds 0-4 and record whether it reaches its threshold.

A preset is *done* when at least 4 of 5 seeds reach the registry's stop threshold. Every
run goes in its own process (``--workers`` at a time) and appends one JSON line to
``--out`` (default ``sweeps/results.jsonl``); re-running the same command skips the runs
already recorded, so an interrupted sweep resumes where it stopped. ``--table`` prints the
Markdown table the README's algorithm table is made from.

    python scripts/seed_sweep.py dqn:CartPole-v1 ppo:CartPole-v1 sac:Pendulum-v1
    python scripts/seed_sweep.py --table

Offline and imitation algorithms learn from ``--dataset FILE.hdf5`` (or ``minari:NAME``,
e.g. from ``tdrl gather sac Pendulum-v1``); ``--threshold X`` stops each run at ``X`` and
judges it by ``X`` instead of the task's stop threshold (the offline thresholds are weaker)::

    python scripts/seed_sweep.py bc:Pendulum-v1 --dataset sac-Pendulum-v1.hdf5 --threshold -400

The sweep itself is :mod:`tdrl.benchmark.seed_sweep`, also run as ``tdrl bench
--to-threshold ALGO:TASK ...`` (``tdrl report --seed-table`` prints the table); this
script is that command under its old name and flags.
"""

from __future__ import annotations

from tdrl.benchmark.seed_sweep import main

if __name__ == "__main__":
    raise SystemExit(main())
