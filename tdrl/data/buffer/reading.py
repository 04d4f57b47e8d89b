"""The read path of tdrl buffers: ``__getitem__``, ``get`` and frame stacking.

Rows are gathered with ``numpy.take`` on numpy views of the storage columns (CPU) and
wrapped into a :class:`~tdrl.data.batch.Batch` without copying or validation. The list of
columns to read for ``__getitem__`` is cached per storage layout.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from tdrl.data.batch import Batch, wrap_entries
from tdrl.data.buffer.schema import RESERVED_KEYS, Key, nest
from tdrl.data.buffer.storage import EpisodeStorage

_STACKED_GROUPS = ("obs", "obs_next", "info", "policy")


def make_batch(source: dict[str, Any], batch_size: tuple[int, ...]) -> Batch:
    """Wrap a nested dict of tensors into a ``Batch`` without copying or validation."""
    size = torch.Size(batch_size)
    for key, val in source.items():
        if type(val) is dict:
            source[key] = make_batch(val, batch_size)
    return Batch._new_unsafe(source=source, batch_size=size, nested=False)


def as_index(index: Any) -> np.ndarray:
    """Convert an int / list / array / tensor / bool mask into an int64 index array."""
    if isinstance(index, torch.Tensor):
        index = index.detach().cpu().numpy()
    arr = np.asarray(index)
    if arr.dtype == np.bool_:
        return np.flatnonzero(arr)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"index: expected integers, a bool mask or a slice, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


class ReadMixin:
    """Indexing for :class:`~tdrl.data.buffer.base.ReplayBuffer`."""

    _storage: EpisodeStorage
    stack_num: int
    _save_obs_next: bool
    _plan_cache: tuple | None

    def sample_indices(self, batch_size: int | None) -> np.ndarray:
        """Provided by the buffer."""
        raise NotImplementedError

    def _stack_index(self, idx: np.ndarray, stack: int) -> np.ndarray:
        """``[..., prev(prev(i)), prev(i), i]`` along a new last axis."""
        frames = [idx]
        cur = idx
        for _ in range(stack - 1):
            cur = self._storage.prev(cur)
            frames.append(cur)
        return np.stack(frames[::-1], axis=idx.ndim)

    @staticmethod
    def _take(np_col: np.ndarray | None, col: torch.Tensor, idx: np.ndarray) -> torch.Tensor:
        if np_col is not None:
            if idx.ndim == 1:
                return torch.from_numpy(np_col.take(idx, axis=0))
            return torch.from_numpy(np_col[idx])
        return col[torch.as_tensor(idx, device=col.device)]

    def _entries(self, name: str) -> list[tuple[Key, np.ndarray | None, torch.Tensor]] | None:
        st = self._storage
        keys = [k for k in st.columns if k[0] == name]
        if not keys:
            return None
        return [(k[1:], st.np_columns.get(k), st.columns[k]) for k in keys]

    def _take_group(self, entries: list, idx: np.ndarray) -> Any:
        if len(entries) == 1 and not entries[0][0]:
            return self._take(entries[0][1], entries[0][2], idx)
        return nest({sub: self._take(np_col, col, idx) for sub, np_col, col in entries})

    def _group(self, name: str, idx: np.ndarray, stack: int) -> Any:
        entries = self._entries(name)
        if entries is None:
            return None
        if stack > 1:
            idx = self._stack_index(idx, stack)
        return self._take_group(entries, idx)

    def _gather_plan(self) -> list[tuple[str, bool, int, list | None]]:
        """Per layout: ``(output key, via next(), stack, column entries)`` for ``__getitem__``."""
        st = self._storage
        cached = self._plan_cache
        if cached is not None and cached[0] == st.layout_version:
            return cached[1]
        return self._build_read_plan()[1]

    def _fast_plan_for_gather(self) -> tuple[list[tuple[str, np.ndarray]], list[str]] | None:
        """``(name, numpy column)`` pairs and empty groups when every group is one plain column.

        ``None`` when some group is nested, stacked, read through ``next()`` or not on the CPU.
        """
        cached = self._plan_cache
        if cached is not None and cached[0] == self._storage.layout_version:
            return cached[2]
        return self._build_read_plan()[2]

    def _build_read_plan(self) -> tuple:
        st = self._storage
        stack = self.stack_num
        plan: list[tuple[str, bool, int, list | None]] = [
            ("obs", False, stack, self._entries("obs"))
        ]
        if self._save_obs_next:
            plan.append(("obs_next", False, stack, self._entries("obs_next")))
        else:
            plan.append(("obs_next", True, stack, self._entries("obs")))
        for name in ("act", "rew", "terminated", "truncated", "done"):
            plan.append((name, False, 1, self._entries(name)))
        plan.append(("info", False, stack, self._entries("info")))
        plan.append(("policy", False, stack, self._entries("policy")))
        for name in dict.fromkeys(k[0] for k in st.columns):
            if name not in RESERVED_KEYS:
                plan.append((name, False, 1, self._entries(name)))
        columns: list[tuple[str, np.ndarray]] = []
        empty: list[str] = []
        fast: tuple[list[tuple[str, np.ndarray]], list[str]] | None = (columns, empty)
        for name, via_next, stack_n, entries in plan:
            if entries is None:
                if name in _STACKED_GROUPS:
                    empty.append(name)
            elif via_next or stack_n > 1 or len(entries) != 1 or entries[0][0]:
                fast = None  # read through next(), stacked or nested
            elif entries[0][1] is None:
                fast = None  # not a CPU column
            else:
                columns.append((name, entries[0][1]))
        self._plan_cache = (st.layout_version, plan, fast)
        return self._plan_cache

    def _wrap(self, value: Any, n: int) -> Any:
        return make_batch(value, (n,)) if isinstance(value, dict) else value

    def get(self, index: Any, key: str, default: Any = None, stack_num: int | None = None) -> Any:
        """Column ``key`` at ``index``; with ``stack_num > 1`` frames ``[t-k+1, ..., t]``.

        At an episode start the first frame repeats (``prev`` does not move there).
        """
        scalar = isinstance(index, (int, np.integer))
        idx = as_index([index] if scalar else index)
        val = self._group(key, idx, self.stack_num if stack_num is None else int(stack_num))
        if val is None:
            if default is not None:
                return default
            raise KeyError(f"{key}: no such column in the buffer")
        val = self._wrap(val, len(idx))
        return val[0] if scalar else val

    def __getitem__(self, index: Any) -> Any:
        """Transitions at ``index`` as a ``Batch``; ``buf[:]`` is the valid data in order."""
        if isinstance(index, str):
            return getattr(self, index)
        scalar = isinstance(index, (int, np.integer))
        if isinstance(index, slice):
            idx = (
                self.sample_indices(0)
                if index == slice(None)
                else np.arange(len(self._storage), dtype=np.int64)[index]
            )
        else:
            idx = as_index([index] if scalar else index)
        if idx.size and idx.min() < 0:
            idx = idx % self._storage.max_size
        out = self._gather(idx)
        return out[0] if scalar else out

    def _gather(self, idx: np.ndarray, extra: dict[str, Any] | None = None) -> Batch:
        """The rows at ``idx`` as a ``Batch`` (plus the ready-made columns in ``extra``)."""
        fast = self._fast_plan_for_gather() if idx.ndim == 1 else None
        if fast is not None:  # plain CPU columns: one take per column, no per-group dispatch
            size = torch.Size((idx.shape[0],))
            from_numpy = torch.from_numpy
            cols: dict[str, Any] = {
                name: from_numpy(col.take(idx, axis=0)) for name, col in fast[0]
            }
            for name in fast[1]:
                cols[name] = wrap_entries(Batch, {}, size)
            if extra:
                cols.update(extra)
            # tensors of ``size`` rows (``extra`` too, by contract): wrapped as they are,
            # what ``Batch._new_unsafe`` does at a fraction of its cost
            return wrap_entries(Batch, cols, size)
        src: dict[str, Any] = {}
        nidx: np.ndarray | None = None
        stacked: dict[bool, np.ndarray] = {}
        for name, via_next, stack, entries in self._gather_plan():
            if entries is None:
                if name in _STACKED_GROUPS:
                    src[name] = {}
                continue
            if via_next:
                if nidx is None:
                    nidx = self._storage.next(idx)
                i = nidx
            else:
                i = idx
            if stack > 1:
                if via_next not in stacked:
                    stacked[via_next] = self._stack_index(i, stack)
                i = stacked[via_next]
            src[name] = self._take_group(entries, i)
        if extra:
            src.update(extra)
        return make_batch(src, (len(idx),))
