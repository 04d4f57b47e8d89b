"""Seed sweep of the tic-tac-toe recipe: does DQN, moving first, beat a random player?

Each seed trains ``recipes/tictactoe_dqn.py`` in its own process, then plays 200 greedy
games against the random player; a seed *reaches* the bar when it wins at least 90% of
them. One JSON line per seed goes to ``--out`` (default ``sweeps/multiagent.jsonl``, in
``scripts/seed_sweep.py``'s record format, ``best_reward`` being the win rate); seeds
already recorded are skipped, so an interrupted sweep resumes.

    python scripts/tictactoe_sweep.py               # seeds 0-4
    python scripts/tictactoe_sweep.py --seeds 0 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ALGO, TASK, THRESHOLD, GAMES = "dqn (multi-agent)", "tictactoe_v3 vs random", 0.9, 200
ROOT = Path(__file__).resolve().parents[1]


def run_one(seed: int) -> dict[str, Any]:
    """Train with ``seed`` in this process and return the record."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "tictactoe_dqn", ROOT / "recipes/tictactoe_dqn.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with tempfile.TemporaryDirectory() as tmp:
        args = mod.get_args(["--seed", str(seed), "--path", str(Path(tmp) / "w.pt")])
        start = time.perf_counter()
        agents, result = mod.train(args)
        seconds = time.perf_counter() - start
    rates = mod.evaluate(agents, GAMES, seed=seed + 1000)
    return {
        "algo": ALGO,
        "task": TASK,
        "seed": seed,
        "threshold": THRESHOLD,
        "best_reward": rates["win"],
        "draw": rates["draw"],
        "loss": rates["loss"],
        "reached": rates["win"] >= THRESHOLD,
        "env_step": int(result.env_step),
        "gradient_step": int(result.gradient_step),
        "seconds": round(seconds, 1),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2, 3, 4])
    p.add_argument("--out", type=Path, default=Path("sweeps/multiagent.jsonl"))
    p.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one is not None:  # the child process
        print(json.dumps(run_one(args.one)))
        return 0
    done = set()
    if args.out.exists():
        for line in args.out.read_text().splitlines():
            rec = json.loads(line)
            if rec["algo"] == ALGO and rec["task"] == TASK:
                done.add(rec["seed"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    records = []
    for seed in args.seeds:
        if seed in done:
            continue
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        out = subprocess.run(
            [sys.executable, "-W", "ignore", __file__, "--one", str(seed)],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            check=True,
        )
        rec = json.loads(out.stdout.strip().splitlines()[-1])
        records.append(rec)
        with args.out.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        print(
            f"seed {seed}: win {rec['best_reward']:.1%} draw {rec['draw']:.1%} "
            f"loss {rec['loss']:.1%} reached={rec['reached']} env_step={rec['env_step']} "
            f"{rec['seconds']} s",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
