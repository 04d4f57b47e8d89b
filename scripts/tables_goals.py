"""The micro-benchmark goals as issue 28 counts them: the median of three runs.

One ``nox -s bench`` run of a module is noisy on a shared machine (a cheap-policy collector
share moves by a few points from run to run). The figure the goals are judged by is the
median of three alternating runs, so this table takes, per module, the newest three
invocations at the commit of its newest one, prints each run's figure and their median,
and says whether the median meets the goal. Fewer than three runs at that commit: the
runs there are, and the header says how many.

Registered in ``scripts/render_tables.py`` as ``micro-goals`` (README, below the micro table).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tables_bench import MICRO, _goal, load_jsonl, provenance

Record = dict[str, Any]

# (label, module, record name prefix, how to read the figure: "share" or "speed-up", goal)
GOAL_ROWS: list[tuple[str, str, str, str, float]] = [
    ("Collector / raw loop, cheap policy function", "bench_collector",
     "tdrl / raw loop, cheap policy", "share", 0.70),
    ("Collector / raw loop, the same MLP policy", "bench_collector",
     "tdrl / raw loop, same MLP", "share", 0.70),
    ("Collector / raw loop, random actions", "bench_collector",
     "tdrl / raw loop, random", "share", 0.75),
    ("Build `Batch` + add, float32, ids list, vs Tianshou", "bench_step",
     "build Batch + add, float32, ids list", "speed-up", 3.0),
    ("Build `Batch` from 8 envs' numpy, vs Tianshou", "bench_step",
     "build Batch, 8 envs (6 arrays", "speed-up", 1.0),
]  # fmt: skip


def newest_runs(records: Sequence[Record], module: str, n: int = 3) -> list[list[Record]]:
    """The records of ``module``'s newest ``n`` invocations at the commit of its newest
    one, oldest first, one list per invocation."""
    mine = [r for r in records if r["module"] == module]
    if not mine:
        return []
    commit = max(mine, key=lambda r: r["invocation"])["commit"]
    invocations = sorted({r["invocation"] for r in mine if r["commit"] == commit})[-n:]
    return [[r for r in mine if r["invocation"] == inv] for inv in invocations]


def _figure(run: list[Record], prefix: str, how: str) -> float | None:
    for r in run:
        if r["name"].startswith(prefix):
            return float(r["share"]) if how == "share" else r["peer_s"] / r["tdrl_s"]
    return None


def _cell(x: float, how: str) -> str:
    return f"{x:.1%}" if how == "share" else f"{x:.2f}×"


def render_micro_goals(path: Path | None = None) -> str:
    """The goal rows of :data:`GOAL_ROWS`: each of the newest three runs and the median."""
    records = load_jsonl(path or MICRO, "python -m benchmarks collector step")
    lines = ["| what | run 1 | run 2 | run 3 | median | goal |", "|---|---|---|---|---|---|"]
    used: list[Record] = []
    for label, module, prefix, how, goal in GOAL_ROWS:
        runs = newest_runs(records, module)
        figures = [x for x in (_figure(run, prefix, how) for run in runs) if x is not None]
        if not figures:
            raise SystemExit(f"{module}: expected a record named {prefix!r}..., none")
        used += [r for run in runs for r in run if r["name"].startswith(prefix)]
        cells = [_cell(x, how) for x in figures] + ["–"] * (3 - len(figures))
        median = statistics.median(figures)
        verdict = _goal([median], goal, pct=how == "share")
        lines.append(f"| {label} | {' | '.join(cells)} | {_cell(median, how)} | {verdict} |")
    extra = ", the newest three runs of each module at one commit"
    return "\n".join(lines) + "\n\n" + provenance(used, extra)


RENDERERS = {"micro-goals": render_micro_goals}
"""The renderers this module adds to ``scripts/render_tables.py``."""
