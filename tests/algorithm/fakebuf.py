"""Buffer helpers for the algorithm tests (the real tdrl buffers, plus a spy for PER)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tdrl.data.buffer import VectorReplayBuffer
from tdrl.data.buffer.prio import PrioritizedVectorReplayBuffer


def FakeVectorBuffer(total_size: int, buffer_num: int = 1) -> VectorReplayBuffer:
    """A real ``VectorReplayBuffer`` (the name predates the real buffer)."""
    return VectorReplayBuffer(total_size, buffer_num)


class FakePrioBuffer(PrioritizedVectorReplayBuffer):
    """A prioritized buffer that records the priorities an algorithm writes back."""

    def __init__(self, total_size: int, buffer_num: int = 1) -> None:
        super().__init__(total_size, buffer_num, alpha=0.6, beta=0.4)
        self.updates: list[tuple[np.ndarray, Any]] = []

    def update_weight(self, index: Any, new_weight: Any) -> None:
        self.updates.append((np.asarray(index), new_weight))
        super().update_weight(index, new_weight)


def episode_buffer(obs_dim: int, act_dim: int, n: int, seed: int = 0) -> VectorReplayBuffer:
    """A 2-env buffer of ``n`` random continuous transitions, episodes of 5 steps."""
    from tdrl.data.batch import Batch

    rng = np.random.default_rng(seed)
    buf = VectorReplayBuffer(2 * n, 2)
    for t in range(n // 2):
        done = (t % 5) == 4
        buf.add(
            Batch(
                obs=rng.standard_normal((2, obs_dim)).astype(np.float32),
                act=rng.uniform(-1, 1, (2, act_dim)).astype(np.float32),
                rew=rng.standard_normal(2).astype(np.float32),
                terminated=np.array([done, False]),
                truncated=np.array([False, done]),
                obs_next=rng.standard_normal((2, obs_dim)).astype(np.float32),
            ),
            buffer_ids=np.arange(2),
        )
    return buf
