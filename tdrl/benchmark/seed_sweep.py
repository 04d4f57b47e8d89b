"""Seed sweeps to a threshold: train each preset on seeds ``0 .. N-1`` and record whether
it reaches its stop threshold, and after how many steps.

A preset is *done* when at least 4 of 5 seeds reach the registry's stop threshold. Every
run goes in its own process (``--workers`` at a time) and appends one JSON line to
``--out`` (default ``sweeps/results.jsonl``): ``algo``, ``task``, ``seed``, ``threshold``,
``best_reward``, ``reached``, ``env_step``, ``gradient_step``, ``seconds`` and ``commit``
(:func:`~tdrl.benchmark.provenance.source_commit`). Re-running
the same command skips the runs already recorded, so an interrupted sweep resumes where it
stopped. :func:`seed_table` renders the records as the Markdown table of the README.

Where :mod:`tdrl.benchmark.runner` trains a fixed env-step budget and never stops early
(learning curves, ``tdrl report``), a run here stops at the threshold: its steps are the
steps to the threshold. Front ends: ``tdrl bench --to-threshold ALGO:TASK ...``,
``tdrl report --seed-table [FILE]`` and ``python scripts/seed_sweep.py`` (the same flags)::

    tdrl bench --to-threshold dqn:CartPole-v1 ppo:CartPole-v1 --workers 2
    tdrl report --seed-table sweeps/results.jsonl

Offline and imitation algorithms learn from ``--dataset FILE.hdf5`` (or ``minari:NAME``);
``--threshold X`` stops each run at ``X`` and judges it by ``X`` instead of the task's stop
threshold. ``ALGO+icm`` trains ``ALGO`` with the intrinsic curiosity module.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tdrl.benchmark.provenance import source_commit

__all__ = [
    "DEFAULT_OUT",
    "load_records",
    "main",
    "reached_runs",
    "run_to_threshold",
    "seed_table",
    "sweep",
]

DEFAULT_OUT = Path("sweeps/results.jsonl")


def run_to_threshold(
    algo: str, task: str, seed: int, dataset: str | None = None, threshold: float | None = None
) -> dict[str, Any]:
    """Train ``algo`` on ``task`` with ``seed`` in this process until the threshold (or the
    preset's budget); return the run's record (``dataset``: what an offline algorithm
    learns from; ``threshold``: the stop and success threshold instead of the task's).
    ``ALGO+icm`` trains ``ALGO`` wrapped in the intrinsic curiosity module."""
    import torch

    from tdrl.experiment import ExperimentConfig, run_experiment
    from tdrl.presets import stop_threshold

    torch.set_num_threads(1)  # small networks: more threads only contend with other runs
    with tempfile.TemporaryDirectory() as tmp:
        base, icm = (algo[: -len("+icm")], True) if algo.endswith("+icm") else (algo, False)
        cfg = ExperimentConfig(
            algo=base,
            task=task,
            seed=seed,
            logger="none",
            log_dir=tmp,
            show_progress=False,
            plot=False,
            dataset=dataset,
            stop_reward=threshold,
            icm=icm,
        )
        start = time.perf_counter()
        result, _ = run_experiment(cfg)
        seconds = time.perf_counter() - start
    if threshold is None:
        threshold = stop_threshold(task)
    return {
        "algo": algo,
        "task": task,
        "seed": seed,
        "threshold": threshold,
        "best_reward": float(result.best_reward),
        # a threshold counts as reached only by a test after the first gradient step
        "best_trained_reward": float(result.best_trained_reward),
        "reached": threshold is not None and result.best_trained_reward >= threshold,
        "env_step": int(result.env_step),
        "gradient_step": int(getattr(result, "gradient_step", 0) or 0),
        "seconds": round(seconds, 1),
        "commit": source_commit(),
    }


def load_records(out: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records in the JSON-lines file ``out`` (none if it does not exist)."""
    path = Path(out)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def reached_runs(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records that reached their threshold after training began (a record from
    before ``best_trained_reward`` was kept can hold a "success" at 0 gradient steps).

    >>> reached_runs([{"reached": True, "gradient_step": 0}, {"reached": True}])
    [{'reached': True}]
    """
    return [r for r in records if r["reached"] and r.get("gradient_step", 1) > 0]


def seed_table(records: list[dict[str, Any]]) -> str:
    """A Markdown table: per preset, seeds reaching the threshold, median steps and time.

    >>> rec = {"algo": "dqn", "task": "CartPole-v1", "threshold": 195.0, "reached": True,
    ...        "env_step": 100, "gradient_step": 10, "seconds": 1.0}
    >>> print(seed_table([{**rec, "seed": s} for s in range(5)]).splitlines()[-1])
    | dqn | CartPole-v1 | 195.0 | 5/5 | 100 env | 1.0 | yes |
    >>> untrained = {**rec, "seed": 4, "env_step": 0, "gradient_step": 0}
    >>> print(seed_table([{**rec, "seed": s} for s in range(4)] + [untrained]).splitlines()[-1])
    | dqn | CartPole-v1 | 195.0 | 4/5 | 100 env | 1.0 | yes |
    """
    rows = [
        "| algorithm | task | threshold | seeds reaching it | steps (median) "
        "| seconds (median) | done |",
        "|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["algo"], r["task"]), []).append(r)
    for (algo, task), rs in sorted(groups.items()):
        ok = reached_runs(rs)
        # online runs count env steps; offline runs (no env step) gradient steps
        offline = all(r["env_step"] == 0 for r in rs)
        unit, key = ("gradient", "gradient_step") if offline else ("env", "env_step")
        steps = statistics.median(r.get(key, 0) for r in ok) if ok else float("nan")
        secs = statistics.median(r["seconds"] for r in ok) if ok else float("nan")
        done = "yes" if len(rs) >= 5 and len(ok) >= 4 else "no"
        rows.append(
            f"| {algo} | {task} | {rs[0]['threshold']} | {len(ok)}/{len(rs)} "
            f"| {steps:,.0f} {unit} | {secs:.1f} | {done} |"
        )
    return "\n".join(rows)


def _run_in_process(
    job: tuple[str, str, int], out: Path, dataset: str | None, threshold: float | None
) -> None:
    """Run one (algo, task, seed) in a fresh Python process; append its record to ``out``
    and print one line (a failure: its stderr's tail, nothing recorded)."""
    algo, task, seed = job
    cmd = [sys.executable, "-m", "tdrl.benchmark.seed_sweep", "--one", algo, task, str(seed)]
    if dataset is not None:
        cmd += ["--dataset", dataset if dataset.startswith("minari:") else os.path.abspath(dataset)]
    if threshold is not None:
        cmd += ["--threshold", str(threshold)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        print(f"{algo} {task} seed {seed}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
        return
    with out.open("a") as f:
        f.write(lines[-1] + "\n")
    rec = json.loads(lines[-1])
    print(
        f"{algo} {task} seed {seed}: best {rec['best_reward']:.1f} "
        f"({'reached' if rec['reached'] else 'missed'}), {rec['env_step']} steps, "
        f"{rec['seconds']} s",
        flush=True,
    )


def sweep(
    presets: list[tuple[str, str]],
    seeds: int = 5,
    workers: int = 2,
    out: str | os.PathLike[str] = DEFAULT_OUT,
    dataset: str | None = None,
    threshold: float | None = None,
) -> list[dict[str, Any]]:
    """Run the (algo, task) ``presets`` on seeds ``0 .. seeds-1`` that ``out`` has no
    record of yet, ``workers`` at a time, each in its own process; return all records."""
    path = Path(out)
    done = {(r["algo"], r["task"], r["seed"]) for r in load_records(path)}
    todo = [(a, t, s) for a, t in presets for s in range(seeds) if (a, t, s) not in done]
    path.parent.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda job: _run_in_process(job, path, dataset, threshold), todo))
    return load_records(path)


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The seed sweep's command line (``scripts/seed_sweep.py``'s, ``tdrl bench
    --to-threshold``'s)."""
    parser = argparse.ArgumentParser(prog=prog, description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("presets", nargs="*", help="ALGO:TASK pairs")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (default 5)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--table", action="store_true", help="print the results table")
    parser.add_argument("--dataset", default=None, help="offline algorithms: FILE.hdf5")
    parser.add_argument("--threshold", type=float, default=None, help="instead of the task's")
    parser.add_argument("--one", nargs=3, metavar=("ALGO", "TASK", "SEED"), help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Parse the command line; run the missing (algo, task, seed) runs, then print the
    table (``--table``: only print it). 0 on success, 2 on a bad ``ALGO:TASK``."""
    args = build_parser(prog).parse_args(argv)
    if args.one:
        algo, task, seed = args.one
        rec = run_to_threshold(algo, task, int(seed), args.dataset, args.threshold)
        print(json.dumps(rec))
        return 0
    if args.table:
        print(seed_table(load_records(args.out)))
        return 0
    presets = []
    for spec in args.presets:
        if ":" not in spec:
            print(f"preset: expected ALGO:TASK, got {spec!r}", file=sys.stderr)
            return 2
        algo, task = spec.split(":", 1)
        presets.append((algo, task))
    records = sweep(presets, args.seeds, args.workers, args.out, args.dataset, args.threshold)
    print(seed_table(records))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
