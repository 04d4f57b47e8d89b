"""TorchRL ``Sampler`` and ``Writer`` subclasses for :class:`EpisodeStorage`.

Both also work inside a plain :class:`torchrl.data.ReplayBuffer`: the sampler draws
uniformly (with replacement) from the valid rows of an ``EpisodeStorage`` (any other
storage: from ``range(len(storage))``); the writer appends time-ordered runs to one ring
so the episode bookkeeping follows TorchRL's ``add``/``extend``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase
from torchrl.data.replay_buffers.samplers import Sampler
from torchrl.data.replay_buffers.storages import Storage
from torchrl.data.replay_buffers.writers import Writer

from tdrl.data.buffer.storage import EpisodeStorage


class Stateless:
    """TorchRL's persistence hooks for a sampler or writer whose state lives elsewhere
    (the generator in the buffer, the cursors in the storage): all no-ops."""

    def _empty(self, *args: Any, **kwargs: Any) -> None:
        return

    def state_dict(self) -> dict[str, Any]:
        """Stateless: nothing to save."""
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Stateless: nothing to restore."""
        return

    def dumps(self, path: Any) -> None:
        """Nothing to save."""
        return

    def loads(self, path: Any) -> None:
        """Nothing to load."""
        return


class EpisodeSampler(Stateless, Sampler):
    """Uniform sampling with replacement over the valid rows of the storage.

    Example:
        >>> from tdrl.data.buffer import ReplayBuffer
        >>> buf = ReplayBuffer(4, seed=0)
        >>> for i in range(3):
        ...     _ = buf.add({"obs": i, "act": i, "rew": 0.0, "terminated": False,
        ...                  "truncated": False})
        >>> idx, info = buf._sampler.sample(buf._storage, 5)
        >>> bool(((idx >= 0) & (idx < 3)).all())
        True
    """

    def sample(self, storage: Storage, batch_size: int) -> tuple[torch.Tensor, dict]:
        """Draw ``batch_size`` indices; returns ``(indices, {})``."""
        if isinstance(storage, EpisodeStorage):
            return torch.from_numpy(storage.sample_uniform(batch_size, self._rng)), {}
        if len(storage) == 0:
            raise ValueError("cannot sample from an empty buffer: expected len(buffer) > 0, got 0")
        return torch.randint(len(storage), (batch_size,), generator=self._rng), {}


class EpisodeWriter(Writer):
    """Append time-ordered data to one ring of an :class:`EpisodeStorage`.

    ``add`` writes one transition, ``extend`` a run along the first dimension. Keys
    ``terminated``/``truncated`` (or ``done``, also under ``next``) mark episode ends.

    Example:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from torchrl.data import ReplayBuffer as TorchRLReplayBuffer
        >>> rb = TorchRLReplayBuffer(storage=EpisodeStorage(6), writer=EpisodeWriter(),
        ...                          sampler=EpisodeSampler())
        >>> td = TensorDict({"obs": torch.arange(4), "done": torch.tensor([0, 1, 0, 0]).bool()},
        ...                 [4])
        >>> rb.extend(td).tolist(), rb.storage.unfinished_index().tolist()
        ([0, 1, 2, 3], [3])
    """

    def __init__(self, ring: int = 0) -> None:
        super().__init__()
        self.ring = int(ring)

    def add(self, data: Any) -> int:
        """Write one transition; return its global index."""
        if not isinstance(data, TensorDictBase):
            raise TypeError(f"data: expected a TensorDict, got {type(data).__name__}")
        return int(self.extend(data.unsqueeze(0))[0])

    def extend(self, data: Any) -> torch.Tensor:
        """Write ``len(data)`` transitions in order; return their global indices."""
        storage = self._storage
        if not isinstance(storage, EpisodeStorage):
            raise TypeError(f"storage: expected an EpisodeStorage, got {type(storage).__name__}")
        n = len(data)
        pos = storage.offsets[self.ring] + (storage.cursor[self.ring] + np.arange(n)) % (
            storage.ring_size
        )
        storage.set(torch.from_numpy(pos), data)
        index = torch.from_numpy(pos)
        for ent in storage._attached_entities_iter():
            ent.mark_update(index)
        return index

    def _empty(self, empty_write_count: bool = True) -> None:
        return

    def state_dict(self) -> dict[str, Any]:
        """The cursor lives in the storage; only the ring id is kept."""
        return {"ring": self.ring}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the ring id."""
        self.ring = int(state_dict.get("ring", 0))

    def dumps(self, path: Any) -> None:
        """Nothing to save (the storage owns the cursor)."""
        return

    def loads(self, path: Any) -> None:
        """Nothing to load."""
        return
