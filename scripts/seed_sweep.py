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

DEFAULT_OUT = Path("sweeps/results.jsonl")


def run_one(
    algo: str, task: str, seed: int, dataset: str | None = None, threshold: float | None = None
) -> dict[str, Any]:
    """Train ``algo`` on ``task`` with ``seed`` in this process; return the record
    (``dataset``: what an offline algorithm learns from; ``threshold``: the stop and
    success threshold instead of the task's). ``ALGO+icm`` trains ``ALGO`` wrapped in the
    intrinsic curiosity module (``tdrl train ALGO TASK --icm``)."""
    import torch

    from tdrl.launch import ExperimentConfig, run_experiment
    from tdrl.registry import stop_threshold

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
        "reached": threshold is not None and result.best_reward >= threshold,
        "env_step": int(result.env_step),
        "gradient_step": int(getattr(result, "gradient_step", 0) or 0),
        "seconds": round(seconds, 1),
    }


def load(out: Path) -> list[dict[str, Any]]:
    """The records in ``out`` (none if it does not exist)."""
    if not out.exists():
        return []
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def table(records: list[dict[str, Any]]) -> str:
    """A Markdown table: per preset, seeds reaching the threshold, median steps and time."""
    rows = [
        "| algorithm | task | threshold | seeds reaching it | steps (median) "
        "| seconds (median) | done |",
        "|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["algo"], r["task"]), []).append(r)
    for (algo, task), rs in sorted(groups.items()):
        ok = [r for r in rs if r["reached"]]
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


def main(argv: list[str] | None = None) -> int:
    """Parse the command line; run the missing (algo, task, seed) runs or print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("presets", nargs="*", help="ALGO:TASK pairs")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (default 5)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--table", action="store_true", help="print the results table")
    parser.add_argument("--dataset", default=None, help="offline algorithms: FILE.hdf5")
    parser.add_argument("--threshold", type=float, default=None, help="instead of the task's")
    parser.add_argument("--one", nargs=3, metavar=("ALGO", "TASK", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        algo, task, seed = args.one
        print(json.dumps(run_one(algo, task, int(seed), args.dataset, args.threshold)))
        return 0
    if args.table:
        print(table(load(args.out)))
        return 0
    done = {(r["algo"], r["task"], r["seed"]) for r in load(args.out)}
    todo = []
    for spec in args.presets:
        if ":" not in spec:
            print(f"preset: expected ALGO:TASK, got {spec!r}", file=sys.stderr)
            return 2
        algo, task = spec.split(":", 1)
        todo += [(algo, task, s) for s in range(args.seeds) if (algo, task, s) not in done]
    args.out.parent.mkdir(parents=True, exist_ok=True)

    def launch(job: tuple[str, str, int]) -> None:
        algo, task, seed = job
        cmd = [sys.executable, __file__, "--one", algo, task, str(seed)]
        if args.dataset is not None:
            minari = args.dataset.startswith("minari:")
            cmd += ["--dataset", args.dataset if minari else os.path.abspath(args.dataset)]
        if args.threshold is not None:
            cmd += ["--threshold", str(args.threshold)]
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or not lines:
            print(f"{algo} {task} seed {seed}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
            return
        with args.out.open("a") as f:
            f.write(lines[-1] + "\n")
        rec = json.loads(lines[-1])
        print(
            f"{algo} {task} seed {seed}: best {rec['best_reward']:.1f} "
            f"({'reached' if rec['reached'] else 'missed'}), {rec['env_step']} steps, "
            f"{rec['seconds']} s",
            flush=True,
        )

    with ThreadPoolExecutor(args.workers) as pool:
        list(pool.map(launch, todo))
    print(table(load(args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
