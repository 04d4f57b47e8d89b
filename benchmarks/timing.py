"""Timing helpers shared by the benchmark modules, and the results records they write.

Each row a module prints is also handed to :func:`record`, which, while
:func:`recording` is active (``python -m benchmarks`` turns it on), appends one JSON
object per line to a results file: the row's numbers plus the commit
(:func:`tdrl.benchmark.provenance.source_commit`), the UTC date, the 1-minute load
average and the machine. ``scripts/tables_bench.py`` renders the README's and docs'
tables from those files.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
"""Where the committed results files live (``benchmarks/results``)."""

_SINK: dict[str, Any] = {}
"""The active recording: ``path`` and the fields every record carries (empty: off)."""


def machine() -> dict[str, Any]:
    """The CPU model (``/proc/cpuinfo``'s first ``model name``) and the usable cores."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": cpu, "cores": cores}


@contextlib.contextmanager
def recording(path: Path | None, **fields: Any) -> Iterator[None]:
    """Append every :func:`record` made in the block to ``path`` (``None``: record nothing),
    each record carrying ``fields`` (e.g. the command and the module) and the provenance."""
    if path is None:
        yield
        return
    from tdrl.benchmark.provenance import source_commit

    previous = dict(_SINK)
    _SINK.clear()
    _SINK.update(path=path, fields={**fields, "commit": source_commit(), "machine": machine()})
    try:
        yield
    finally:
        _SINK.clear()
        _SINK.update(previous)


def record(name: str, **values: Any) -> None:
    """Append one results record (``name`` and ``values``) to the active recording's file,
    stamped with the UTC date and the 1-minute load average; a no-op outside
    :func:`recording`."""
    if not _SINK:
        return
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    rec = {**_SINK["fields"], "name": name, **values, "date": now, "load1": os.getloadavg()[0]}
    path: Path = _SINK["path"]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(rec) + "\n")


def command_line() -> str:
    """The command this process runs, as one would type it (``python -m ...``)."""
    argv = list(sys.argv)
    if argv and argv[0].endswith("__main__.py"):
        argv[0] = "-m " + Path(argv[0]).parent.name
    return " ".join(["python", *argv])


LANE_PAUSE_LOCK = Path(__file__).resolve().parent / "long" / "pause.lock"
"""Held while a timing benchmark runs: the long-run lane (``benchmarks/long``) stops its
runs meanwhile, so they never skew a speed figure."""


_LANE_PAUSE_DEPTH = [0]
"""How many :func:`lane_paused` blocks this process is inside (the lock is taken once)."""


@contextlib.contextmanager
def lane_paused() -> Iterator[None]:
    """Pause the long-run lane while the block runs (an exclusive ``flock`` on
    :data:`LANE_PAUSE_LOCK`; released when the block ends or the process dies).

    Re-entrant: a block inside another (``python -m benchmarks`` running a module that
    pauses the lane itself, such as ``bench_mujoco`` or ``bench_peers``) holds nothing more.
    A second ``flock`` from the same process on a new file description would wait for the
    first forever.
    """
    if _LANE_PAUSE_DEPTH[0]:
        _LANE_PAUSE_DEPTH[0] += 1
        try:
            yield
        finally:
            _LANE_PAUSE_DEPTH[0] -= 1
        return
    LANE_PAUSE_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with LANE_PAUSE_LOCK.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        _LANE_PAUSE_DEPTH[0] = 1
        try:
            time.sleep(3)  # the lane polls every 2 s: its runs are stopped before timing starts
            yield
        finally:
            _LANE_PAUSE_DEPTH[0] = 0
            fcntl.flock(f, fcntl.LOCK_UN)


def best_of(fn: Callable[[], object], number: int, repeat: int = 5) -> float:
    """Return the best mean seconds per call of ``fn`` over ``repeat`` runs of ``number`` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def best_of_alternating(
    fns: list[Callable[[], object]], number: int, repeat: int = 15
) -> list[float]:
    """Best mean seconds per call of each of ``fns``, their runs interleaved.

    Run ``k`` of every function happens before run ``k + 1`` of any, so a slow phase of a
    shared machine (other processes on the cores) hits all sides alike.
    """
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            best[i] = min(best[i], (time.perf_counter() - start) / number)
    return best


def row(
    name: str,
    tdrl_s: float,
    peer_s: float,
    unit: str = "us",
    goal: float | None = None,
    labels: tuple[str, str] = ("tdrl", "tianshou"),
) -> str:
    """Format one table row: both timings, the speed-up of tdrl over the peer (and its goal);
    the row is also recorded (:func:`record`)."""
    record(name, tdrl_s=tdrl_s, peer_s=peer_s, unit=unit, goal=goal, labels=list(labels))
    scale = 1e6 if unit == "us" else 1e3
    ratio = peer_s / tdrl_s if tdrl_s > 0 else float("inf")
    line = (
        f"{name:<48} {labels[0]} {tdrl_s * scale:10.1f} {unit}   "
        f"{labels[1]} {peer_s * scale:10.1f} {unit}   speed-up {ratio:6.2f}x"
    )
    if goal is not None:
        line += f"   goal >= {goal:g}x {'met' if ratio >= goal else 'NOT met'}"
    return line
