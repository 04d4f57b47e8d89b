"""Timing helpers shared by the benchmark modules."""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections.abc import Callable, Iterator
from pathlib import Path

LANE_PAUSE_LOCK = Path(__file__).resolve().parent / "long" / "pause.lock"
"""Held while a timing benchmark runs: the long-run lane (``benchmarks/long``) stops its
runs meanwhile, so they never skew a speed figure."""


@contextlib.contextmanager
def lane_paused() -> Iterator[None]:
    """Pause the long-run lane while the block runs (an exclusive ``flock`` on
    :data:`LANE_PAUSE_LOCK`; released when the block ends or the process dies)."""
    LANE_PAUSE_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with LANE_PAUSE_LOCK.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        time.sleep(3)  # the lane polls every 2 s: its runs are stopped before timing starts
        try:
            yield
        finally:
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
    """Format one table row: both timings, the speed-up of tdrl over the peer (and its goal)."""
    scale = 1e6 if unit == "us" else 1e3
    ratio = peer_s / tdrl_s if tdrl_s > 0 else float("inf")
    line = (
        f"{name:<48} {labels[0]} {tdrl_s * scale:10.1f} {unit}   "
        f"{labels[1]} {peer_s * scale:10.1f} {unit}   speed-up {ratio:6.2f}x"
    )
    if goal is not None:
        line += f"   goal >= {goal:g}x {'met' if ratio >= goal else 'NOT met'}"
    return line
