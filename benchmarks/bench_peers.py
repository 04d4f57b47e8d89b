"""tdrl beside its peers: Tianshou 2.0.1, Stable-Baselines3 2.x, SBX (SB3 on JAX) and
TorchRL 0.14's own loss modules, collector and replay buffer, on the same rows.

=============  ===========  ============================  =========  ==========
row            task         env steps (warm-up + train)   test each  threshold
=============  ===========  ============================  =========  ==========
DQN            CartPole-v1  640 + 10,000                  1,000      195
PPO            CartPole-v1  0 + 20,000                    2,000      195
SAC            Pendulum-v1  1,000 + 5,000                 1,000      -250
SAC            Hopper-v5    1,000 + 10,000                5,000      --
=============  ===========  ============================  =========  ==========

Every library trains with tdrl's preset for the row (:mod:`benchmarks.peers.alignment`
lists each peer default that differs and how it was aligned). Each run is a fresh
process, pinned to one CPU with one torch thread (and, for SBX, XLA's CPU pool sized to
that CPU), that first runs the row once on a tiny budget, untimed, then the timed run;
libraries alternate within a round (the order reverses every round) and a round uses seed
= round. The primary figure is env steps per second at the fixed budget: all env steps
(random warm-up included) over the training wall time (tests excluded). Time to threshold
(training seconds until a test first reaches it) is reported beside it; it also mixes in
how many steps each library's algorithm needed. The summary gives the median over the
rounds and tdrl / peer. A run that fails is "n/a" with its reason, never a number.

Each run's record (commit, machine, versions, thread check, every test) is appended to
``benchmarks/results/peers/results.jsonl``; ``python scripts/render_tables.py`` renders the
README's ``peers`` table from the newest invocation of each row there.

    python -m benchmarks peers                      # the budgets above, 3 rounds
    python -m benchmarks.bench_peers --rounds 2 --rows dqn-cartpole,sac-pendulum \\
        --libs tdrl,sb3 --train-steps sac-pendulum=3000 --out /tmp/peers.jsonl
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from benchmarks.peers.core import (
    LIBRARIES,
    ROOT,
    ROWS,
    XLA_FLAGS,
    EvalLog,
    Row,
    git_commit,
    machine_info,
    pin_one_cpu,
    versions,
)

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "peers" / "results.jsonl"
ROUNDS = 3
RUN_TIMEOUT_S = 1800
"""A run still going after this long is stopped and recorded as n/a."""

MODULES: dict[str, str] = {
    "tdrl": "benchmarks.peers.tdrl_peer",
    "tianshou": "benchmarks.peers.tianshou_peer",
    "sb3": "benchmarks.peers.sb3_peer",
    "sbx": "benchmarks.peers.sb3_peer",
    "torchrl": "benchmarks.peers.torchrl_peer",
}
REQUIRES: dict[str, str] = {
    "tdrl": "tdrl",
    "tianshou": "tianshou",
    "sb3": "stable_baselines3",
    "sbx": "sbx",
    "torchrl": "torchrl",
}
"""The module each library's run imports (missing: the row is n/a, "not installed")."""

UNSUPPORTED: dict[tuple[str, str], str] = {}
"""``(library, row)`` pairs a peer cannot run, with the reason (none at present)."""


# ----------------------------------------------------------------------- one run (child)
def child_env(lib: str) -> dict[str, str]:
    """The environment of a run's process: one thread everywhere, XLA's flags set."""
    env = dict(os.environ)
    env.update(
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        XLA_FLAGS=XLA_FLAGS,
        RL_WARNINGS="0",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
    )
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def warmup_row(row: Row) -> Row:
    """The tiny untimed run before the timed one: a few collects and updates, one test."""
    algo_steps = {"dqn": 200, "ppo": 2000, "sac": 200}.get(row.algo, 200)
    return dataclasses.replace(
        row, warmup=min(row.warmup, 100), train_steps=algo_steps, eval_every=algo_steps
    )


def train_once(lib: str, row: Row, seed: int) -> tuple[int, EvalLog]:
    """Train ``row`` with ``lib`` in this process; (env steps, its log)."""
    module = importlib.import_module(MODULES[lib])
    log = EvalLog(row.threshold)
    kwargs = {"flavor": lib} if lib in ("sb3", "sbx") else {}
    steps = module.run(row, seed, log, **kwargs)
    return int(steps), log


