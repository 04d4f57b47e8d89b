"""Run every ``benchmarks/bench_*.py`` (or those named on the command line).

Each module exposes ``main() -> None`` that times tdrl and Tianshou on identical inputs
and prints a table with the tdrl/Tianshou speed ratio.

    python -m benchmarks            # all
    python -m benchmarks batch      # only bench_batch.py
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import torch

import benchmarks
from benchmarks.timing import lane_paused


def main(argv: list[str]) -> None:
    """Import and run the selected benchmark modules in name order."""
    torch.set_num_threads(1)
    names = sorted(
        m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_")
    )
    wanted = [f"bench_{a}" if not a.startswith("bench_") else a for a in argv]
    with lane_paused():  # the long-run lane stops while anything is timed
        for name in names:
            if wanted and name not in wanted:
                continue
            print(f"\n=== {name} ===", flush=True)
            importlib.import_module(f"benchmarks.{name}").main()


if __name__ == "__main__":
    main(sys.argv[1:])
