"""``CachedReplayBuffer``: per-env episode caches in front of one main buffer (Tianshou §3.3).

Index layout: ``| main_buffer | cache0 | cache1 | ... |``. Transitions are added to the
caches (one ring per environment, a :class:`VectorReplayBuffer` of
``cached_buffer_num`` rings of ``max_episode_length`` rows); when an episode ends it is
appended, in order, to the main buffer (through the main buffer's own storage, so a
prioritized main buffer gives it the maximum priority) and that cache ring is emptied.

The buffer is a ``torchrl.data.ReplayBuffer`` whose storage is a
:class:`~tdrl.data.buffer.cached_storage.CachedStorage` (the two ``EpisodeStorage`` objects
as one global index space), whose sampler draws uniformly over all valid rows and whose
writer refuses TorchRL's ``extend`` (writes go through :meth:`CachedReplayBuffer.add`).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch
from torchrl.data import ReplayBuffer as TorchRLReplayBuffer

from tdrl.data.batch import Batch
from tdrl.data.buffer import persist
from tdrl.data.buffer.base import ReplayBuffer, draw_indices
from tdrl.data.buffer.cached_storage import (
    WRITE_HINT,
    CachedSampler,
    CachedStorage,
    CachedWriter,
    collate_identity,
    merge_rows,
)
from tdrl.data.buffer.schema import (
    RESERVED_KEYS,
    check_leaf,
    flatten_batch,
    flatten_full_batch,
    nest,
    numpy_dtype,
)
from tdrl.data.buffer.storage import DONE
from tdrl.data.buffer.vector import VectorReplayBuffer

__all__ = ["CachedReplayBuffer"]

_OPTION_KEYS = ("stack_num", "ignore_obs_next", "save_only_last_obs", "sample_avail")
_EMPTY = np.zeros(0, dtype=np.int64)


class CachedReplayBuffer(TorchRLReplayBuffer):
    """One main buffer plus ``cached_buffer_num`` episode caches, with Tianshou's API.

    Args:
        main_buffer: a one-ring tdrl ``ReplayBuffer`` (any subclass) receiving whole episodes.
        cached_buffer_num: number of caches (one per environment).
        max_episode_length: rows per cache; a longer episode keeps only its last rows.
        seed: seed of the buffer's generator (used by ``sample_indices``/``sample``);
            ``None`` draws one from torch's global RNG.

    ``add`` returns ``(ptr, ep_rew, ep_len, ep_idx)``; for environments whose episode
    ended, ``ptr``/``ep_idx`` are the main-buffer indices of the episode's last/first step.
    Indices are global (main rows first, then the caches); ``buf[idx]`` reads the stored
    columns (a prioritized main buffer's ``weight`` is not one). ``extend`` and
    ``update`` are not supported (as in Tianshou, whose cached buffer cannot be updated).

    Example:
        >>> main = ReplayBuffer(10)
        >>> buf = CachedReplayBuffer(main, cached_buffer_num=2, max_episode_length=3)
        >>> step = lambda i, done: {"obs": [i, 10 + i], "act": [0, 0], "rew": [1.0, 1.0],
        ...                         "terminated": done, "truncated": [False, False]}
        >>> buf.add(step(0, [False, False]))[0].tolist()
        [10, 13]
        >>> ptr, ep_rew, ep_len, ep_idx = buf.add(step(1, [True, False]))
        >>> ptr.tolist(), ep_len.tolist(), ep_idx.tolist()
        ([1, 14], [2, 0], [0, 13])
        >>> main.obs[:2].tolist(), len(buf), buf.unfinished_index().tolist()
        ([0, 1], 4, [14])
        >>> import torchrl.data
        >>> isinstance(buf, torchrl.data.ReplayBuffer), buf.storage[[13, 0]].obs.tolist()
        (True, [10, 0])
    """

    def __init__(
        self,
        main_buffer: ReplayBuffer,
        cached_buffer_num: int,
        max_episode_length: int,
        seed: int | None = None,
    ) -> None:
        if not isinstance(main_buffer, ReplayBuffer) or main_buffer.buffer_num != 1:
            raise TypeError(
                "main_buffer: expected a one-ring tdrl ReplayBuffer, got "
                f"{type(main_buffer).__name__} with buffer_num="
                f"{getattr(main_buffer, 'buffer_num', None)}"
            )
        if int(cached_buffer_num) <= 0:
            raise ValueError(f"cached_buffer_num: expected an int > 0, got {cached_buffer_num!r}")
        if int(max_episode_length) <= 0:
            raise ValueError(f"max_episode_length: expected an int > 0, got {max_episode_length!r}")
        self.main_buffer = main_buffer
        self.cached_buffer_num = int(cached_buffer_num)
        self.max_episode_length = int(max_episode_length)
        opts = {k: main_buffer.options[k] for k in _OPTION_KEYS}
        self.cache = VectorReplayBuffer(
            self.cached_buffer_num * self.max_episode_length,
            self.cached_buffer_num,
            seed=seed,
            device=main_buffer._storage.device,
            **opts,
        )
        self._offset = main_buffer.maxsize
        self._seed = seed
        self._checked_layout: tuple[int, int] | None = None
        gen = torch.Generator()
        gen.manual_seed(int(torch.randint(0, 2**62, (1,)).item()) if seed is None else int(seed))
        super().__init__(
            storage=CachedStorage(main_buffer._storage, self.cache._storage),
            sampler=CachedSampler(main_buffer),
            writer=CachedWriter(),
            collate_fn=collate_identity,
            generator=gen,
        )

    # ------------------------------------------------------------ properties
    @property
    def maxsize(self) -> int:
        """Main capacity plus all caches."""
        return self._offset + self.cache.maxsize

    @property
    def buffer_num(self) -> int:
        """Number of sub-buffers: the main buffer and the caches."""
        return 1 + self.cached_buffer_num

    @property
    def generator(self) -> torch.Generator:
        """The buffer's ``torch.Generator`` (``sample_indices``/``sample`` draw from it)."""
        return self._rng

    @property
    def buffers(self) -> list[Any]:
        """``[main_buffer, cache ring 0, cache ring 1, ...]`` (Tianshou's ``buffers``); the
        cache rings are :class:`~tdrl.data.buffer.views.SubBuffer` views."""
        return [self.main_buffer, *self.cache.buffers]

    @property
    def stack_num(self) -> int:
        """The main buffer's ``stack_num``; setting it sets it on the main buffer and the caches."""
        return self.main_buffer.stack_num

    @stack_num.setter
    def stack_num(self, value: int) -> None:
        self.main_buffer.stack_num = value
        self.cache.stack_num = value

    @property
    def options(self) -> dict[str, Any]:
        """The main buffer's options."""
        return self.main_buffer.options

    @property
    def subbuffer_edges(self) -> np.ndarray:
        """``[0, main, main + L, ..., maxsize]``."""
        return np.append(0, self.cache.subbuffer_edges + self._offset)

    @property
    def last_index(self) -> np.ndarray:
        """Last written global index of the main buffer and of every cache."""
        return np.concatenate([self.main_buffer.last_index, self.cache.last_index + self._offset])

    def _constructor_kwargs(self) -> dict[str, Any]:
        """Arguments (besides the main buffer) that rebuild an empty twin of this buffer."""
        return {
            "cached_buffer_num": self.cached_buffer_num,
            "max_episode_length": self.max_episode_length,
            "seed": self._seed,
        }

    def __len__(self) -> int:
        return len(self.main_buffer) + len(self.cache)

    def __repr__(self) -> str:
        return (
            f"CachedReplayBuffer(main={self.main_buffer!r}, cached_buffer_num="
            f"{self.cached_buffer_num}, max_episode_length={self.max_episode_length}, "
            f"len={len(self)})"
        )

    def __getattr__(self, name: str) -> Any:
        """A column over the whole index space: main rows then cache rows (a copy)."""
        if name.startswith("_") or name in ("main_buffer", "cache"):
            raise AttributeError(name)
        bufs = (self.main_buffer, self.cache)
        groups = [{k[0] for k in b._storage.columns} for b in bufs]
        if name not in groups[0] | groups[1]:
            raise AttributeError(f"CachedReplayBuffer has no attribute or column {name!r}")
        parts = [getattr(b, name) if name in g else None for b, g in zip(bufs, groups)]
        sizes = (self._offset, self.cache.maxsize)
        filled = [
            p if p is not None else _zeros_like(parts[1 - i], sizes[i]) for i, p in enumerate(parts)
        ]
        return torch.cat(filled)

    # ------------------------------------------------------------------- add
    def add(
        self, batch: Any, buffer_ids: Any = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Add one transition per listed cache; move finished episodes to the main buffer.

        ``buffer_ids`` are cache ids in ``[0, cached_buffer_num)`` (default: all). Bad
        input (including data the main buffer could not take) raises before anything is
        written.
        """
        ids = np.arange(self.cached_buffer_num) if buffer_ids is None else buffer_ids
        self._check_main_accepts(batch, ids)
        ptr, ep_rew, ep_len, ep_idx = self.cache.add(batch, buffer_ids=ids)
        cst = self.cache._storage
        done = cst._done_at(ptr)
        ptr = ptr + self._offset
        ep_idx = ep_idx + self._offset
        if done.any():
            rings = (ptr[done] - self._offset) // cst.ring_size
            first, last = [], []
            for ring in rings.tolist():  # only the envs whose episode just ended
                moved = self._move_to_main(int(ring))
                first.append(moved[0] if len(moved) else -1)
                last.append(moved[-1] if len(moved) else -1)
            ptr[done] = last
            ep_idx[done] = first
        return ptr, ep_rew, ep_len, ep_idx

    def _check_main_accepts(self, batch: Any, ids: Any) -> None:
        """Raise before writing if a finished episode could not be moved to the main buffer.

        The main buffer normally only holds columns copied from the caches, so this is a
        check of the two column layouts, cached per layout; only while the main buffer
        holds columns the caches lack (written there directly) is ``batch`` inspected.
        """
        mst, cst = self.main_buffer._storage, self.cache._storage
        layout = (mst.layout_version, cst.layout_version)
        if self._checked_layout == layout:
            return
        try:
            for key, col in cst.columns.items():
                if key != DONE and key in mst.columns:
                    empty = np.empty((0, *col.shape[1:]), numpy_dtype(col.dtype))
                    check_leaf(key, empty, mst.columns[key])
            main_only = [k for k in mst.columns if k != DONE and k not in cst.columns]
            if main_only:
                k = len(np.asarray(ids).reshape(-1))
                leaves = self.cache._normalize(flatten_batch(batch), k, True)
                mst.check({key: leaves[key] for key in main_only if key in leaves})
                return  # re-check every add while the layouts differ
        except ValueError as err:
            raise ValueError(
                f"{err} (the main buffer's column; finished episodes are moved there)"
            ) from None
        self._checked_layout = layout

    def _move_to_main(self, ring: int) -> np.ndarray:
        cst = self.cache._storage
        src = cst.ring_indices(ring)
        leaves = {
            k: (
                cst.np_columns[k][src]
                if k in cst.np_columns
                else cst.columns[k][torch.as_tensor(src)].cpu().numpy()
            )
            for k in cst.columns
            if k != DONE
        }
        done = cst._done_at(src)
        main = self.main_buffer
        mst = main._storage
        mst.check(leaves)
        index = mst.write_sequence(0, leaves, done, None, track_episodes=False)
        if hasattr(main, "init_weight"):
            main.init_weight(index)
        # empty the cache ring (its running episode statistics were reset by the done step)
        cst.reset_rings([ring])
        return index

    def extend(self, data: Any, *, update_priority: bool | None = None) -> torch.Tensor:
        """Not supported: ``extend`` has no single cursor to follow here (see ``add``)."""
        raise NotImplementedError(f"CachedReplayBuffer.extend: {WRITE_HINT}")

    def update(self, buffer: Any) -> np.ndarray:
        """Not supported (as in Tianshou); update ``main_buffer`` directly instead."""
        raise NotImplementedError(
            "CachedReplayBuffer.update: a cached buffer cannot be updated by a buffer; "
            "call main_buffer.update(buffer) instead"
        )

    # ------------------------------------------------------------ episodes
    def prev(self, index: Any) -> Any:
        """Previous index in the same episode (unchanged at an episode start)."""
        return self._storage.prev(index)

    def next(self, index: Any) -> Any:
        """Next index in the same episode (unchanged at a done or newest step)."""
        return self._storage.next(index)

    def unfinished_index(self) -> np.ndarray:
        """Newest index of every sub-buffer (main and caches) whose episode is open."""
        return self._storage.unfinished_index()

    def sample_indices(self, batch_size: int | None) -> np.ndarray:
        """``0``: all valid indices (main, then each cache, chronological); ``None``: a
        permutation of them; ``n > 0``: uniform with replacement over all; ``< 0``: empty.

        With ``stack_num > 1`` and ``sample_avail`` only indices with a full frame stack
        are returned or drawn.
        """
        if batch_size is not None and batch_size < 0:
            return _EMPTY
        opts = self.options
        avail = opts["stack_num"] > 1 and opts["sample_avail"]
        if batch_size is None or batch_size == 0 or avail:
            all_idx = np.concatenate(
                [
                    self.main_buffer.sample_indices(0),
                    self.cache.sample_indices(0) + self._offset,
                ]
            ).astype(np.int64)
            return draw_indices(all_idx, batch_size, self._rng)
        idx, _ = self._sampler.sample(self._storage, int(batch_size))
        return idx.numpy()

    def get_buffer_indices(self, start: int, stop: int) -> np.ndarray:
        """Indices from ``start`` to ``stop`` (exclusive) within one sub-buffer, wrapping."""
        return ReplayBuffer.get_buffer_indices(self, start, stop)  # type: ignore[arg-type]

    # ------------------------------------------------------------ indexing
    def _parts(self, index: Any) -> tuple[list[tuple[np.ndarray, np.ndarray]], int, bool]:
        """``[(positions, main indices), (positions, local cache indices)]``, n, scalar."""
        idx, in_cache, scalar = self._storage.split(index)
        return (
            [
                (np.flatnonzero(~in_cache), idx[~in_cache]),
                (np.flatnonzero(in_cache), idx[in_cache] - self._offset),
            ],
            len(idx),
            scalar,
        )

    def __getitem__(self, index: Any) -> Batch:
        """Transitions at global ``index`` as one ``Batch``; ``buf[:]`` is all valid data."""
        if isinstance(index, str):
            return getattr(self, index)
        if isinstance(index, slice):
            if index != slice(None):
                raise IndexError("index: only the full slice [:] is supported")
            index = self.sample_indices(0)
        parts, n, scalar = self._parts(index)
        stored = set(RESERVED_KEYS)
        for st in (self.main_buffer._storage, self.cache._storage):
            stored.update(k[0] for k in st.columns)
        bufs = (self.main_buffer, self.cache)
        rows = [(pos, _only(buf[local], stored)) for (pos, local), buf in zip(parts, bufs)]
        out = merge_rows(rows, n)
        return out[0] if scalar else out

    def get(self, index: Any, key: str, default: Any = None, stack_num: int | None = None) -> Any:
        """Column ``key`` at global ``index``; with ``stack_num > 1`` frames ``[t-k+1, ..., t]``.

        At an episode start the first frame repeats (``prev`` does not move there).
        """
        parts, n, scalar = self._parts(index)
        vals = []
        for (pos, local), buf in zip(parts, (self.main_buffer, self.cache)):
            try:
                vals.append((pos, buf.get(local, key, stack_num=stack_num)))
            except KeyError:
                vals.append((pos, None))
        out = merge_rows(vals, n)
        if out is None:
            if default is not None:
                return default
            raise KeyError(f"{key}: no such column in the buffer")
        return out[0] if scalar else out

    def sample(self, batch_size: int | None) -> tuple[Batch, np.ndarray]:  # type: ignore[override]
        """``(self[indices], indices)`` with ``indices = sample_indices(batch_size)``."""
        if len(self) == 0:
            raise ValueError("cannot sample from an empty buffer: expected len(buffer) > 0, got 0")
        indices = self.sample_indices(batch_size)
        return self[indices], indices

    # ---------------------------------------------------------- management
    def reset(self, keep_statistics: bool = False) -> None:
        """Empty the main buffer and all caches."""
        self.main_buffer.reset(keep_statistics)
        self.cache.reset(keep_statistics)

    def drop_open_episodes(self) -> None:
        """Discard the caches' unfinished episodes (their envs were reset mid-episode):
        they never reach the main buffer, and the next episode starts a fresh cache."""
        cst = self.cache._storage
        rings = np.arange(cst.num_rings)
        cst.reset_rings(rings)
        cst.drop_open_episodes(rings)

    def empty(self, empty_write_count: bool = True) -> None:
        """TorchRL's ``empty``: same as :meth:`reset`."""
        self.reset()

    def set_batch(self, batch: Any) -> None:
        """Replace all columns by ``batch`` (leading dimension ``maxsize``, global layout)."""
        leaves = flatten_full_batch(batch, self.maxsize)
        off = self._offset
        self.main_buffer.set_batch(nest({k: v[:off] for k, v in leaves.items()}))
        self.cache.set_batch(nest({k: v[off:] for k, v in leaves.items()}))

    def isnull(self) -> Batch:
        """Per-element NaN mask of ``self[:]``."""
        return self[:].apply(
            lambda t: (
                torch.isnan(t) if t.is_floating_point() else torch.zeros_like(t, dtype=torch.bool)
            )
        )

    def hasnull(self) -> bool:
        """Whether any valid transition contains a NaN."""
        return bool(self.main_buffer.hasnull() or self.cache.hasnull())

    def dropnull(self) -> None:
        """Remove transitions containing NaN from the main buffer and each cache."""
        self.main_buffer.dropnull()
        self.cache.dropnull()

    # --------------------------------------------------------- persistence
    def state_dict(self) -> dict[str, Any]:
        """TorchRL's ``state_dict`` plus the generator states of the main buffer and cache."""
        sd = super().state_dict()
        sd["_sub_rngs"] = {
            "main": self.main_buffer.generator.get_state().clone(),
            "cache": self.cache.generator.get_state().clone(),
        }
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Inverse of :meth:`state_dict` (the buffer layout must match)."""
        super().load_state_dict(state_dict)
        subs = state_dict.get("_sub_rngs")
        if subs is not None:
            self.main_buffer.generator.set_state(subs["main"])
            self.cache.generator.set_state(subs["cache"])
        self._checked_layout = None

    def save_hdf5(self, path: str | os.PathLike[str], compression: str | None = None) -> None:
        """Save to HDF5: groups ``/main`` and ``/cache`` (each as written by that
        buffer's own ``save_hdf5``), the constructor arguments and the generator state.
        """
        persist.save_cached_hdf5(self, path, compression)

    @classmethod
    def load_hdf5(cls, path: str | os.PathLike[str], device: str | None = None) -> Any:
        """Rebuild a buffer saved by :meth:`save_hdf5` (``device`` overrides the saved one).

        The main buffer's class is imported from the module named in the file, so load
        only files you trust (as with pickle).
        """
        return persist.load_cached_hdf5(
            cls, VectorReplayBuffer, path, device, buffer_base=ReplayBuffer
        )


def _only(batch: Batch, names: set[str]) -> Batch:
    """``batch`` without top-level keys outside ``names`` (e.g. a prioritized ``weight``)."""
    extra = [k for k in batch.keys() if k not in names]  # noqa: SIM118 (TensorDict)
    return batch.exclude(*extra) if extra else batch


def _zeros_like(t: Any, n: int) -> Any:
    """Zeros shaped like ``t`` (a tensor or TensorDict) but with ``n`` rows."""
    if isinstance(t, torch.Tensor):
        return torch.zeros((n, *t.shape[1:]), dtype=t.dtype, device=t.device)
    return t.apply(lambda x: torch.zeros((n, *x.shape[1:]), dtype=x.dtype), batch_size=[n])