def child(lib: str, row: Row, seed: int, cpu: int | None, warm: bool) -> dict[str, Any]:
    """The body of one run's process: pin, set threads, untimed warm-up, timed run."""
    chosen = pin_one_cpu(cpu)
    import torch

    torch.set_num_threads(1)
    if lib == "sbx":
        import jax

        jax.config.update("jax_platforms", "cpu")
    warm_s = 0.0
    if warm:
        begin = time.perf_counter()
        train_once(lib, warmup_row(row), seed + 1000)
        warm_s = time.perf_counter() - begin
    steps, log = train_once(lib, row, seed)
    reach = log.to_threshold(after=row.warmup + 1)
    return {
        "status": "ok",
        "env_steps": steps,
        "train_s": log.train_s,
        "eval_s": log.eval_s,
        "steps_per_s": steps / log.train_s,
        "time_to_threshold_s": None if reach is None else reach[0],
        "steps_to_threshold": None if reach is None else reach[1],
        "evals": [list(p) for p in log.points],
        "untimed_warmup_s": warm_s,
        "threads": {**log.threads, "torch_threads": torch.get_num_threads(), "cpu": chosen},
        "versions": versions(lib),
    }


def _child_main(argv: list[str]) -> int:
    """``--one LIB ROW_JSON SEED OUT [CPU|-] [warm|cold]``: run one and write its JSON."""
    lib, row_json, seed, out = argv[:4]
    cpu = None if len(argv) < 5 or argv[4] == "-" else int(argv[4])
    warm = len(argv) < 6 or argv[5] == "warm"
    row = Row(**json.loads(row_json))
    try:
        result = child(lib, row, int(seed), cpu, warm)
    except Exception as err:  # recorded as n/a with the reason, never as a number
        traceback.print_exc()
        result = {"status": "n/a", "reason": f"{type(err).__name__}: {err}"[:300]}
    Path(out).write_text(json.dumps(result))
    return 0


# ----------------------------------------------------------------------- the parent
def installed(lib: str) -> bool:
    """Whether ``lib``'s package can be imported (without importing it)."""
    import importlib.util

    return importlib.util.find_spec(REQUIRES[lib]) is not None


def run_one(
    lib: str,
    row: Row,
    seed: int,
    cpu: int | None = None,
    warm: bool = True,
    timeout: float = RUN_TIMEOUT_S,
) -> dict[str, Any]:
    """One run in a fresh process: its result, or an n/a with the reason."""
    if (lib, row.name) in UNSUPPORTED:
        return {"status": "n/a", "reason": UNSUPPORTED[(lib, row.name)]}
    if not installed(lib):
        return {"status": "n/a", "reason": f"{REQUIRES[lib]} not installed"}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [
            sys.executable, "-m", "benchmarks.bench_peers", "--one", lib,
            json.dumps(dataclasses.asdict(row)), str(seed), str(out),
            "-" if cpu is None else str(cpu), "warm" if warm else "cold",
        ]  # fmt: skip
        try:
            proc = subprocess.run(
                cmd, cwd=ROOT, env=child_env(lib), capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return {"status": "n/a", "reason": f"timed out after {timeout:.0f} s"}
        if out.is_file():
            result: dict[str, Any] = json.loads(out.read_text())
            if result["status"] != "ok":
                result["log_tail"] = proc.stderr[-2000:]
            return result
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"status": "n/a", "reason": f"exit {proc.returncode}: {tail[0][:300]}"}


def order(libs: list[str], round_: int) -> list[str]:
    """The libraries' order in round ``round_``: as given, reversed every other round.

    >>> order(["a", "b", "c"], 0), order(["a", "b", "c"], 1)
    (['a', 'b', 'c'], ['c', 'b', 'a'])
    """
    return list(libs) if round_ % 2 == 0 else list(reversed(libs))


