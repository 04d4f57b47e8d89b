"""The per-step path of a collector or user: numpy arrays -> ``Batch`` -> buffer ``add``.

Eight environments' arrays (Hopper-sized: obs/obs_next 11 floats, act 3, rew, terminated,
truncated; ``info={}``) become a ``Batch``, which ``VectorReplayBuffer.add`` stores.

The goal row (issue 28) is the path exactly as a user writes it: float32 obs/act/rew, bool
flags, ``VectorReplayBuffer(100_000, 8).add(batch, buffer_ids=[0, ..., 7])`` (a list), the
medians of alternating rounds (tdrl, Tianshou, tdrl, ...), goal >= 3x. The other rows keep
the earlier form (float64 arrays from ``bench_buffer``, ``np.arange`` ids, best of the
alternating rounds) and the ``Batch``-only row its goal (issue 17: >= 1x).

Why the README once said 2.99x where a side-by-side check found 2.07x: the README row timed
float64 arrays with ``buffer_ids=np.arange(8)`` and kept the best round, on an idle
machine; the check passed ``buffer_ids`` as a list, which took ``add``'s general
validation path (10-15% of the whole step then), and compared medians on a loaded one
(each round short enough for one preemption to swing it).

    python -m benchmarks step
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from benchmarks.bench_buffer import N_ENV, _steps
from benchmarks.timing import best_of_alternating, row

GOAL_STEP = 3.0


def median_of_alternating(
    fns: list[Callable[[], object]], number: int, rounds: int = 25
) -> list[float]:
    """Median seconds per call of each of ``fns`` over ``rounds`` rounds; in each round every
    function runs ``number`` calls, one function after the other (so a slow phase of a
    shared machine hits all of them alike)."""
    times: list[list[float]] = [[] for _ in fns]
    for fn in fns:  # warm-up: caches, lazily built plans
        for _ in range(number):
            fn()
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            times[i].append((time.perf_counter() - start) / number)
    return [statistics.median(t) for t in times]


def load_average() -> str:
    """The 1-minute load average, for the rows that state their goal."""
    return f"load {os.getloadavg()[0]:.2f}"


def goal_steps(n: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """``n`` vector steps of 8 envs as the goal row builds them: float32 obs (11) / act (3)
    / rew, bool terminated / truncated, float32 obs_next."""
    rng = np.random.default_rng(seed)
    f32 = np.float32
    return [
        {
            "obs": rng.standard_normal((N_ENV, 11)).astype(f32),
            "act": rng.standard_normal((N_ENV, 3)).astype(f32),
            "rew": rng.standard_normal(N_ENV).astype(f32),
            "terminated": rng.random(N_ENV) < 0.02,
            "truncated": rng.random(N_ENV) < 0.005,
            "obs_next": rng.standard_normal((N_ENV, 11)).astype(f32),
        }
        for _ in range(n)
    ]


def main() -> None:
    """Print the Batch-construction and build+add rows with their goals."""
    torch.set_num_threads(1)
    from tianshou.data import Batch as TsBatch
    from tianshou.data import VectorReplayBuffer as TsVector

    from tdrl.data.batch import Batch
    from tdrl.data.buffer import VectorReplayBuffer

    counter = [0]

    def builder(steps: list[dict[str, np.ndarray]]) -> Callable[[type], Any]:
        def build(cls: type) -> Any:
            counter[0] += 1
            s = steps[counter[0] % len(steps)]
            return cls(
                obs=s["obs"],
                act=s["act"],
                rew=s["rew"],
                terminated=s["terminated"],
                truncated=s["truncated"],
                obs_next=s["obs_next"],
                info={},
            )

        return build

    # the goal row: the exact per-step path, medians of alternating rounds
    build = builder(goal_steps(512))
    ids = list(range(N_ENV))
    ours, theirs = VectorReplayBuffer(100_000, N_ENV, seed=0), TsVector(100_000, N_ENV)
    t_ours, t_theirs = median_of_alternating(
        [lambda: ours.add(build(Batch), ids), lambda: theirs.add(build(TsBatch), ids)],
        number=50,
        rounds=41,
    )
    print(
        row(
            "build Batch + add, float32, ids list (cap 1e5)",
            t_ours,
            t_theirs,
            goal=GOAL_STEP,
        )
        + f"   (medians of 41 alternating rounds; {load_average()})",
        flush=True,
    )

    build = builder(_steps(512))
    arange = np.arange(N_ENV)
    for cap in (10_000, 1_000_000):
        mine = VectorReplayBuffer(cap, N_ENV, seed=0)
        peer = TsVector(cap, N_ENV)
        t_ours, t_theirs = best_of_alternating(
            [lambda: build(Batch), lambda: build(TsBatch)], number=500, repeat=25
        )
        if cap == 10_000:
            print(row("build Batch, 8 envs (6 arrays, info={})", t_ours, t_theirs, goal=1.0))
        t_ours, t_theirs = best_of_alternating(
            [
                lambda buf=mine: buf.add(build(Batch), arange),  # type: ignore[misc]
                lambda buf=peer: buf.add(build(TsBatch), arange),  # type: ignore[misc]
            ],
            number=500,
            repeat=25,
        )
        print(row(f"build Batch + add, float64, best (cap {cap:.0e})", t_ours, t_theirs))


if __name__ == "__main__":
    main()
