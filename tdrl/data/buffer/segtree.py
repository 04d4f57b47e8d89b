"""A vectorized sum/min tree over non-negative priorities (numpy, no per-element loop).

The tree is ``K``-ary (``K = 16`` by default) and stored level by level: level 0 holds the
leaves, each level above holds the sums (and minima) of ``K`` consecutive children, and
levels are stacked until one has at most ``top`` nodes. Every operation works on the whole
batch of indices or queries at once:

* an update writes the leaves, then recomputes the touched parents level by level
  (one row gather + one reduction per level);
* a prefix-sum query scans the small top level with ``cumsum`` + ``searchsorted`` and then
  descends one ``K``-wide block per level for all queries together.

Both cost ``O(top + batch * K * log_K(capacity))``.

When ``numba`` is installed (the ``fast`` extra), the search runs as one compiled loop per
query (:func:`_search_kernel`, compiled once and cached on disk); it does the same
floating-point operations as the numpy descent, so both give identical leaves. Set
``TDRL_NUMBA=0`` (or pass ``backend="numpy"``) to use the numpy path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tdrl.utils.jit import Kernel

__all__ = ["SumMinTree", "numba_available"]

IndexLike = Any  # int, sequence of ints, np.ndarray or torch.Tensor


def as_index_array(index: IndexLike, capacity: int, what: str = "index") -> np.ndarray:
    """Convert ``index`` to a flat ``int64`` array and check that it lies in ``[0, capacity)``.

    >>> as_index_array([0, 3], 4)
    array([0, 3])
    """
    if hasattr(index, "detach"):
        index = index.detach().cpu().numpy()
    arr = np.asarray(index)
    if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
        raise TypeError(f"{what}: expected integer indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False).reshape(-1)
    if arr.size and (arr.min() < 0 or arr.max() >= capacity):
        bad = arr[(arr < 0) | (arr >= capacity)][:5].tolist()
        raise IndexError(f"{what}: expected indices in [0, {capacity}), got {bad}")
    return arr


def _search_kernel(
    flat: np.ndarray,
    starts: np.ndarray,
    k: int,
    top: np.ndarray,
    csum: np.ndarray,
    v: np.ndarray,
    out: np.ndarray,
) -> None:  # pragma: no cover - runs compiled; checked against SumMinTree._descend
    """Prefix-sum search of every ``v[q]`` (the loop form of ``SumMinTree._descend``).

    ``flat`` holds the sum levels back to back (level ``l`` starts at ``starts[l]``), ``top``
    is the last level and ``csum`` its cumulative sum; the leaf of ``v[q]`` goes to ``out[q]``.
    All queries descend one level together (their memory loads overlap) and the searches
    are branch-free (random queries would mispredict every branch).
    """
    ntop = top.shape[0]
    last_top = ntop - 1
    while last_top > 0 and not top[last_top] > 0:
        last_top -= 1
    nq = v.shape[0]
    # searchsorted(csum, v, side="right"), all queries halving their range together
    for q in range(nq):
        out[q] = 0
    n = ntop
    while n > 1:
        half = n >> 1
        for q in range(nq):
            lo = out[q]
            out[q] = lo + half * np.int64(csum[lo + half - 1] <= v[q])
        n -= half
    xs = np.empty(nq)
    for q in range(nq):
        x = v[q]
        i = out[q] + np.int64(csum[out[q]] <= x)
        if i >= ntop:  # x reached the total through rounding
            i = last_top
            x = csum[i] - 0.5 * top[i]
        xs[q] = x - (csum[i] - top[i])
        out[q] = i
    bsum = np.empty(k)
    for level in range(starts.shape[0] - 2, -1, -1):
        start = starts[level]
        for q in range(nq):
            x = xs[q]
            base = start + out[q] * k
            acc = 0.0
            cnt = 0
            for j in range(k):  # inclusive prefix sums; cnt = first j with bsum[j] > x
                acc += flat[base + j]
                bsum[j] = acc
                cnt += acc <= x
            if cnt < k and flat[base + cnt] > 0:
                hit = bsum[cnt]
                chosen = flat[base + cnt]
            else:  # rounding: the exact rule of _descend
                cnt = -1
                hit = 0.0
                chosen = 0.0
                last = k - 1  # the last positive child (all are 0 when none is positive)
                last_hit = bsum[k - 1]
                last_b = flat[base + k - 1]
                for j in range(k):
                    b = flat[base + j]
                    if b > 0:
                        last = j
                        last_hit = bsum[j]
                        last_b = b
                        if cnt < 0 and bsum[j] > x:
                            cnt = j
                            hit = bsum[j]
                            chosen = b
                if cnt < 0:
                    cnt = last
                    hit = last_hit
                    chosen = last_b
                    x = hit - 0.5 * chosen
            xs[q] = x - (hit - chosen)
            out[q] = out[q] * k + cnt


_F64 = "float64[::1]"
_KERNEL = Kernel(
    _search_kernel, signature=f"void({_F64}, int64[::1], int64, {_F64}, {_F64}, {_F64}, int64[::1])"
)


def _load_kernel() -> Callable[..., None] | None:
    """Compile (or load from numba's disk cache) the search kernel; ``None`` without numba."""
    return _KERNEL.get()


def numba_available() -> bool:
    """Whether the compiled search can be used (``numba`` importable and not disabled).

    >>> isinstance(numba_available(), bool)
    True
    """
    return _load_kernel() is not None


class SumMinTree:
    """Sum and min over ``capacity`` non-negative leaves, with batched update and search.

    Unset leaves count as 0 in the sum and are ignored by the min (``min()`` is ``inf`` while
    no leaf is set). The sum levels are updated eagerly; the min levels lazily, on the next
    :meth:`min` call (prioritized replay with batch-normalised weights never needs the min).

    :param capacity: number of leaves.
    :param branching: children per node (``K``).
    :param top: the largest level that is scanned linearly instead of being summarised.
    :param backend: ``"numba"`` (compiled search; raises without numba), ``"numpy"``, or
        ``None`` for numba when available.

    >>> tree = SumMinTree(6)
    >>> tree[[0, 2, 5]] = [1.0, 3.0, 0.5]
    >>> float(tree.sum()), float(tree.min())
    (4.5, 0.5)
    >>> tree.find_prefix_sum_idx([0.0, 0.99, 1.0, 3.9, 4.2]).tolist()
    [0, 0, 2, 2, 5]
    >>> tree[[0, 5]].tolist()
    [1.0, 0.5]
    """

    def __init__(
        self, capacity: int, branching: int = 16, top: int = 1024, backend: str | None = None
    ) -> None:
        if isinstance(capacity, bool) or int(capacity) != capacity or capacity <= 0:
            raise ValueError(f"capacity: expected a positive int, got {capacity!r}")
        if branching < 2:
            raise ValueError(f"branching: expected >= 2, got {branching!r}")
        if top < 1:
            raise ValueError(f"top: expected >= 1, got {top!r}")
        if backend not in (None, "numba", "numpy"):
            raise ValueError(f"backend: expected None, 'numba' or 'numpy', got {backend!r}")
        self._kernel = None if backend == "numpy" else _load_kernel()
        if backend == "numba" and self._kernel is None:
            raise ImportError(
                "backend: expected 'numba' to be usable, got numba missing or TDRL_NUMBA=0"
            )
        self._capacity = int(capacity)
        self._k = int(branching)
        self._top = int(top)
        sizes = [self._capacity]
        while sizes[-1] > self._top:
            padded = -(-sizes[-1] // self._k) * self._k
            sizes[-1] = padded
            sizes.append(padded // self._k)
        # all sum levels live in one flat array (level 0 first) so that a compiled kernel
        # can walk them; ``self._sum[level]`` are views into it
        self._starts = np.cumsum([0, *sizes[:-1]]).astype(np.int64)
        self._flat = np.zeros(sum(sizes), dtype=np.float64)
        self._sum = [self._flat[a : a + s] for a, s in zip(self._starts.tolist(), sizes)]
        self._min = [np.full(s, np.inf, dtype=np.float64) for s in sizes]
        # 2-D views (one row per parent) of every level that has a parent level
        self._sum2d = [a.reshape(-1, self._k) for a in self._sum[:-1]]
        self._min2d = [a.reshape(-1, self._k) for a in self._min[:-1]]
        self._ones = np.ones(self._k)
        self._upper = np.triu(np.ones((self._k, self._k)))  # row-block @ upper = cumsum
        self._pending: list[np.ndarray] = []  # leaves whose min ancestors are stale
        self._pending_n = 0
        self._rows = np.arange(0)

    # ------------------------------------------------------------------ basics
    @property
    def capacity(self) -> int:
        """Number of leaves."""
        return self._capacity

    def __len__(self) -> int:
        return self._capacity

    def __repr__(self) -> str:
        return f"SumMinTree(capacity={self._capacity}, sum={self.sum():.6g}, min={self.min():.6g})"

    @property
    def leaves(self) -> np.ndarray:
        """Read-only view of the leaf values (0 for unset leaves), length ``capacity``."""
        view = self._sum[0][: self._capacity]
        view.flags.writeable = False
        return view

    def is_set(self, index: IndexLike) -> np.ndarray:
        """Return whether each leaf in ``index`` has been set (and not cleared since).

        >>> t = SumMinTree(3); t[1] = 2.0
        >>> t.is_set([0, 1]).tolist()
        [False, True]
        """
        idx = as_index_array(index, self._capacity)
        return np.isfinite(self._min[0][idx])

    def __getitem__(self, index: IndexLike) -> Any:
        """Return the leaf values at ``index`` (0 for unset leaves): a float or float64 array."""
        if isinstance(index, (int, np.integer)):
            return float(self._sum[0][as_index_array(index, self._capacity)][0])
        return self._sum[0][as_index_array(index, self._capacity)]

    def __setitem__(self, index: IndexLike, value: Any) -> None:
        """Set leaves (later duplicates win, as in numpy) and update their ancestors."""
        idx = as_index_array(index, self._capacity)
        val = np.asarray(value.detach().cpu() if hasattr(value, "detach") else value)
        val = val.astype(np.float64, copy=False)
        if val.ndim > 1 or (val.ndim == 1 and val.shape[0] != idx.shape[0]):
            raise ValueError(
                f"value: expected a scalar or {idx.shape[0]} values, got shape {tuple(val.shape)}"
            )
        if val.size and not (np.isfinite(val).all() and val.min() >= 0):
            flat = val.reshape(-1)
            bad = flat[~(np.isfinite(flat) & (flat >= 0))][:5].tolist()
            raise ValueError(f"value: expected finite non-negative numbers, got {bad}")
        if idx.size == 0:
            return
        self.set_unchecked(idx, val)

    def set_unchecked(self, idx: np.ndarray, val: np.ndarray | float) -> None:
        """Fast path of ``tree[idx] = val`` for a validated ``int64`` array and float64 values."""
        self._sum[0][idx] = val
        self._min[0][idx] = val
        self._propagate_sum(idx)
        self._mark_min(idx)

    def clear(self, index: IndexLike | None = None) -> None:
        """Unset the leaves at ``index`` (all leaves when ``None``).

        >>> t = SumMinTree(3); t[[0, 1]] = [1.0, 2.0]; t.clear([1])
        >>> float(t.sum()), float(t.min())
        (1.0, 1.0)
        """
        if index is None:
            for s, m in zip(self._sum, self._min):
                s.fill(0.0)
                m.fill(np.inf)
            self._pending, self._pending_n = [], 0
            return
        idx = as_index_array(index, self._capacity)
        if idx.size == 0:
            return
        self._sum[0][idx] = 0.0
        self._min[0][idx] = np.inf
        self._propagate_sum(idx)
        self._mark_min(idx)

    def _propagate_sum(self, idx: np.ndarray) -> None:
        # duplicates in idx are harmless: every copy writes the same recomputed parent
        k, ones = self._k, self._ones
        for level in range(len(self._sum) - 1):
            idx = idx // k
            self._sum[level + 1][idx] = self._sum2d[level].take(idx, axis=0).dot(ones)

    def _mark_min(self, idx: np.ndarray) -> None:
        if len(self._min) == 1 or self._pending_n > self._capacity:
            return  # no levels to refresh, or a full rebuild is already due
        self._pending.append(idx)
        self._pending_n += idx.shape[0]

    def _flush_min(self) -> None:
        if self._pending_n == 0:
            return
        full = self._pending_n > self._capacity // self._k
        idx = np.unique(np.concatenate(self._pending)) if not full else None
        self._pending, self._pending_n = [], 0
        for level in range(len(self._min) - 1):
            if idx is None:
                rows = self._min2d[level].shape[0]
                self._min[level + 1][:rows] = self._min2d[level].min(axis=1)
            else:
                idx = np.unique(idx // self._k)
                self._min[level + 1][idx] = self._min2d[level].take(idx, axis=0).min(axis=1)

    # ----------------------------------------------------------------- queries
    def sum(self) -> float:
        """Sum of all leaves."""
        return float(self._sum[-1].sum())

    def min(self) -> float:
        """Minimum over the set leaves (``inf`` when none is set)."""
        self._flush_min()
        return float(self._min[-1].min())

    def find_prefix_sum_idx(self, value: Any) -> np.ndarray:
        r"""For each ``v`` return the leaf ``i`` with ``S_{i-1} <= v < S_i`` (``S`` = prefix sums).

        Values should lie in ``[0, sum())``; one that reaches past the end through rounding
        maps to the last leaf with a positive value. The returned leaf always has a positive
        value. Raises ``ValueError`` when the tree sums to 0 or a value is negative or NaN.
        """
        v = np.array(value, dtype=np.float64, copy=True).reshape(-1)
        top = self._sum[-1]
        csum = np.cumsum(top)
        total = csum[-1]
        if not total > 0:
            raise ValueError("find_prefix_sum_idx: the tree sums to 0, nothing can be drawn")
        if v.size and not (np.isfinite(v).all() and v.min() >= 0):
            raise ValueError(f"value: expected finite numbers in [0, {total}), got min {v.min()}")
        return self._search(v, top, csum)

    def sample(self, uniform: np.ndarray) -> np.ndarray:
        """Draw leaves with probability proportional to their value from ``uniform`` in [0, 1).

        >>> t = SumMinTree(4); t[[1, 3]] = [1.0, 3.0]
        >>> t.sample(np.array([0.0, 0.24, 0.26, 0.99])).tolist()
        [1, 1, 3, 3]
        """
        top = self._sum[-1]
        csum = np.cumsum(top)
        total = csum[-1]
        if not total > 0:
            raise ValueError("sample: the tree sums to 0, nothing can be drawn")
        v = np.multiply(uniform, total)
        if self._kernel is not None:
            return self._search(v, top, csum)
        # descending in sorted order makes the searches and gathers cache- and branch-friendly;
        # the result is scattered back, so idx[i] is the leaf of uniform[i]
        order = np.argsort(v)
        found, exact = self._descend_fast(v.take(order), top, csum)
        idx = np.empty_like(found)
        idx[order] = found
        if not exact or (idx.size and not self._sum[0].take(idx).all()):
            idx = self._descend(v, top, csum)  # rounding reached a block's end: exact path
        return idx

    @property
    def backend(self) -> str:
        """``"numba"`` when the compiled search is used, else ``"numpy"``."""
        return "numpy" if self._kernel is None else "numba"

    def _search(self, v: np.ndarray, top: np.ndarray, csum: np.ndarray) -> np.ndarray:
        if self._kernel is None:
            return self._descend(v, top, csum)
        out = np.empty(v.shape[0], dtype=np.int64)
        self._kernel(self._flat, self._starts, self._k, top, csum, v, out)
        return out

    def _descend_fast(
        self, v: np.ndarray, top: np.ndarray, csum: np.ndarray
    ) -> tuple[np.ndarray, bool]:
        # Fast path without rounding guards: also returns False when some block's prefix sums
        # never passed v (then the caller takes the exact path; a zero leaf is checked there).
        idx = np.searchsorted(csum, v, side="right")
        if idx.size and idx[-1] >= top.shape[0]:  # v is sorted: only the last can overflow
            return idx, False
        v -= (csum - top).take(idx)
        k = self._k
        n = v.shape[0]
        if self._rows.shape[0] != n:
            self._rows = np.arange(n) * k
        rows = self._rows
        exact = True
        for level in range(len(self._sum) - 2, -1, -1):
            block = self._sum2d[level].take(idx, axis=0)  # (B, K) children
            bsum = np.cumsum(block, axis=1)  # inclusive prefix sums
            cnt = (bsum > v[:, None]).argmax(axis=1)
            flat = rows + cnt
            hit = bsum.ravel().take(flat)
            if not (hit > v).all():
                exact = False
            v -= hit - block.ravel().take(flat)
            idx *= k
            idx += cnt
        return idx, exact

    def _descend(self, v: np.ndarray, top: np.ndarray, csum: np.ndarray) -> np.ndarray:
        # The reference search (same arithmetic as the compiled kernel ``_numba_search``).
        idx = np.searchsorted(csum, v, side="right")
        if idx.size and idx.max() >= top.shape[0]:  # v reached the total through rounding
            over = idx >= top.shape[0]
            last = int(np.flatnonzero(top > 0)[-1])
            idx[over] = last
            v[over] = csum[last] - 0.5 * top[last]
        v -= (csum - top).take(idx)
        k = self._k
        n = v.shape[0]
        if self._rows.shape[0] != n:
            self._rows = np.arange(n) * k
        flat_rows = self._rows
        for level in range(len(self._sum) - 2, -1, -1):
            block = self._sum2d[level].take(idx, axis=0)  # (B, K) children
            bsum = np.cumsum(block, axis=1)  # inclusive prefix sums
            cnt = (bsum > v[:, None]).argmax(axis=1)
            flat = flat_rows + cnt
            chosen = block.ravel().take(flat)
            hit = bsum.ravel().take(flat)
            good = (chosen > 0) & (hit > v)
            if not good.all():  # rounding: v at the block's end, or a zero child
                bad = np.flatnonzero(~good)
                sub, vb = block[bad], v[bad]
                ok = (bsum[bad] > vb[:, None]) & (sub > 0)
                first = ok.argmax(axis=1)
                last = k - 1 - np.argmax(sub[:, ::-1] > 0, axis=1)
                cnt[bad] = np.where(ok.any(axis=1), first, last)
                flat = flat_rows + cnt
                chosen = block.ravel().take(flat)
                hit = bsum.ravel().take(flat)
                fix = bad[~ok.any(axis=1)]
                v[fix] = hit[fix] - 0.5 * chosen[fix]
            v -= hit - chosen
            idx = idx * k + cnt
        return idx

    # -------------------------------------------------------------- persistence
    def state_dict(self) -> dict[str, Any]:
        """Return the leaves (values and set-mask) as numpy arrays.

        >>> t = SumMinTree(4); t[[1, 3]] = [2.0, 1.0]
        >>> u = SumMinTree(4); u.load_state_dict(t.state_dict()); float(u.sum()), float(u.min())
        (3.0, 1.0)
        """
        return {
            "capacity": self._capacity,
            "values": self._sum[0][: self._capacity].copy(),
            "is_set": np.isfinite(self._min[0][: self._capacity]),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Rebuild the tree from :meth:`state_dict` output (capacity must match)."""
        if int(state["capacity"]) != self._capacity:
            raise ValueError(
                f"capacity: expected {self._capacity}, got {int(state['capacity'])} in state"
            )
        values = np.asarray(state["values"], dtype=np.float64).reshape(-1)
        is_set = np.asarray(state["is_set"], dtype=bool).reshape(-1)
        if values.shape[0] != self._capacity or is_set.shape[0] != self._capacity:
            raise ValueError(
                f"values/is_set: expected length {self._capacity}, "
                f"got {values.shape[0]} and {is_set.shape[0]}"
            )
        self.clear()
        self._sum[0][: self._capacity] = np.where(is_set, values, 0.0)
        self._min[0][: self._capacity] = np.where(is_set, values, np.inf)
        for level in range(len(self._sum) - 1):
            rows = self._sum2d[level].shape[0]
            self._sum[level + 1][:rows] = self._sum2d[level].dot(self._ones)
            self._min[level + 1][:rows] = self._min2d[level].min(axis=1)