def measure(
    rows: list[Row],
    libs: list[str],
    rounds: int,
    out: Path | None,
    cpu: int | None = None,
    warm: bool = True,
) -> list[dict[str, Any]]:
    """Run every row with every library for ``rounds`` alternating rounds; append each
    record to ``out`` as it finishes (and print it); return the records."""
    run_id = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    prov = git_commit()
    records = []
    for row in rows:
        for r in range(rounds):
            for lib in order(libs, r):
                machine = machine_info()
                begin = time.perf_counter()
                result = run_one(lib, row, seed=r, cpu=cpu, warm=warm)
                rec = {
                    "run_id": run_id,
                    "lib": lib,
                    "row": row.name,
                    "algo": row.algo,
                    "task": row.task,
                    "round": r,
                    "seed": r,
                    "threshold": row.threshold,
                    "budget": {
                        "warmup": row.warmup,
                        "train_steps": row.train_steps,
                        "eval_every": row.eval_every,
                        "eval_episodes": row.eval_episodes,
                    },
                    **prov,
                    "machine": machine,
                    "process_s": round(time.perf_counter() - begin, 1),
                    **result,
                }
                records.append(rec)
                if out is not None:
                    out.parent.mkdir(parents=True, exist_ok=True)
                    with out.open("a") as f:
                        f.write(json.dumps(rec) + "\n")
                print(_line(rec), flush=True)
    return records


def _line(rec: dict[str, Any]) -> str:
    head = f"{rec['row']:<13} {rec['lib']:<9} round {rec['round']}"
    if rec["status"] != "ok":
        return f"{head}: n/a: {rec.get('reason')}"
    ttt = rec["time_to_threshold_s"]
    reach = (
        ""
        if rec["threshold"] is None
        else (
            f", threshold at {ttt:.1f} s / {rec['steps_to_threshold']} steps"
            if ttt is not None
            else ", threshold not reached"
        )
    )
    t = rec["threads"]
    return (
        f"{head}: {rec['env_steps']} steps in {rec['train_s']:.1f} s = "
        f"{rec['steps_per_s']:.0f} steps/s{reach} (tests {rec['eval_s']:.1f} s; "
        f"cpu/wall {t.get('cpu_per_wall')}, busy threads {t.get('busy_threads')}, "
        f"load {rec['machine']['loadavg'][0]})"
    )


def parse_rows(names: str | None, train_steps: list[str]) -> list[Row]:
    """The rows named (all by default), with ``NAME=N`` training budgets applied.

    >>> [r.train_steps for r in parse_rows("dqn-cartpole,sac-hopper", ["sac-hopper=2000"])]
    [10000, 2000]
    """
    rows = [ROWS[n] for n in (names.split(",") if names else ROWS)]
    budgets: dict[str, int] = {}
    for item in train_steps:
        name, _, text = item.partition("=")
        if name not in ROWS or not text.isdigit():
            raise SystemExit(
                f"--train-steps: expected ROW=N with ROW in {list(ROWS)}, got {item!r}"
            )
        budgets[name] = int(text)
    out = []
    for row in rows:
        if row.name in budgets:
            n = budgets[row.name]
            row = dataclasses.replace(row, train_steps=n, eval_every=min(row.eval_every, n))
        out.append(row)
    return out


def main(argv: list[str] | None = None) -> None:
    """Measure and print the table (``python -m benchmarks peers`` calls this with the
    long-run lane already paused)."""
    from benchmarks.peers.alignment import notes_text
    from benchmarks.peers.table import markdown

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default=None, help=f"comma-separated, of {list(ROWS)}")
    parser.add_argument("--libs", default=",".join(LIBRARIES))
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--train-steps", action="append", default=[], metavar="ROW=N")
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    parser.add_argument("--cpu", type=int, default=None, help="the CPU to pin runs to")
    args = parser.parse_args([] if argv is None else argv)
    libs = args.libs.split(",")
    unknown = set(libs) - set(LIBRARIES)
    if unknown:
        raise SystemExit(f"--libs: expected some of {list(LIBRARIES)}, got {sorted(unknown)}")
    rows = parse_rows(args.rows, args.train_steps)
    print(notes_text(), flush=True)
    begin = time.perf_counter()
    records = measure(rows, libs, args.rounds, Path(args.out), cpu=args.cpu)
    print()
    print(markdown(records))
    print(f"(bench_peers took {time.perf_counter() - begin:.0f} s; records in {args.out})")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        sys.exit(_child_main(sys.argv[2:]))
    from benchmarks.timing import lane_paused

    with lane_paused():  # the long-run lane stops while anything is timed
        main(sys.argv[1:])
