"""Timing helpers shared by the benchmark modules."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(fn: Callable[[], object], number: int, repeat: int = 5) -> float:
    """Return the best mean seconds per call of ``fn`` over ``repeat`` runs of ``number`` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def row(name: str, tdrl_s: float, peer_s: float, unit: str = "us") -> str:
    """Format one table row: both timings and the speed-up of tdrl over the peer."""
    scale = 1e6 if unit == "us" else 1e3
    ratio = peer_s / tdrl_s if tdrl_s > 0 else float("inf")
    return (
        f"{name:<48} tdrl {tdrl_s * scale:10.1f} {unit}   "
        f"tianshou {peer_s * scale:10.1f} {unit}   speed-up {ratio:6.2f}x"
    )
