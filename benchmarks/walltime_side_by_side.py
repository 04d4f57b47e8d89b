"""Wall time of tdrl vs Tianshou 2.0.1: short runs, alternating, on the same machine.

The long benchmark runs share the cores with other work, so their wall times say little
about speed. This script takes the ratio from short runs instead: for each algorithm, a
10k-env-step run of tdrl (``python -m tdrl.benchmark.runner``, as ``tdrl bench`` runs it)
then the same run with Tianshou (``benchmarks/mujoco_tianshou.py --one``: the same preset,
budget, warm-up cap, tests and seeds), alternating for ``--rounds`` rounds, each run in a
fresh process, one at a time, one torch thread. Run it on an otherwise idle machine::

    OMP_NUM_THREADS=1 python benchmarks/walltime_side_by_side.py [--algos sac,td3,ppo] \\
        [--task Hopper-v5] [--env-steps 10000] [--rounds 2] [--out DIR]

Per run the wall time is the one ``done.json`` records: from the start of the run (after
the interpreter's imports) to its end -- envs, networks, random warm-up, training, the
test after every epoch. Neither side writes checkpoints here (``tdrl bench`` writes one
per epoch, replay buffer included, to make runs resumable; Tianshou 2.0.1 has none). The
table gives the mean per library and the ratio tdrl / Tianshou (goal: <= 0.5). The runs'
directories (and their learning curves) stay under ``--out``. Each run is also appended as
a JSON record (with the commit, UTC date, load and machine) to ``--results`` (default
``benchmarks/results/walltime/results.jsonl``; ``-``: none), which
``scripts/render_tables.py`` renders into the README.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if not __package__:  # run as ``python benchmarks/walltime_side_by_side.py``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.timing import (
    RESULTS,
    command_line,
    lane_paused,
    record,
    recording,
)

HERE = Path(__file__).resolve().parent


def _run(library: str, algo: str, task: str, seed: int, steps: int, out: Path) -> float:
    """One run in a fresh process; its wall time (from its ``done.json``)."""
    from tdrl.benchmark.plan import DONE_FILE, SPEC_FILE, RunSpec, read_json, write_json

    spec = RunSpec(algo, task, seed, steps, str(out), "csv", library=library, checkpoint=False)
    d = spec.dir
    d.mkdir(parents=True, exist_ok=True)
    write_json(d / SPEC_FILE, {"library": library, "spec": spec.to_dict()})
    if library == "tdrl":
        cmd = [sys.executable, "-m", "tdrl.benchmark.runner", str(d)]
    else:
        cmd = [sys.executable, str(HERE / "mujoco_tianshou.py"), "--one", str(d)]
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    with open(d / "stdout.log", "ab") as log:
        subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, check=True)
    done = read_json(d / DONE_FILE)
    assert done is not None
    return float(done["wall_s"])


def main(argv: list[str] | None = None) -> int:
    """Run the alternating rounds and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algos", default="sac,td3,ppo")
    parser.add_argument("--task", default="Hopper-v5")
    parser.add_argument("--env-steps", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", default=None)
    parser.add_argument("--results", default=str(RESULTS / "walltime" / "results.jsonl"))
    args = parser.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="walltime-"))
    walls: dict[tuple[str, str], list[float]] = {}
    results = None if args.results == "-" else Path(args.results)
    invocation = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with (
        lane_paused(),  # the long-run lane stops while anything is timed
        recording(results, command=command_line(), invocation=invocation, module="walltime"),
    ):
        for algo in args.algos.split(","):
            for r in range(args.rounds):
                for library in ("tdrl", "tianshou"):  # alternating
                    start = time.perf_counter()
                    wall = _run(library, algo, args.task, r, args.env_steps, out / f"round{r}")
                    walls.setdefault((algo, library), []).append(wall)
                    record(
                        f"{algo} {library} round {r}",
                        algo=algo,
                        library=library,
                        round=r,
                        task=args.task,
                        env_steps=args.env_steps,
                        wall_s=wall,
                        process_s=time.perf_counter() - start,
                    )
                    print(
                        f"{algo} {library:<8} round {r}: {wall:7.1f} s "
                        f"(process {time.perf_counter() - start:.1f} s)",
                        flush=True,
                    )
    print(f"\n{args.task}, {args.env_steps} env steps per run, {args.rounds} rounds (seeds 0..)")
    print("| algorithm | tdrl (s) | Tianshou (s) | tdrl / Tianshou | goal <= 0.5 |")
    print("|---|---|---|---|---|")
    for algo in args.algos.split(","):
        a = statistics.mean(walls[(algo, "tdrl")])
        b = statistics.mean(walls[(algo, "tianshou")])
        met = "met" if a / b <= 0.5 else "NOT met"
        print(f"| {algo} | {a:.1f} | {b:.1f} | {a / b:.2f}x | {met} |")
    print(f"runs in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
