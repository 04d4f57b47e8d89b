"""Replay buffers: Tianshou's episode-aware buffers on TorchRL's storage/writer/sampler."""

from tdrl.data.buffer.base import ReplayBuffer
from tdrl.data.buffer.cached import CachedReplayBuffer
from tdrl.data.buffer.cached_storage import CachedSampler, CachedStorage, CachedWriter
from tdrl.data.buffer.her import HERReplayBuffer, HERVectorReplayBuffer
from tdrl.data.buffer.prio import (
    PrioritizedReplayBuffer,
    PrioritizedSampler,
    PrioritizedVectorReplayBuffer,
)
from tdrl.data.buffer.sampler import EpisodeSampler, EpisodeWriter
from tdrl.data.buffer.schema import BufferKeyError
from tdrl.data.buffer.storage import EpisodeStorage
from tdrl.data.buffer.sum_tree import SegmentTree
from tdrl.data.buffer.vector import VectorReplayBuffer
from tdrl.data.buffer.views import SubBuffer

__all__ = [
    "BufferKeyError",
    "CachedReplayBuffer",
    "CachedSampler",
    "CachedStorage",
    "CachedWriter",
    "EpisodeSampler",
    "EpisodeStorage",
    "EpisodeWriter",
    "HERReplayBuffer",
    "HERVectorReplayBuffer",
    "PrioritizedReplayBuffer",
    "PrioritizedSampler",
    "PrioritizedVectorReplayBuffer",
    "ReplayBuffer",
    "SegmentTree",
    "SubBuffer",
    "VectorReplayBuffer",
]
