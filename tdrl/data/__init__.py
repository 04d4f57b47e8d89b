"""Data layer: ``Batch``, episode-aware replay buffers, collectors and their stats.

>>> from tdrl.data import Batch, VectorReplayBuffer, Collector
>>> Batch(obs=[1, 2]).shape
torch.Size([2])
"""

from tdrl.data.batch import Batch
from tdrl.data.buffer import (
    BufferKeyError,
    CachedReplayBuffer,
    HERReplayBuffer,
    HERVectorReplayBuffer,
    PrioritizedReplayBuffer,
    PrioritizedVectorReplayBuffer,
    ReplayBuffer,
    VectorReplayBuffer,
)
from tdrl.data.collector import AsyncCollector, Collector, NonFiniteError
from tdrl.data.stats import CollectStats, SequenceSummaryStats

__all__ = [
    "AsyncCollector",
    "Batch",
    "BufferKeyError",
    "CachedReplayBuffer",
    "CollectStats",
    "Collector",
    "HERReplayBuffer",
    "HERVectorReplayBuffer",
    "NonFiniteError",
    "PrioritizedReplayBuffer",
    "PrioritizedVectorReplayBuffer",
    "ReplayBuffer",
    "SequenceSummaryStats",
    "VectorReplayBuffer",
]
