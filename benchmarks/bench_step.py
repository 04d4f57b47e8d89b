"""The per-step path of a collector or user: numpy arrays -> ``Batch`` -> buffer ``add``.

Eight environments' arrays (Hopper-sized: obs/obs_next 11 floats, act 3, rew, terminated,
truncated; ``info={}``) become a ``Batch``, which ``VectorReplayBuffer.add`` stores. Goals
(issue 17): the whole path >= 3x Tianshou's same path, building the ``Batch`` >= 1x. The
runs of both libraries are interleaved and the best of many is kept.

    python -m benchmarks step
"""

from __future__ import annotations

import numpy as np
import torch

from benchmarks.bench_buffer import N_ENV, _steps
from benchmarks.timing import best_of_alternating, row


def main() -> None:
    """Print the Batch-construction and build+add rows with their goals."""
    torch.set_num_threads(1)
    from tianshou.data import Batch as TsBatch
    from tianshou.data import VectorReplayBuffer as TsVector

    from tdrl.data.batch import Batch
    from tdrl.data.buffer import VectorReplayBuffer

    steps = _steps(512)
    ids = np.arange(N_ENV)
    counter = [0]

    def build(cls: type) -> object:
        counter[0] += 1
        s = steps[counter[0] % 512]
        return cls(
            obs=s["obs"],
            act=s["act"],
            rew=s["rew"],
            terminated=s["terminated"],
            truncated=s["truncated"],
            obs_next=s["obs_next"],
            info={},
        )

    for cap in (10_000, 1_000_000):
        ours = VectorReplayBuffer(cap, N_ENV, seed=0)
        theirs = TsVector(cap, N_ENV)
        t_ours, t_theirs = best_of_alternating(
            [lambda: build(Batch), lambda: build(TsBatch)], number=500, repeat=25
        )
        if cap == 10_000:
            print(row("build Batch, 8 envs (6 arrays, info={})", t_ours, t_theirs, goal=1.0))
        t_ours, t_theirs = best_of_alternating(
            [
                lambda buf=ours: buf.add(build(Batch), ids),  # type: ignore[misc]
                lambda buf=theirs: buf.add(build(TsBatch), ids),  # type: ignore[misc]
            ],
            number=500,
            repeat=25,
        )
        print(row(f"build Batch + add, 8 envs (cap {cap:.0e})", t_ours, t_theirs, goal=3.0))


if __name__ == "__main__":
    main()
