"""Run every ``benchmarks/bench_*.py`` (or those named on the command line).

Each module exposes ``main() -> None`` that times tdrl and Tianshou on identical inputs
and prints a table with the tdrl/Tianshou speed ratio.

    python -m benchmarks            # all
    python -m benchmarks batch      # only bench_batch.py
    python -m benchmarks --out PATH batch   # its records to PATH instead
    BENCH_RESULTS=- python -m benchmarks batch   # print only, record nothing

Every row printed is also appended as a JSON record (the numbers, the commit, the UTC
date, the 1-minute load, the machine; :func:`benchmarks.timing.record`) to the module's
results file under ``benchmarks/results/`` (:data:`RESULTS_FILES`), or to ``--out`` /
``$BENCH_RESULTS`` when given (``-``: none). ``python scripts/render_tables.py`` renders
the README's and docs' tables from the committed files.
"""

from __future__ import annotations

import datetime
import importlib
import os
import pkgutil
import sys
from pathlib import Path

import torch

import benchmarks
from benchmarks.timing import RESULTS, command_line, lane_paused, recording

RESULTS_FILES: dict[str, Path] = {
    **{
        f"bench_{m}": RESULTS / "micro" / "results.jsonl"
        for m in ("batch", "buffer", "prio", "returns", "step", "collector", "env")
    },
    "bench_algorithm": RESULTS / "micro" / "results.jsonl",
    "bench_compile": RESULTS / "micro" / "results.jsonl",
    "bench_train": RESULTS / "train" / "results.jsonl",
    "bench_train_zoo": RESULTS / "zoo" / "results.jsonl",
    "bench_scaling": RESULTS / "scaling" / "results.jsonl",
    "bench_memory": RESULTS / "scaling" / "results.jsonl",
    "bench_roofline": RESULTS / "roofline" / "results.jsonl",
    "bench_floor": RESULTS / "floor" / "results.jsonl",
    "bench_atari": RESULTS / "atari" / "results.jsonl",
}
"""Each recording module's default results file (the others record nothing)."""


def _results_file(name: str, out: str | None) -> Path | None:
    if out is None:
        out = os.environ.get("BENCH_RESULTS")
    if out == "-":
        return None
    if out:
        return Path(out)
    return RESULTS_FILES.get(name)


def main(argv: list[str]) -> None:
    """Import and run the selected benchmark modules in name order, recording their rows."""
    out = None
    if argv[:1] == ["--out"]:
        if len(argv) < 2:
            raise SystemExit("python -m benchmarks: --out expects a path")
        out, argv = argv[1], argv[2:]
    torch.set_num_threads(1)
    names = sorted(
        m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_")
    )
    wanted = [f"bench_{a}" if not a.startswith("bench_") else a for a in argv]
    # one invocation: every record of this command shares it, so a table takes one run's rows
    invocation = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    command = command_line()
    with lane_paused():  # the long-run lane stops while anything is timed
        for name in names:
            if wanted and name not in wanted:
                continue
            print(f"\n=== {name} ===", flush=True)
            path = _results_file(name, out)
            with recording(path, command=command, invocation=invocation, module=name):
                importlib.import_module(f"benchmarks.{name}").main()


if __name__ == "__main__":
    main(sys.argv[1:])
