"""Batch benchmark: construction, indexing, stack / cat / split, tdrl against Tianshou.

/opt/tsenv/bin/python -m benchmarks batch
"""

from __future__ import annotations

import numpy as np
import torch

from benchmarks.timing import best_of, row
from tdrl.data.batch import Batch


def _transition(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "obs": rng.normal(size=(n, 4)).astype(np.float32),
        "act": rng.integers(0, 2, n),
        "rew": rng.normal(size=n),
        "terminated": rng.random(n) > 0.9,
        "truncated": np.zeros(n, dtype=bool),
        "obs_next": rng.normal(size=(n, 4)).astype(np.float32),
    }


def main() -> None:
    """Time tdrl's and Tianshou's Batch on identical inputs and print one row per case."""
    torch.set_num_threads(1)
    from tianshou.data import Batch as TBatch

    rng = np.random.default_rng(0)
    small = _transition(8, rng)
    big = _transition(256, rng)
    big_t = {k: torch.from_numpy(v) for k, v in big.items()}
    nested = {**small, "info": {"env_id": np.arange(8), "x": np.zeros(8)}}
    n_rep = 2000

    def pair(name: str, ours: object, theirs: object, number: int = n_rep) -> None:
        print(row(name, best_of(ours, number), best_of(theirs, number)), flush=True)  # type: ignore[arg-type]

    pair("construct 8 envs (6 numpy keys)", lambda: Batch(**small), lambda: TBatch(**small))
    pair("construct nested info (8 envs)", lambda: Batch(**nested), lambda: TBatch(**nested))
    pair("construct 256 rows (numpy)", lambda: Batch(**big), lambda: TBatch(**big))
    pair(
        "construct 256 rows (tdrl: tensors + batch_size)",
        lambda: Batch(big_t, batch_size=[256]),
        lambda: TBatch(**big),
    )

    data = _transition(10_000, rng)
    ours_big, theirs_big = Batch(**data), TBatch(**data)
    idx = rng.integers(0, 10_000, 256)
    idx_t = torch.from_numpy(idx)
    pair("index 256 random rows of 10k", lambda: ours_big[idx_t], lambda: theirs_big[idx])
    pair("slice 256 rows of 10k", lambda: ours_big[100:356], lambda: theirs_big[100:356])
    pair("attribute read b.obs", lambda: ours_big.obs, lambda: theirs_big.obs, 20_000)

    members_o = [Batch(**_transition(1, rng)) for _ in range(100)]
    members_t = [TBatch(**{k: v for k, v in m.to_numpy().items()}) for m in members_o]
    pair(
        "stack 100 one-row Batches",
        lambda: Batch.stack(members_o),
        lambda: TBatch.stack(members_t),
        50,
    )
    chunks_o = [Batch(**_transition(1000, rng)) for _ in range(10)]
    chunks_t = [TBatch(**c.to_numpy()) for c in chunks_o]
    pair(
        "cat 10 Batches of 1000 rows", lambda: Batch.cat(chunks_o), lambda: TBatch.cat(chunks_t), 50
    )
    pair(
        "split 10k rows into 64s (shuffle)",
        lambda: list(ours_big.split(64, shuffle=True)),
        lambda: list(theirs_big.split(64, shuffle=True)),
        10,
    )


if __name__ == "__main__":
    main()
