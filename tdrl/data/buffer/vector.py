"""``VectorReplayBuffer``: one contiguous storage holding one ring per environment."""

from __future__ import annotations

import math
from typing import Any

from tdrl.data.buffer.base import ReplayBuffer
from tdrl.data.buffer.views import SubBuffer


class VectorReplayBuffer(ReplayBuffer):
    """``buffer_num`` rings of ``ceil(total_size / buffer_num)`` rows in one storage.

    ``add(batch, buffer_ids)`` writes one transition per listed ring in a single
    vectorized step and returns global indices; ``prev``/``next``/``unfinished_index``
    work per ring; ``sample_indices(n > 0)`` is uniform over all valid transitions.

    Example:
        >>> import numpy as np
        >>> buf = VectorReplayBuffer(total_size=20, buffer_num=4)
        >>> batch = {"obs": np.arange(3), "act": np.arange(3), "rew": np.ones(3),
        ...          "terminated": np.array([False, False, True]),
        ...          "truncated": np.zeros(3, bool)}
        >>> ptr, ep_rew, ep_len, ep_idx = buf.add(batch, buffer_ids=[0, 1, 2])
        >>> ptr.tolist(), ep_len.tolist(), buf.unfinished_index().tolist()
        ([0, 5, 10], [0, 0, 1], [0, 5])
    """

    def __init__(self, total_size: int, buffer_num: int, **kwargs: Any) -> None:
        if int(buffer_num) <= 0:
            raise ValueError(f"buffer_num: expected a positive integer, got {buffer_num!r}")
        if int(total_size) <= 0:
            raise ValueError(f"total_size: expected a positive integer, got {total_size!r}")
        self._total_size = int(total_size)
        size = math.ceil(int(total_size) / int(buffer_num)) * int(buffer_num)
        super().__init__(size, _num_rings=int(buffer_num), _vector=True, **kwargs)

    def _constructor_kwargs(self) -> dict[str, Any]:
        cfg = super()._constructor_kwargs()
        cfg.pop("size")
        return {"total_size": self._total_size, "buffer_num": self.buffer_num, **cfg}

    @property
    def buffers(self) -> list[SubBuffer]:
        """One :class:`~tdrl.data.buffer.views.SubBuffer` view per ring (Tianshou's
        ``buffers``); views share this buffer's memory and reading options."""
        return [SubBuffer(self, i) for i in range(self.buffer_num)]
