"""``CachedReplayBuffer``: per-env episode caches in front of one main buffer (Tianshou §3.3).

Index layout: ``| main_buffer | cache0 | cache1 | ... |``. Transitions are added to the
caches (one ring per environment, a :class:`VectorReplayBuffer` of
``cached_buffer_num`` rings of ``max_episode_length`` rows); when an episode ends it is
appended, in order, to the main buffer (through the main buffer's own storage, so a
prioritized main buffer gives it the maximum priority) and that cache ring is emptied.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from tdrl.data.batch import Batch
from tdrl.data.buffer.base import ReplayBuffer, as_index
from tdrl.data.buffer.storage import DONE
from tdrl.data.buffer.vector import VectorReplayBuffer

__all__ = ["CachedReplayBuffer"]

_OPTION_KEYS = ("stack_num", "ignore_obs_next", "save_only_last_obs", "sample_avail")


class CachedReplayBuffer:
    """One main buffer plus ``cached_buffer_num`` episode caches, with Tianshou's API.

    Args:
        main_buffer: a one-ring tdrl ``ReplayBuffer`` (any subclass) receiving whole episodes.
        cached_buffer_num: number of caches (one per environment).
        max_episode_length: rows per cache; a longer episode keeps only its last rows.
        seed: seed of the generator used by ``sample_indices``.

    ``add`` returns ``(ptr, ep_rew, ep_len, ep_idx)``; for environments whose episode
    ended, ``ptr``/``ep_idx`` are the main-buffer indices of the episode's last/first step.

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
        """Generator used for sampling."""
        return self.cache.generator

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
        """Add one transition per listed cache; move finished episodes to the main buffer."""
        ids = np.arange(self.cached_buffer_num) if buffer_ids is None else buffer_ids
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

    def _move_to_main(self, ring: int) -> np.ndarray:
        cst = self.cache._storage
        n, c, off = int(cst.lengths[ring]), int(cst.cursor[ring]), int(cst.offsets[ring])
        local = np.arange(n) if n < cst.ring_size else (c + np.arange(n)) % cst.ring_size
        src = local + off
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
        main._schema = None
        index = mst.write_sequence(0, leaves, done, None, track_episodes=False)
        if hasattr(main, "init_weight"):
            main.init_weight(index)
        # empty the cache ring (its running episode statistics were reset by the done step)
        cst.reset_rings([ring])
        return index

    # ------------------------------------------------------------ episodes
    def _split(self, index: Any) -> tuple[np.ndarray, np.ndarray, bool]:
        scalar = isinstance(index, (int, np.integer))
        idx = as_index([index] if scalar else index)
        if idx.size and (idx.min() < 0 or idx.max() >= self.maxsize):
            bad = idx[(idx < 0) | (idx >= self.maxsize)][:5].tolist()
            raise IndexError(f"index: expected indices in [0, {self.maxsize}), got {bad}")
        return idx, idx >= self._offset, scalar

    def _dispatch(self, fn_main: Any, fn_cache: Any, index: Any) -> Any:
        idx, in_cache, scalar = self._split(index)
        out = np.empty_like(idx)
        if (~in_cache).any():
            out[~in_cache] = fn_main(idx[~in_cache])
        if in_cache.any():
            out[in_cache] = fn_cache(idx[in_cache] - self._offset) + self._offset
        return out[0] if scalar else out

    def prev(self, index: Any) -> Any:
        """Previous index in the same episode (unchanged at an episode start)."""
        return self._dispatch(self.main_buffer.prev, self.cache.prev, index)

    def next(self, index: Any) -> Any:
        """Next index in the same episode (unchanged at a done or newest step)."""
        return self._dispatch(self.main_buffer.next, self.cache.next, index)

    def unfinished_index(self) -> np.ndarray:
        """Newest index of every sub-buffer (main and caches) whose episode is open."""
        return np.concatenate(
            [
                self.main_buffer.unfinished_index(),
                self.cache.unfinished_index() + self._offset,
            ]
        ).astype(np.int64)

    def sample_indices(self, batch_size: int | None) -> np.ndarray:
        """``0``: all valid indices (main, then each cache, chronological); ``None``: a
        permutation of them; ``n > 0``: uniform with replacement over all; ``< 0``: empty.
        """
        if batch_size is not None and batch_size < 0:
            return np.zeros(0, dtype=np.int64)
        if batch_size is None or batch_size == 0:
            all_idx = np.concatenate(
                [
                    self.main_buffer.sample_indices(0),
                    self.cache.sample_indices(0) + self._offset,
                ]
            ).astype(np.int64)
            if batch_size == 0:
                return all_idx
            return all_idx[torch.randperm(len(all_idx), generator=self.generator).numpy()]
        n_main, total = len(self.main_buffer), len(self)
        if total == 0:
            raise ValueError("cannot sample from an empty buffer: expected len(buffer) > 0, got 0")
        u = torch.randint(total, (int(batch_size),), generator=self.generator).numpy()
        out = u.copy()  # ranks below n_main are main indices (a one-ring buffer fills 0..n-1)
        in_cache = u >= n_main
        if in_cache.any():
            cst = self.cache._storage
            r = u[in_cache] - n_main
            cum = np.cumsum(cst.lengths)
            ring = np.searchsorted(cum, r, side="right")
            out[in_cache] = r - (cum[ring] - cst.lengths[ring]) + cst.offsets[ring] + self._offset
        return out

    # ------------------------------------------------------------ indexing
    def __getitem__(self, index: Any) -> Batch:
        """Transitions at global ``index`` as one ``Batch``; ``buf[:]`` is all valid data."""
        if isinstance(index, slice):
            if index != slice(None):
                raise IndexError("index: only the full slice [:] is supported")
            index = self.sample_indices(0)
        idx, in_cache, scalar = self._split(index)
        parts, order = [], []
        if (~in_cache).any():
            parts.append(self.main_buffer[idx[~in_cache]])
            order.append(np.flatnonzero(~in_cache))
        if in_cache.any():
            parts.append(self.cache[idx[in_cache] - self._offset])
            order.append(np.flatnonzero(in_cache))
        if not parts:
            out = self.cache[idx]
        elif len(parts) == 1:
            out = parts[0]
        else:
            common = set(parts[0].keys(True, True)) & set(parts[1].keys(True, True))
            parts = [p.select(*common) for p in parts]
            cat = torch.cat(parts)
            inv = np.argsort(np.concatenate(order), kind="stable")
            out = cat[torch.from_numpy(inv)]
        return out[0] if scalar else out

    def sample(self, batch_size: int | None) -> tuple[Batch, np.ndarray]:
        """``(self[indices], indices)`` with ``indices = sample_indices(batch_size)``."""
        indices = self.sample_indices(batch_size)
        return self[indices], indices

    def reset(self, keep_statistics: bool = False) -> None:
        """Empty the main buffer and all caches."""
        self.main_buffer.reset(keep_statistics)
        self.cache.reset(keep_statistics)


def _zeros_like(t: Any, n: int) -> Any:
    """Zeros shaped like ``t`` (a tensor or TensorDict) but with ``n`` rows."""
    if isinstance(t, torch.Tensor):
        return torch.zeros((n, *t.shape[1:]), dtype=t.dtype, device=t.device)
    return t.apply(lambda x: torch.zeros((n, *x.shape[1:]), dtype=x.dtype), batch_size=[n])
