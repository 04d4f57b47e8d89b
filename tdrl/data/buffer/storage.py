"""``EpisodeStorage``: preallocated columns plus the episode bookkeeping of tdrl buffers.

The storage is a TorchRL :class:`~torchrl.data.replay_buffers.Storage`. It holds one
contiguous block of ``max_size`` rows split into ``num_rings`` equal rings (one ring per
environment; a plain ``ReplayBuffer`` has one ring). Per ring it keeps the insertion
cursor, the number of valid rows, the last written (global) index and the running
episode return, length and start index. Columns are torch tensors (optionally
memory-mapped) with numpy views used for the cheap small-index writes and reads.

Internals that subclasses (prioritized, HER, cached buffers) may rely on:

* ``columns`` (``dict[tuple[str, ...], torch.Tensor]``), ``np_columns`` (numpy views),
* ``offsets``, ``cursor``, ``lengths``, ``last_index``, ``ep_return``, ``ep_len``,
  ``ep_start`` (numpy arrays, one entry per ring),
* ``write_step`` (one row per ring), ``write_sequence`` (a time-ordered run in one ring),
* ``prev``, ``next``, ``unfinished_index``, ``valid_indices``, ``sample_uniform``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from tensordict import MemoryMappedTensor, TensorDict, TensorDictBase
from torchrl.data.replay_buffers.storages import Storage, TensorStorage

from tdrl.data.batch import Batch
from tdrl.data.buffer.schema import Key, check_leaf, flatten_td

DONE: Key = ("done",)


def _torch_dtype(dtype: np.dtype) -> torch.dtype:
    return torch.from_numpy(np.empty(0, dtype=dtype)).dtype


class EpisodeStorage(TensorStorage):
    """Preallocated tensor storage with Tianshou's per-ring episode bookkeeping.

    Args:
        max_size: total capacity; rounded up to ``num_rings * ceil(max_size / num_rings)``.
        num_rings: number of sub-buffers (rings), one per environment.
        device: device of the columns (numpy fast paths are used on CPU).
        memmap_dir: if given, columns are memory-mapped files in this directory.

    Example:
        >>> import torch
        >>> from torchrl.data import ReplayBuffer as TorchRLReplayBuffer
        >>> from tensordict import TensorDict
        >>> storage = EpisodeStorage(8)
        >>> rb = TorchRLReplayBuffer(storage=storage)
        >>> data = TensorDict(
        ...     {"obs": torch.arange(3.0), "rew": torch.ones(3),
        ...      "terminated": torch.tensor([False, True, False]),
        ...      "truncated": torch.zeros(3, dtype=torch.bool)}, [3])
        >>> rb.extend(data).tolist()
        [0, 1, 2]
        >>> storage.prev(np.arange(3)).tolist(), storage.unfinished_index().tolist()
        ([0, 0, 2], [2])
    """

    def __init__(
        self,
        max_size: int,
        num_rings: int = 1,
        *,
        device: str | torch.device = "cpu",
        memmap_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if int(max_size) <= 0:
            raise ValueError(f"size: expected a positive integer, got {max_size!r}")
        if int(num_rings) <= 0:
            raise ValueError(f"buffer_num: expected a positive integer, got {num_rings!r}")
        self.num_rings = int(num_rings)
        self.ring_size = math.ceil(int(max_size) / self.num_rings)
        Storage.__init__(self, self.ring_size * self.num_rings)
        self.ndim = 1
        self._last_cursor = None
        self.device = torch.device(device)
        self.memmap_dir = None if memmap_dir is None else os.fspath(memmap_dir)
        self._numpy_ok = self.device.type == "cpu"
        self.columns: dict[Key, torch.Tensor] = {}
        self.layout_version = 0
        self.np_columns: dict[Key, np.ndarray] = {}
        self._td: TensorDictBase | None = None
        self.offsets = np.arange(self.num_rings, dtype=np.int64) * self.ring_size
        self.all_rings = np.arange(self.num_rings, dtype=np.int64)
        self.ep_return = np.zeros(self.num_rings, dtype=np.float64)
        self.ep_len = np.zeros(self.num_rings, dtype=np.int64)
        self.reset_bookkeeping()

    # ------------------------------------------------------------------ state
    def reset_bookkeeping(self, keep_statistics: bool = False) -> None:
        """Forget all rows (data stays allocated); optionally keep running episode stats."""
        old_last = getattr(self, "last_index", None)
        self.cursor = np.zeros(self.num_rings, dtype=np.int64)
        self.lengths = np.zeros(self.num_rings, dtype=np.int64)
        self.last_index = self.offsets.copy()
        self.ep_start = self.offsets.copy()
        if not keep_statistics:
            self.ep_return = np.zeros_like(self.ep_return)
            self.ep_len = np.zeros(self.num_rings, dtype=np.int64)
        if old_last is None or getattr(self, "stop", None) is None:
            self.refresh_links()
            return
        # O(num_rings) instead of a full refresh: only the last-index marks move
        self.stop[old_last] = self._done_at(old_last)
        self.stop[self.offsets] = True
        self.prv_base[self.offsets] = self.offsets
        self._update_flags()

    def reset_rings(self, rings: Any) -> None:
        """Empty the given rings in O(len(rings)) (data and episode statistics are kept)."""
        rings = np.asarray(rings, dtype=np.int64).reshape(-1)
        old = self.last_index[rings]
        self.stop[old] = self._done_at(old)
        off = self.offsets[rings]
        self.cursor[rings] = 0
        self.lengths[rings] = 0
        self.last_index[rings] = off
        self.ep_start[rings] = off
        self.stop[off] = True
        self.prv_base[off] = off
        self._update_flags()

    def _update_flags(self) -> None:
        self._filling = bool((self.lengths < self.ring_size).any())
        self._lockstep = bool(
            (self.cursor == self.cursor[0]).all() and (self.lengths == self.lengths[0]).all()
        )

    def refresh_links(self) -> None:
        """Recompute the derived link arrays from ``done`` and the ring bookkeeping.

        ``stop[i]`` is ``done[i] or i is a ring's last index``; ``prv_base``/``nxt_base``
        hold ``i - 1``/``i + 1`` wrapped inside each ring's filled part. Call this after
        editing the ``done`` column in place.
        """
        n, s = self.max_size, self.ring_size
        stop = self._done_at(slice(None)).astype(bool, copy=True)
        stop[self.last_index] = True
        self.stop = stop
        prv = np.arange(-1, n - 1, dtype=np.int64)
        nxt = np.arange(1, n + 1, dtype=np.int64)
        nxt[self.offsets + s - 1] = self.offsets
        prv[self.offsets] = self.offsets + np.maximum(self.lengths, 1) - 1
        self.prv_base, self.nxt_base = prv, nxt
        self.stop3 = stop.reshape(self.num_rings, s)
        self._update_flags()

    def __len__(self) -> int:
        return int(self.lengths.sum()) if self._filling else self.max_size

    @property
    def initialized(self) -> bool:  # type: ignore[override]
        """Whether any column has been allocated."""
        return bool(self.columns)

    @property
    def _len(self) -> int:  # type: ignore[override]
        return len(self)

    @_len.setter
    def _len(self, value: int) -> None:
        return  # the ring lengths are the source of truth

    @property
    def _total_shape(self) -> torch.Size:  # type: ignore[override]
        return torch.Size([self.max_size])

    @property
    def _storage(self) -> TensorDictBase | None:  # type: ignore[override]
        return self.td if self.columns else None

    def _empty(self) -> None:
        self.reset_bookkeeping()

    def contains(self, item: Any) -> bool:
        """Whether global index ``item`` holds valid data."""
        idx = int(item) % self.max_size
        ring = idx // self.ring_size
        return bool(idx - self.offsets[ring] < self.lengths[ring])

    # ------------------------------------------------------------- allocation
    def allocate(self, key: Key, tail: tuple[int, ...], dtype: np.dtype) -> None:
        """Allocate a zero-filled column ``key`` of shape ``(max_size, *tail)``."""
        shape = (self.max_size, *tail)
        tdtype = _torch_dtype(dtype)
        col: torch.Tensor
        if self.memmap_dir is not None:
            os.makedirs(self.memmap_dir, exist_ok=True)
            fname = os.path.join(self.memmap_dir, ".".join(key) + ".memmap")
            if os.path.exists(fname):
                os.remove(fname)  # a fresh file is sparse and reads as zeros
            col = MemoryMappedTensor.empty(shape, dtype=tdtype, filename=fname)
        else:
            col = torch.zeros(shape, dtype=tdtype, device=self.device)
        self._set_column(key, col)

    def _set_column(self, key: Key, col: torch.Tensor) -> None:
        self.layout_version += 1
        self.columns[key] = col
        if self._numpy_ok:
            self.np_columns[key] = col.numpy()
            if key == DONE:
                self.done3 = self.np_columns[DONE].reshape(self.num_rings, self.ring_size)
        self._td = None

    @property
    def td(self) -> TensorDictBase:
        """A ``Batch`` view (no copy) of all columns, batch size ``[max_size]``."""
        if self._td is None:
            root: dict[str, Any] = {}
            for key, col in self.columns.items():
                node = root
                for part in key[:-1]:
                    node = node.setdefault(part, {})
                node[key[-1]] = col
            self._td = Batch._new_unsafe(source=root, batch_size=torch.Size([self.max_size]))
        return self._td

    def group_keys(self, name: str) -> list[Key]:
        """Column keys whose first element is ``name`` (``obs`` -> ``obs``, ``obs.id``...)."""
        return [k for k in self.columns if k[0] == name]

    # ------------------------------------------------------------------ writes
    def check(self, leaves: dict[Key, np.ndarray]) -> list[Key]:
        """Validate ``leaves`` against existing columns; return the keys to allocate."""
        new = []
        for key, arr in leaves.items():
            col: Any = self.np_columns.get(key) if self._numpy_ok else None
            if col is None and key in self.columns:
                col = self.columns[key]
            if col is None:
                new.append(key)
                continue
            check_leaf(key, arr, col)
        return new

    def _write(self, key: Key, pos: np.ndarray, value: Any) -> None:
        col = self.np_columns.get(key)
        if col is not None:
            col[pos] = value
        else:
            t = self.columns[key]
            t[torch.as_tensor(pos, device=t.device)] = torch.as_tensor(value, device=t.device).to(
                t.dtype
            )

    def write_rows(
        self, pos: np.ndarray, leaves: dict[Key, np.ndarray], fill_missing: bool
    ) -> None:
        """Write ``leaves`` at ``pos`` (allocating new keys); zero other columns if asked."""
        for key in self.check(leaves):
            arr = leaves[key]
            self.allocate(key, tuple(arr.shape[1:]), arr.dtype)
        if DONE not in self.columns:
            self.allocate(DONE, (), np.dtype(bool))
        for key, arr in leaves.items():
            self._write(key, pos, arr)
        if fill_missing:
            for key in self.columns:
                if key not in leaves and key != DONE:
                    self._write(key, pos, 0)

    def _prepare_ep_return(self, rew: np.ndarray) -> None:
        if self.ep_return.shape[1:] != rew.shape[1:]:
            self.ep_return = np.zeros((self.num_rings, *rew.shape[1:]), dtype=np.float64)

    def write_step(
        self,
        rings: np.ndarray | None,
        leaves: dict[Key, np.ndarray] | list[np.ndarray],
        done: np.ndarray,
        rew: np.ndarray,
        cols: list[np.ndarray | None] | None = None,
        cols3: list[np.ndarray | None] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Write one transition into each of the distinct ``rings``; update bookkeeping.

        ``rings=None`` means every ring, in order. ``leaves`` must already be validated.
        ``cols`` (the numpy column of each leaf in order, ``None`` to skip it; ``cols3``
        the same viewed as ``(num_rings, ring_size, ...)``) asserts that the leaves cover
        the allocated columns and need no conversion; otherwise new keys are allocated
        and columns absent from ``leaves`` are zeroed at the written rows.
        Returns ``(ptr, ep_rew, ep_len, ep_idx)``.
        """
        values = leaves if isinstance(leaves, list) else list(leaves.values())
        if cols3 is not None and rings is None and self._lockstep:
            return self._write_lockstep(values, cols3, done, rew)
        sel: Any = slice(None) if rings is None else rings
        off = self.offsets[sel]
        ptr = off + self.cursor[sel]
        if cols is not None:
            for col, arr in zip(cols, values):
                if col is not None:
                    col[ptr] = arr
            dcol = self.np_columns[DONE]
            dcol[ptr] = done
        else:
            assert isinstance(leaves, dict)
            self.write_rows(ptr, leaves, fill_missing=True)
            self._write(DONE, ptr, done)
            dcol = self._done_at(slice(None))
        stop = self.stop
        old = self.last_index[sel]
        stop[old] = dcol[old]
        stop[ptr] = True
        self.last_index[sel] = ptr
        nxt = self.nxt_base[ptr]
        self.cursor[sel] = nxt - off
        if rings is not None:
            self._lockstep = False
        if self._filling:
            lens = np.minimum(self.lengths[sel] + 1, self.ring_size)
            self.lengths[sel] = lens
            self.prv_base[off] = off + lens - 1
            self._filling = bool((self.lengths < self.ring_size).any())
        return self._episode_stats(rings, done, rew, nxt)

    def _write_lockstep(
        self,
        values: list[np.ndarray],
        cols3: list[np.ndarray | None],
        done: np.ndarray,
        rew: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """All rings share cursor and length: write column ``c`` of the ring-major views."""
        s = self.ring_size
        c = int(self.cursor[0])
        for col3, arr in zip(cols3, values):
            if col3 is not None:
                col3[:, c] = arr
        done3 = self.done3
        done3[:, c] = done
        n = int(self.lengths[0])
        old = (c - 1) % s if n else 0
        stop3 = self.stop3
        stop3[:, old] = done3[:, old]
        stop3[:, c] = True
        ptr = self.offsets + c
        self.last_index[:] = ptr
        c1 = c + 1 if c + 1 < s else 0
        self.cursor.fill(c1)
        if n < s:
            self.lengths.fill(n + 1)
            self.prv_base[self.offsets] = self.offsets + n
            self._filling = n + 1 < s
        return self._episode_stats(None, done, rew, None, c1, ptr)

    def _episode_stats(
        self,
        rings: np.ndarray | None,
        done: np.ndarray,
        rew: np.ndarray,
        nxt: np.ndarray | None,
        c1: int = 0,
        ptr: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if self.ep_return.shape[1:] != rew.shape[1:]:
            self._prepare_ep_return(rew)
        if rings is None:
            ret = self.ep_return
            ret += rew
            eln = self.ep_len
            eln += 1
            start = self.ep_start.copy()
            if ptr is None:
                ptr = self.last_index.copy()
        else:
            ret = self.ep_return[rings] + rew
            eln = self.ep_len[rings] + 1
            start = self.ep_start[rings]
            ptr = self.last_index[rings]
        if np.count_nonzero(done):
            dmask = done.reshape(done.shape + (1,) * (ret.ndim - 1))
            ep_rew = np.where(dmask, ret, 0.0)
            ep_len = np.where(done, eln, 0)
            ret[done] = 0.0
            eln[done] = 0
            new_start = (self.offsets + c1)[done] if nxt is None else nxt[done]
            if rings is None:
                self.ep_start[done] = new_start
            else:
                self.ep_start[rings[done]] = new_start
        else:
            ep_rew = np.zeros(ret.shape)
            ep_len = np.zeros(len(ptr), dtype=np.int64)
        if rings is not None:
            self.ep_return[rings] = ret
            self.ep_len[rings] = eln
        return ptr, ep_rew, ep_len, start

    def write_sequence(
        self,
        ring: int,
        leaves: dict[Key, np.ndarray],
        done: np.ndarray,
        rew: np.ndarray | None,
        *,
        positions: np.ndarray | None = None,
        track_episodes: bool = True,
        fill_missing: bool = True,
    ) -> np.ndarray:
        """Write a time-ordered run of rows into one ring and advance its bookkeeping.

        ``positions`` (global) default to the next rows after the ring's cursor. With
        ``track_episodes=False`` (used by ``update``) the running episode statistics are
        left untouched, as in Tianshou. Returns the global positions written.
        """
        n = len(done)
        off = int(self.offsets[ring])
        if positions is None:
            local = (self.cursor[ring] + np.arange(n)) % self.ring_size
        else:
            local = np.asarray(positions, dtype=np.int64) - off
        pos = local + off
        self.write_rows(pos, leaves, fill_missing)
        self._write(DONE, pos, done)
        if n == 0:
            return pos
        old_last = int(self.last_index[ring])
        self.stop[old_last] = self._done_at(np.array([old_last]))[0]
        self.stop[pos] = done
        self.last_index[ring] = pos[-1]
        self.cursor[ring] = (local[-1] + 1) % self.ring_size
        self.lengths[ring] = min(self.ring_size, max(self.lengths[ring] + n, local.max() + 1))
        if track_episodes:
            rew = np.zeros(n) if rew is None else rew.astype(np.float64)
            self._prepare_ep_return(rew)
            self._advance_episode(ring, pos, done, rew)
        self.stop[self.last_index[ring]] = True
        self.prv_base[off] = off + max(int(self.lengths[ring]), 1) - 1
        self._update_flags()
        return pos

    def _advance_episode(
        self, ring: int, pos: np.ndarray, done: np.ndarray, rew: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = len(done)
        seg = np.concatenate([[0], np.cumsum(done)[:-1]])
        first = np.concatenate([[-1], np.flatnonzero(done)])[seg] + 1
        csum = np.cumsum(rew, axis=0)
        base = np.where((first > 0).reshape((-1,) + (1,) * (rew.ndim - 1)), csum[first - 1], 0.0)
        head = (seg == 0).reshape((-1,) + (1,) * (rew.ndim - 1))
        ret = csum - base + np.where(head, self.ep_return[ring], 0.0)
        length = np.arange(n) - first + 1 + np.where(seg == 0, self.ep_len[ring], 0)
        start = np.where(seg == 0, self.ep_start[ring], pos[first])
        if done[-1]:
            self.ep_return[ring] = 0.0
            self.ep_len[ring] = 0
            self.ep_start[ring] = self.offsets[ring] + self.cursor[ring]
        else:
            self.ep_return[ring] = ret[-1]
            self.ep_len[ring] = length[-1]
            self.ep_start[ring] = start[-1]
        return ret, length, start

    # ----------------------------------------------------------- episode API
    def _done_at(self, idx: Any) -> np.ndarray:
        col = self.np_columns.get(DONE)
        if col is not None:
            return col[idx]
        if isinstance(idx, slice):
            if DONE in self.columns:
                return self.columns[DONE][idx].cpu().numpy()
            return np.zeros(self.max_size, dtype=bool)
        if DONE in self.columns:
            return self.columns[DONE][torch.as_tensor(idx)].cpu().numpy()
        return np.zeros(np.shape(idx), dtype=bool)

    def _wrap_index(self, index: Any) -> Any:
        if np.ndim(index) == 0:
            return int(index) % self.max_size
        if index.size and (index.min() < 0 or index.max() >= self.max_size):
            return index % self.max_size
        return index

    def prev(self, index: Any) -> Any:
        """Previous index in the same episode (unchanged at an episode start).

        Indices are expected to hold valid data (as returned by the buffer).
        """
        index = self._wrap_index(index)
        p = self.prv_base[index]
        if isinstance(index, int):
            return np.int64(index if self.stop[p] else p)
        return np.where(self.stop[p], index, p)

    def next(self, index: Any) -> Any:
        """Next index in the same episode (unchanged at a done or newest step)."""
        index = self._wrap_index(index)
        if isinstance(index, int):
            return np.int64(index if self.stop[index] else self.nxt_base[index])
        return np.where(self.stop[index], index, self.nxt_base[index])

    def unfinished_index(self) -> np.ndarray:
        """Newest index of every ring whose episode is still open."""
        last = self.last_index[self.lengths > 0]
        return last[~self._done_at(last)].astype(np.int64)

    def valid_indices(self) -> np.ndarray:
        """All valid indices, chronological within each ring, rings in order."""
        parts = []
        s = self.ring_size
        for off, n, c in zip(self.offsets.tolist(), self.lengths.tolist(), self.cursor.tolist()):
            if n < s:
                parts.append(np.arange(off, off + n, dtype=np.int64))
            else:
                parts.append(np.arange(off + c, off + s, dtype=np.int64))
                parts.append(np.arange(off, off + c, dtype=np.int64))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def sample_uniform(self, n: int, generator: torch.Generator | None) -> np.ndarray:
        """``n`` indices drawn uniformly with replacement from all valid rows."""
        if not self._filling:  # every row is valid
            return torch.randint(self.max_size, (n,), generator=generator).numpy()
        lens = self.lengths
        total = int(lens.sum())
        if total == 0:
            raise ValueError("cannot sample from an empty buffer: expected len(buffer) > 0, got 0")
        u = torch.randint(total, (n,), generator=generator).numpy()
        if self.num_rings == 1:
            return u
        if self._lockstep:
            ring = u // lens[0]
            return u + ring * (self.ring_size - lens[0])
        cum = np.cumsum(lens)
        ring = np.searchsorted(cum, u, side="right")
        return u - (cum[ring] - lens[ring]) + self.offsets[ring]

    # ----------------------------------------------------------- TorchRL API
    def set(self, cursor: Any, data: Any, *, set_cursor: bool = True) -> None:
        """TorchRL write: ``data`` rows at ``cursor``; with ``set_cursor`` also bookkeeping."""
        pos = _as_index_array(cursor, self.max_size)
        if not isinstance(data, TensorDictBase):
            raise TypeError(
                f"data: expected a TensorDict for EpisodeStorage.set, got {type(data).__name__}"
            )
        leaves = flatten_td(data)
        if pos.ndim == 0:
            pos = pos.reshape(1)
            leaves = {k: v[None] for k, v in leaves.items()}
        done = _episode_flags(leaves, len(pos))
        rew = _episode_reward(leaves, len(pos))
        leaves.pop(DONE, None)
        self.check(leaves)
        if not set_cursor:
            self.write_rows(pos, leaves, fill_missing=False)
            self._write(DONE, pos, done)
            self.refresh_links()
            return
        rings = pos // self.ring_size
        for ring in dict.fromkeys(rings.tolist()):
            sel = rings == ring
            sub = {k: v[sel] for k, v in leaves.items()}
            self.write_sequence(ring, sub, done[sel], rew[sel], positions=pos[sel])
        self._set_last_cursor(int(pos[-1]))

    def get(self, index: Any) -> Any:
        """TorchRL read: rows of the TensorDict view."""
        if isinstance(index, torch.Tensor):
            index = index.to(self.device)
        return self.td[index]

    def state_dict(self) -> dict[str, Any]:
        """Columns (by reference) and the full bookkeeping."""
        return {
            "columns": {".".join(k): v for k, v in self.columns.items()},
            "meta": self.meta_state(),
        }

    def meta_state(self) -> dict[str, Any]:
        """The bookkeeping arrays and layout, as plain numpy/int values."""
        return {
            "max_size": self.max_size,
            "num_rings": self.num_rings,
            "cursor": self.cursor.copy(),
            "lengths": self.lengths.copy(),
            "last_index": self.last_index.copy(),
            "ep_return": self.ep_return.copy(),
            "ep_len": self.ep_len.copy(),
            "ep_start": self.ep_start.copy(),
        }

    def load_meta_state(self, meta: dict[str, Any]) -> None:
        """Restore bookkeeping saved by :meth:`meta_state`."""
        if int(meta["max_size"]) != self.max_size or int(meta["num_rings"]) != self.num_rings:
            raise ValueError(
                f"storage layout: expected max_size={self.max_size}, num_rings={self.num_rings}, "
                f"got max_size={meta['max_size']}, num_rings={meta['num_rings']}"
            )
        for name in ("cursor", "lengths", "last_index", "ep_len", "ep_start"):
            setattr(self, name, np.asarray(meta[name], dtype=np.int64).copy())
        self.ep_return = np.asarray(meta["ep_return"], dtype=np.float64).copy()
        self.refresh_links()

    def load_columns(self, columns: dict[Key, Any]) -> None:
        """Replace all columns by copies of ``columns`` (tensors or arrays)."""
        for key in list(self.columns):
            del self.columns[key]
        self.np_columns.clear()
        self._td = None
        for key, val in columns.items():
            t = torch.as_tensor(np.asarray(val) if not isinstance(val, torch.Tensor) else val)
            if t.shape[:1] != (self.max_size,):
                raise ValueError(
                    f"{'.'.join(key)}: expected leading dimension {self.max_size}, "
                    f"got shape {tuple(t.shape)}"
                )
            self.allocate(
                key,
                tuple(t.shape[1:]),
                t.numpy().dtype
                if t.device.type == "cpu"
                else np.dtype(str(t.dtype).replace("torch.", "")),
            )
            self.columns[key].copy_(t)
        self.refresh_links()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Inverse of :meth:`state_dict` (copies the columns)."""
        self.load_columns({tuple(k.split(".")): v for k, v in state_dict["columns"].items()})
        self.load_meta_state(state_dict["meta"])

    def dumps(self, path: Any) -> None:
        """Write columns (memory-mapped TensorDict) and bookkeeping under ``path``."""
        path = os.fspath(path)
        os.makedirs(path, exist_ok=True)
        if self.columns:
            td = TensorDict({}, batch_size=[self.max_size])
            for key, col in self.columns.items():
                td.set(key, col)
            td.memmap(os.path.join(path, "columns"), robust_key=True)
        torch.save(self.meta_state(), os.path.join(path, "meta.pt"))

    def loads(self, path: Any) -> None:
        """Inverse of :meth:`dumps`."""
        path = os.fspath(path)
        cols = os.path.join(path, "columns")
        if os.path.isdir(cols):
            td = TensorDict.load_memmap(cols)
            leaves = {
                (k,) if isinstance(k, str) else tuple(k): v
                for k, v in td.items(include_nested=True, leaves_only=True)
            }
            self.load_columns(leaves)
        self.load_meta_state(torch.load(os.path.join(path, "meta.pt"), weights_only=False))
        self._bump_mutation_revision()

    def __getstate__(self) -> dict[str, Any]:
        state = Storage.__getstate__(self)
        state["np_columns"] = {}
        state["_td"] = None
        state.pop("done3", None)
        state.pop("stop3", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        Storage.__setstate__(self, state)
        if self._numpy_ok:
            self.np_columns = {k: v.numpy() for k, v in self.columns.items()}
            if DONE in self.np_columns:
                self.done3 = self.np_columns[DONE].reshape(self.num_rings, self.ring_size)
        self.stop3 = self.stop.reshape(self.num_rings, self.ring_size)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(max_size={self.max_size}, num_rings={self.num_rings}, "
            f"len={len(self)}, keys={['.'.join(k) for k in self.columns]})"
        )


def _as_index_array(cursor: Any, max_size: int) -> np.ndarray:
    if isinstance(cursor, slice):
        return np.arange(max_size, dtype=np.int64)[cursor]
    if isinstance(cursor, torch.Tensor):
        return cursor.detach().cpu().numpy().astype(np.int64)
    if isinstance(cursor, Sequence):
        return np.asarray(cursor, dtype=np.int64)
    return np.asarray(cursor, dtype=np.int64)


def _episode_flags(leaves: dict[Key, np.ndarray], n: int) -> np.ndarray:
    """``done`` for rows written through TorchRL: terminated|truncated, else done keys."""
    flags = np.zeros(n, dtype=bool)
    found = False
    key: Key
    for key in (("terminated",), ("truncated",), ("next", "terminated"), ("next", "truncated")):
        if key in leaves:
            flags |= leaves[key].reshape(n, -1).any(-1)
            found = True
    if not found:
        for key in (DONE, ("next", "done")):
            if key in leaves:
                flags |= leaves[key].reshape(n, -1).any(-1)
    return flags


def _episode_reward(leaves: dict[Key, np.ndarray], n: int) -> np.ndarray:
    for key in (("rew",), ("next", "reward"), ("reward",)):
        if key in leaves:
            return leaves[key].reshape(n, -1)[:, 0].astype(np.float64)
    return np.zeros(n)
