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
from tdrl.data.buffer.episodes import DONE, EpisodeBook
from tdrl.data.buffer.schema import Key, check_leaf, check_missing, flatten_td, nest


def _torch_dtype(dtype: np.dtype) -> torch.dtype:
    return torch.from_numpy(np.empty(0, dtype=dtype)).dtype


class EpisodeStorage(EpisodeBook, TensorStorage):
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

    def __len__(self) -> int:
        if self._lazy:  # lockstep writes pending: every ring holds ``_lk_n`` rows
            return self._lk_n * self.num_rings
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
                self._done_t = self.done3.T
        self._td = None

    @property
    def td(self) -> TensorDictBase:
        """A ``Batch`` view (no copy) of all columns, batch size ``[max_size]``."""
        if self._td is None:
            self._td = Batch._new_unsafe(
                source=nest(self.columns), batch_size=torch.Size([self.max_size])
            )
        return self._td

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
        if set_cursor and self.columns:  # an append must hold every stored key
            check_missing(self.columns, leaves)
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
        """Pickled state; in-memory columns keep only the filled rows of each ring."""
        if self._lazy:
            self._sync()
        state = Storage.__getstate__(self)
        state["np_columns"] = {}
        state["_td"] = None
        for name in ("done3", "_done_t", "stop3", "_stop_t", "_prv_t", "_nxt_t"):
            state.pop(name, None)
        self._keep_filled_rows(state)
        return state

    def _keep_filled_rows(self, state: dict[str, Any]) -> None:
        """Replace in-memory ``columns`` of the pickled ``state`` by their filled rows."""
        if self.memmap_dir is None and self.columns and self._filling:
            rows = _filled_rows(self.offsets, self.lengths)
            index = torch.as_tensor(rows, device=self.device)
            state["columns"] = {k: v[index] for k, v in self.columns.items()}
            state[_FILLED] = self.lengths.copy()

    def __setstate__(self, state: dict[str, Any]) -> None:
        lengths = state.pop(_FILLED, None)
        if lengths is not None:  # columns hold the filled rows only: expand them
            rows = torch.as_tensor(_filled_rows(state["offsets"], lengths))
            full = {}
            for key, part in state["columns"].items():
                col = torch.zeros((state["max_size"], *part.shape[1:]), dtype=part.dtype)
                col = col.to(part.device)
                col[rows.to(part.device)] = part
                full[key] = col
            state["columns"] = full
        Storage.__setstate__(self, state)
        if self._numpy_ok:
            self.np_columns = {k: v.numpy() for k, v in self.columns.items()}
            if DONE in self.np_columns:
                self.done3 = self.np_columns[DONE].reshape(self.num_rings, self.ring_size)
                self._done_t = self.done3.T
        self._make_views()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(max_size={self.max_size}, num_rings={self.num_rings}, "
            f"len={len(self)}, keys={['.'.join(k) for k in self.columns]})"
        )


_FILLED = "_filled_rows"
"""Pickled-state key: the ring lengths, when the columns hold only the filled rows."""


def _filled_rows(offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Global indices of the filled rows ``[offset, offset + length)`` of every ring."""
    runs = [np.arange(o, o + n, dtype=np.int64) for o, n in zip(offsets, lengths, strict=True)]
    return np.concatenate(runs) if runs else np.zeros(0, dtype=np.int64)


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
