"""``SubBuffer``: one ring of a vector buffer seen as a buffer of its own (Tianshou's
``ReplayBufferManager.buffers`` elements).

tdrl keeps every ring in one storage, so a sub-buffer is a view, not a copy: its columns are
the parent's rows ``[start, start + maxsize)`` and its indices are local (``0`` is the ring's
first row). Reading options (``stack_num``, and ``future_p`` on HER buffers) are shared by
all rings of the parent: setting one on a view sets it on the parent.

>>> import numpy as np
>>> from tdrl.data import VectorReplayBuffer
>>> buf = VectorReplayBuffer(6, 2)
>>> _ = buf.add({"obs": np.array([1, 2]), "act": np.zeros(2), "rew": np.ones(2),
...              "terminated": np.zeros(2, bool), "truncated": np.zeros(2, bool)})
>>> [len(b) for b in buf.buffers], buf.buffers[1].obs.tolist()
([1, 1], [2, 0, 0])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["SubBuffer"]

SHARED_OPTIONS = ("stack_num", "future_p")


class SubBuffer:
    """Ring ``ring`` of the vector buffer ``parent``, with local indices (a view)."""

    def __init__(self, parent: Any, ring: int) -> None:
        attrs = self.__dict__
        attrs["parent"] = parent
        attrs["ring"] = int(ring)
        attrs["start"] = int(parent._storage.offsets[ring])
        attrs["maxsize"] = int(parent._storage.ring_size)

    def __len__(self) -> int:
        return int(self.parent._storage.lengths[self.ring])

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in SHARED_OPTIONS:
            return getattr(self.parent, name)
        column = getattr(self.parent, name)
        return column[self.start : self.start + self.maxsize]

    def __setattr__(self, name: str, value: Any) -> None:
        if name in SHARED_OPTIONS:
            setattr(self.parent, name, value)
        else:
            raise AttributeError(f"SubBuffer: {name!r} cannot be set on a view")

    def _global(self, index: Any) -> np.ndarray:
        return np.asarray(index, dtype=np.int64) % self.maxsize + self.start

    def __getitem__(self, index: Any) -> Any:
        """Transitions at local ``index`` (``[:]``: the ring's valid rows, oldest first)."""
        if isinstance(index, slice) and index == slice(None):
            return self.parent[self.sample_indices(0) + self.start]
        return self.parent[self._global(index)]

    def sample_indices(self, batch_size: int | None) -> np.ndarray:
        """Local indices: ``0`` gives every valid row of the ring, oldest first."""
        idx = self.parent.sample_indices(0)
        local = idx[(idx >= self.start) & (idx < self.start + self.maxsize)] - self.start
        if batch_size is None or batch_size == 0:
            return local
        if batch_size < 0 or len(local) == 0:
            return local[:0]
        draw = torch.randint(len(local), (batch_size,), generator=self.parent.generator)
        return local[draw.numpy()]

    def prev(self, index: Any) -> np.ndarray:
        """Local index of the previous transition (unchanged at an episode start)."""
        return np.asarray(self.parent.prev(self._global(index))) - self.start

    def next(self, index: Any) -> np.ndarray:
        """Local index of the next transition (unchanged at an episode end)."""
        return np.asarray(self.parent.next(self._global(index))) - self.start

    def __repr__(self) -> str:
        return f"SubBuffer(ring={self.ring}, maxsize={self.maxsize}, len={len(self)})"
