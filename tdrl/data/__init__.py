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
    SegmentTree,
    VectorReplayBuffer,
)
from tdrl.data.collector import AsyncCollector, Collector, NonFiniteError
from tdrl.data.convert import from_hdf5, to_hdf5, to_numpy, to_torch, to_torch_as
from tdrl.data.hooks import (
    EpisodeRolloutHook,
    EpisodeRolloutHookMCReturn,
    StepHook,
    episode_mc_return_to_go,
)
from tdrl.data.stats import CollectStats, SequenceSummaryStats, distribution_std

__all__ = [
    "AsyncCollector",
    "Batch",
    "BufferKeyError",
    "CachedReplayBuffer",
    "CollectStats",
    "Collector",
    "EpisodeRolloutHook",
    "EpisodeRolloutHookMCReturn",
    "HERReplayBuffer",
    "HERVectorReplayBuffer",
    "NonFiniteError",
    "PrioritizedReplayBuffer",
    "PrioritizedVectorReplayBuffer",
    "ReplayBuffer",
    "SegmentTree",
    "SequenceSummaryStats",
    "StepHook",
    "VectorReplayBuffer",
    "distribution_std",
    "episode_mc_return_to_go",
    "from_hdf5",
    "to_hdf5",
    "to_numpy",
    "to_torch",
    "to_torch_as",
]
