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
