"""``SegmentTree``: Tianshou's public sum tree (``reduce``, ``get_prefix_sum_idx``).

tdrl's prioritized buffers use the faster :class:`~tdrl.data.buffer.segtree.SumMinTree`
internally; this class is the plain binary tree with Tianshou's interface and boundary rule
for users who build on it directly.

>>> tree = SegmentTree(4)
>>> tree[np.arange(3)] = np.array([0.1, 0.0, 0.1])
>>> round(tree.reduce(), 6), round(tree.reduce(1, 3), 6)
(0.2, 0.1)
>>> tree.get_prefix_sum_idx(np.array([0.0, 0.1, 0.15])).tolist()
[0, 0, 2]
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["SegmentTree"]


class SegmentTree:
    """A binary sum tree over ``size`` non-negative leaves (all 0 at the start).

    ``tree[i]`` / ``tree[array]`` read and write leaves (vectorized); :meth:`reduce` sums a
    range; :meth:`get_prefix_sum_idx` finds the leaf where a prefix sum is reached.
    """

    def __init__(self, size: int) -> None:
        if isinstance(size, bool) or int(size) != size or size <= 0:
            raise ValueError(f"size: expected a positive int, got {size!r}")
        bound = 1
        while bound < size:
            bound *= 2
        self._size = int(size)
        self._bound = bound
        self._value = np.zeros(2 * bound, dtype=np.float64)

    def __len__(self) -> int:
        return self._size

    def _leaf(self, index: Any) -> np.ndarray:
        idx = np.asarray(index, dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= self._size):
            raise IndexError(f"index: expected values in [0, {self._size}), got {index!r}")
        return idx + self._bound

    def __getitem__(self, index: Any) -> Any:
        """Leaf values at ``index``: a float for an int, else an array."""
        out = self._value[self._leaf(index)]
        return float(out) if np.ndim(out) == 0 else out

    def __setitem__(self, index: Any, value: Any) -> None:
        """Set leaves (the last write wins for a repeated index) and update their ancestors."""
        idx = self._leaf(index).reshape(-1)
        self._value[idx] = np.broadcast_to(np.asarray(value, dtype=np.float64), idx.shape)
        while idx.size and idx[0] > 1:
            idx = np.unique(idx // 2)
            self._value[idx] = self._value[2 * idx] + self._value[2 * idx + 1]

    def reduce(self, start: int = 0, end: int | None = None) -> float:
        """Sum of the leaves ``[start, end)`` (``end`` may be negative, as in a slice)."""
        if start == 0 and end is None:
            return float(self._value[1])
        stop = self._size if end is None else (end + self._size if end < 0 else end)
        return float(self._value[self._bound + start : self._bound + stop].sum())

    def get_prefix_sum_idx(self, value: Any) -> Any:
        """For each ``v`` the smallest leaf ``i`` with ``v <= sum(leaves[: i + 1])``.

        ``value`` must lie in ``[0, reduce())`` (``AssertionError`` otherwise, as in
        Tianshou). Returns an int for a scalar, else an int array.
        """
        scalar = np.ndim(value) == 0
        v = np.array(value, dtype=np.float64).reshape(-1)
        if not (np.all(v >= 0.0) and np.all(v < self._value[1])):
            raise AssertionError(f"value: expected numbers in [0, {self._value[1]}), got {value!r}")
        idx = np.ones(v.shape, dtype=np.int64)
        while idx.size and idx[0] < self._bound:
            idx *= 2
            left = self._value[idx]
            right = v > left
            v = np.where(right, v - left, v)
            idx += right
        idx -= self._bound
        return int(idx[0]) if scalar else idx
