"""TorchRL storage, sampler and writer of :class:`~tdrl.data.buffer.cached.CachedReplayBuffer`.

:class:`CachedStorage` is one global index space ``| main | cache0 | cache1 | ... |`` over
two :class:`~tdrl.data.buffer.storage.EpisodeStorage` objects: the main buffer's (rows
``[0, offset)``) and the cache's (rows ``[offset, max_size)``, one ring per environment).
It answers TorchRL's storage protocol (``get``, ``set`` without cursor, ``__len__``,
``state_dict``, ``dumps``) and the episode queries (``prev``, ``next``,
``unfinished_index``, ``valid_indices``, ``sample_uniform``) in global indices.

:class:`CachedSampler` draws uniformly over the valid rows of both parts and carries the
main buffer's sampler state (a prioritized main's priorities) in its ``state_dict``.
:class:`CachedWriter` refuses TorchRL's ``add``/``extend``: a cached buffer is written
one row per environment through ``CachedReplayBuffer.add(batch, buffer_ids)``.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch
from torchrl.data.replay_buffers.samplers import Sampler
from torchrl.data.replay_buffers.storages import Storage
from torchrl.data.replay_buffers.writers import Writer

from tdrl.data.buffer.reading import as_index, make_batch
from tdrl.data.buffer.sampler import Stateless
from tdrl.data.buffer.storage import EpisodeStorage

__all__ = [
    "WRITE_HINT",
    "CachedSampler",
    "CachedStorage",
    "CachedWriter",
    "collate_identity",
    "merge_rows",
]

WRITE_HINT = (
    "a CachedReplayBuffer has one write cursor per environment, not one for the buffer: "
    "add one transition per cache with add(batch, buffer_ids)"
)


def collate_identity(data: Any) -> Any:
    """TorchRL ``collate_fn``: rows come out of :meth:`CachedStorage.get` already batched."""
    return data


class CachedStorage(Storage):
    """A main ``EpisodeStorage`` and a cache ``EpisodeStorage`` as one TorchRL storage.

    Args:
        main: storage of the main buffer (global rows ``[0, main.max_size)``).
        cache: storage of the caches (global rows ``main.max_size + local``).

    ``get`` returns the stored columns at global indices as one ``Batch`` (a column
    that only one part holds reads as zeros in the other part's rows, as in Tianshou's
    single shared storage).

    Example:
        >>> from tdrl.data.buffer import ReplayBuffer, VectorReplayBuffer
        >>> main, cache = ReplayBuffer(4), VectorReplayBuffer(6, 2)
        >>> _ = main.add({"obs": 1.0, "act": 0, "rew": 0.0, "terminated": True,
        ...               "truncated": False})
        >>> _ = cache.add({"obs": [7.0, 8.0], "act": [0, 0], "rew": [0.0, 0.0],
        ...                "terminated": [False, False], "truncated": [False, False]})
        >>> st = CachedStorage(main._storage, cache._storage)
        >>> len(st), st.max_size, st.valid_indices().tolist()
        (3, 10, [0, 4, 7])
        >>> st.get(np.array([7, 0])).obs.tolist(), st.unfinished_index().tolist()
        ([8.0, 1.0], [4, 7])
    """

    def __init__(self, main: EpisodeStorage, cache: EpisodeStorage) -> None:
        if not isinstance(main, EpisodeStorage) or not isinstance(cache, EpisodeStorage):
            raise TypeError(
                "main/cache: expected EpisodeStorage objects, got "
                f"{type(main).__name__} and {type(cache).__name__}"
            )
        Storage.__init__(self, main.max_size + cache.max_size)
        self.main = main
        self.cache = cache
        self.offset = int(main.max_size)
        self.device = main.device

    def __len__(self) -> int:
        return len(self.main) + len(self.cache)

    def __repr__(self) -> str:
        return f"CachedStorage(main={self.main!r}, cache={self.cache!r})"

    # --------------------------------------------------------------- indexing
    def split(self, index: Any) -> tuple[np.ndarray, np.ndarray, bool]:
        """``(indices, in_cache mask, scalar)`` for global ``index``; raises if out of range."""
        scalar = isinstance(index, (int, np.integer))
        if isinstance(index, slice):
            idx = np.arange(self.max_size, dtype=np.int64)[index]
        else:
            idx = as_index([index] if scalar else index)
        if idx.size and (idx.min() < 0 or idx.max() >= self.max_size):
            bad = idx[(idx < 0) | (idx >= self.max_size)][:5].tolist()
            raise IndexError(f"index: expected indices in [0, {self.max_size}), got {bad}")
        return idx, idx >= self.offset, scalar

    def dispatch(self, fn_main: Any, fn_cache: Any, index: Any) -> Any:
        """Apply an index -> index map per part (``fn_cache`` sees local cache indices)."""
        idx, in_cache, scalar = self.split(index)
        out = np.empty_like(idx)
        if (~in_cache).any():
            out[~in_cache] = fn_main(idx[~in_cache])
        if in_cache.any():
            out[in_cache] = fn_cache(idx[in_cache] - self.offset) + self.offset
        return out[0] if scalar else out

    # ----------------------------------------------------------- TorchRL API
    def get(self, index: Any) -> Any:
        """TorchRL read: the stored columns at global ``index`` as a ``Batch``."""
        if isinstance(index, torch.Tensor):
            index = index.cpu()
        idx, in_cache, scalar = self.split(index)
        parts = [
            (np.flatnonzero(~in_cache), self.main.get(torch.from_numpy(idx[~in_cache]))),
            (
                np.flatnonzero(in_cache),
                self.cache.get(torch.from_numpy(idx[in_cache] - self.offset)),
            ),
        ]
        out = merge_rows(parts, len(idx))
        return out[0] if scalar else out

    def set(self, cursor: Any, data: Any, *, set_cursor: bool = True) -> None:
        """``rb[index] = data``: overwrite rows in place (no bookkeeping moves).

        With ``set_cursor=True`` (a TorchRL writer's call) this raises: see
        :class:`CachedWriter`.
        """
        if set_cursor:
            raise NotImplementedError(f"CachedStorage.set: {WRITE_HINT}")
        if isinstance(cursor, slice):
            idx, in_cache, _ = self.split(cursor)
        else:
            idx, in_cache, _ = self.split(as_index(cursor).reshape(-1))
            if np.ndim(cursor) == 0 and getattr(data, "batch_dims", 1) == 0:
                data = data.unsqueeze(0)
        if len(data) != len(idx):
            raise ValueError(
                f"data: expected {len(idx)} rows (one per index), got batch size {len(data)}"
            )
        if (~in_cache).any():
            sel = torch.from_numpy(np.flatnonzero(~in_cache))
            self.main.set(torch.from_numpy(idx[~in_cache]), data[sel], set_cursor=False)
        if in_cache.any():
            sel = torch.from_numpy(np.flatnonzero(in_cache))
            local = torch.from_numpy(idx[in_cache] - self.offset)
            self.cache.set(local, data[sel], set_cursor=False)

    def contains(self, item: Any) -> bool:
        """Whether global index ``item`` holds valid data."""
        idx = int(item)
        if not 0 <= idx < self.max_size:
            return False
        if idx < self.offset:
            return self.main.contains(idx)
        return self.cache.contains(idx - self.offset)

    def _empty(self) -> None:
        self.main._empty()
        self.cache._empty()

    def state_dict(self) -> dict[str, Any]:
        """``{"main": ..., "cache": ...}``: both ``EpisodeStorage`` state dicts."""
        return {"main": self.main.state_dict(), "cache": self.cache.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Inverse of :meth:`state_dict` (layouts must match)."""
        missing = [k for k in ("main", "cache") if k not in state_dict]
        if missing:
            raise KeyError(
                f"state_dict: expected keys ['main', 'cache'] of a CachedStorage, "
                f"missing {missing} (got {sorted(state_dict)})"
            )
        for part, name in ((self.main, "main"), (self.cache, "cache")):
            meta = state_dict[name]["meta"]
            if int(meta["max_size"]) != part.max_size or int(meta["num_rings"]) != part.num_rings:
                raise ValueError(
                    f"state_dict[{name!r}]: expected max_size={part.max_size}, "
                    f"num_rings={part.num_rings}, got max_size={meta['max_size']}, "
                    f"num_rings={meta['num_rings']}"
                )
        self.main.load_state_dict(state_dict["main"])
        self.cache.load_state_dict(state_dict["cache"])

    def dumps(self, path: Any) -> None:
        """Write both parts under ``path/main`` and ``path/cache``."""
        path = os.fspath(path)
        self.main.dumps(os.path.join(path, "main"))
        self.cache.dumps(os.path.join(path, "cache"))

    def loads(self, path: Any) -> None:
        """Inverse of :meth:`dumps`."""
        path = os.fspath(path)
        self.main.loads(os.path.join(path, "main"))
        self.cache.loads(os.path.join(path, "cache"))
        self._bump_mutation_revision()

    # ------------------------------------------------------------- episodes
    def prev(self, index: Any) -> Any:
        """Previous global index in the same episode (unchanged at an episode start)."""
        return self.dispatch(self.main.prev, self.cache.prev, index)

    def next(self, index: Any) -> Any:
        """Next global index in the same episode (unchanged at a done or newest step)."""
        return self.dispatch(self.main.next, self.cache.next, index)

    def unfinished_index(self) -> np.ndarray:
        """Newest index of every part's ring whose episode is open (main first)."""
        return np.concatenate(
            [self.main.unfinished_index(), self.cache.unfinished_index() + self.offset]
        ).astype(np.int64)

    def valid_indices(self) -> np.ndarray:
        """All valid indices: main (chronological), then each cache ring."""
        return np.concatenate(
            [self.main.valid_indices(), self.cache.valid_indices() + self.offset]
        ).astype(np.int64)

    def sample_uniform(self, n: int, generator: torch.Generator | None) -> np.ndarray:
        """``n`` global indices drawn uniformly with replacement over all valid rows."""
        n_main, total = len(self.main), len(self)
        if total == 0:
            raise ValueError("cannot sample from an empty buffer: expected len(buffer) > 0, got 0")
        u = torch.randint(total, (int(n),), generator=generator).numpy()
        out = u.copy()  # ranks below n_main are main indices (a one-ring main fills 0..n-1)
        in_cache = u >= n_main
        if in_cache.any():
            out[in_cache] = self.cache.rank_to_index(u[in_cache] - n_main) + self.offset
        return out


class CachedSampler(Sampler):
    """Uniform sampling with replacement over the valid rows of a :class:`CachedStorage`.

    Args:
        main_buffer: the cached buffer's main buffer; its sampler's state (e.g. the
            priorities of a prioritized main buffer) is saved and restored with this
            sampler's ``state_dict``/``dumps`` so TorchRL checkpoints keep it.

    Example:
        >>> from tdrl.data.buffer import CachedReplayBuffer, ReplayBuffer
        >>> buf = CachedReplayBuffer(ReplayBuffer(4), 2, 3, seed=0)
        >>> _ = buf.add({"obs": [1, 2], "act": [0, 0], "rew": [0.0, 0.0],
        ...              "terminated": [True, False], "truncated": [False, False]})
        >>> idx, info = buf.sampler.sample(buf.storage, 50)
        >>> sorted(set(idx.tolist()))
        [0, 7]
    """

    def __init__(self, main_buffer: Any = None) -> None:
        super().__init__()
        self.main_buffer = main_buffer

    def sample(self, storage: Storage, batch_size: int) -> tuple[torch.Tensor, dict]:
        """Draw ``batch_size`` global indices; returns ``(indices, {})``."""
        if not isinstance(storage, CachedStorage):
            raise TypeError(f"storage: expected a CachedStorage, got {type(storage).__name__}")
        return torch.from_numpy(storage.sample_uniform(batch_size, self._rng)), {}

    def _empty(self) -> None:
        return  # the main buffer's own reset empties its sampler

    def _main_sampler(self) -> Sampler | None:
        return None if self.main_buffer is None else self.main_buffer._sampler

    def state_dict(self) -> dict[str, Any]:
        """``{"main_sampler": <the main buffer's sampler state>}``."""
        main = self._main_sampler()
        return {} if main is None else {"main_sampler": main.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the main buffer's sampler state, if saved."""
        main = self._main_sampler()
        if main is not None and "main_sampler" in state_dict:
            main.load_state_dict(state_dict["main_sampler"])

    def dumps(self, path: Any) -> None:
        """Write the main buffer's sampler state under ``path/main_sampler``."""
        main = self._main_sampler()
        if main is not None:
            sub = os.path.join(os.fspath(path), "main_sampler")
            os.makedirs(sub, exist_ok=True)
            main.dumps(sub)

    def loads(self, path: Any) -> None:
        """Inverse of :meth:`dumps`."""
        main = self._main_sampler()
        sub = os.path.join(os.fspath(path), "main_sampler")
        if main is not None and os.path.isdir(sub):
            main.loads(sub)


class CachedWriter(Stateless, Writer):
    """TorchRL writer of a cached buffer: ``add``/``extend`` raise (see the module doc).

    Example:
        >>> try:
        ...     CachedWriter().extend(None)
        ... except NotImplementedError as err:
        ...     print("add(batch, buffer_ids)" in str(err))
        True
    """

    def add(self, data: Any) -> int:
        """Refused: write with ``CachedReplayBuffer.add(batch, buffer_ids)``."""
        raise NotImplementedError(f"CachedReplayBuffer: TorchRL add/extend: {WRITE_HINT}")

    def extend(self, data: Any) -> torch.Tensor:
        """Refused: write with ``CachedReplayBuffer.add(batch, buffer_ids)``."""
        return torch.as_tensor(self.add(data))


def merge_rows(parts: list[tuple[np.ndarray, Any]], n: int) -> Any:
    """Scatter per-part results into ``n`` rows: ``parts`` holds ``(positions, value)``.

    A value is a tensor, a ``Batch``/TensorDict or ``None`` (the part lacks the data). A
    leaf that some part lacks reads as zeros in that part's rows; empty nested groups
    (``info={}``) are kept.

    Example:
        >>> from tdrl.data.batch import Batch
        >>> a = Batch({"x": torch.tensor([1, 2])}, batch_size=[2])
        >>> b = Batch({"x": torch.tensor([3]), "y": torch.tensor([5.0])}, batch_size=[1])
        >>> out = merge_rows([(np.array([0, 2]), a), (np.array([1]), b)], 3)
        >>> out.x.tolist(), out.y.tolist()
        ([1, 3, 2], [0.0, 5.0, 0.0])
    """
    present = [(pos, val) for pos, val in parts if val is not None]
    if not present:
        return None
    if all(isinstance(val, torch.Tensor) for _, val in present):
        return _merge_leaf([(pos, val) for pos, val in present], n)
    leaves: dict[tuple[str, ...], list[tuple[np.ndarray, torch.Tensor]]] = {}
    groups: dict[str, None] = {}
    for pos, val in present:
        if isinstance(val, torch.Tensor):
            raise TypeError("parts: expected all tensors or all TensorDicts, got a mix")
        for key in val.keys():  # noqa: SIM118 (iterating a TensorDict yields rows)
            groups.setdefault(key, None)
        for key, leaf in val.items(include_nested=True, leaves_only=True):
            key = (key,) if isinstance(key, str) else tuple(key)
            leaves.setdefault(key, []).append((pos, leaf))
    root: dict[str, Any] = {name: {} for name in groups}
    for key, items in leaves.items():
        node = root
        for part in key[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                break
        else:
            node[key[-1]] = _merge_leaf(items, n)
    return make_batch(root, (n,))


def _merge_leaf(items: list[tuple[np.ndarray, torch.Tensor]], n: int) -> torch.Tensor:
    if len(items) == 1 and len(items[0][0]) == n:
        pos, val = items[0]
        if np.array_equal(pos, np.arange(n)):
            return val
    ref = items[0][1]
    out = torch.zeros((n, *ref.shape[1:]), dtype=ref.dtype, device=ref.device)
    for pos, val in items:
        if len(pos):
            out[torch.from_numpy(pos).to(ref.device)] = val.to(ref.device, ref.dtype)
    return out
