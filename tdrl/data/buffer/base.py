"""``ReplayBuffer``: Tianshou's episode-aware replay buffer as a ``torchrl.data.ReplayBuffer``.

A ``ReplayBuffer`` is the one-ring case of the ring machinery in
:class:`~tdrl.data.buffer.storage.EpisodeStorage`; ``VectorReplayBuffer`` uses one ring per
environment. Every method keeps Tianshou's semantics (see ``tianshou-semantics.md`` §3);
``sample_indices(None)`` returns a permutation (tdrl's documented deviation).

Subclasses (prioritized, HER, cached buffers) may override ``add``, ``sample_indices``,
``__getitem__`` and replace ``_sampler``; the storage internals are documented in
:mod:`tdrl.data.buffer.storage`.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch
from torchrl.data import ReplayBuffer as TorchRLReplayBuffer

from tdrl.data.batch import Batch
from tdrl.data.buffer import persist
from tdrl.data.buffer.adding import AddMixin, _FastPlan
from tdrl.data.buffer.reading import ReadMixin, as_index
from tdrl.data.buffer.sampler import EpisodeSampler, EpisodeWriter
from tdrl.data.buffer.schema import flatten_full_batch
from tdrl.data.buffer.storage import DONE, EpisodeStorage

_EMPTY = np.zeros(0, dtype=np.int64)


def draw_indices(all_idx: np.ndarray, batch_size: int | None, rng: torch.Generator) -> np.ndarray:
    """Sample from the valid indices ``all_idx``: all of them in order (``batch_size == 0``),
    all of them shuffled (``None``), or ``batch_size`` drawn with replacement."""
    if batch_size == 0:
        return all_idx
    if batch_size is None:
        return all_idx[torch.randperm(len(all_idx), generator=rng).numpy()]
    if len(all_idx) == 0:
        raise ValueError("cannot sample: expected available indices, got none")
    return all_idx[torch.randint(len(all_idx), (batch_size,), generator=rng).numpy()]


class ReplayBuffer(AddMixin, ReadMixin, TorchRLReplayBuffer):
    """Circular replay buffer that tracks episodes, with Tianshou's API.

    Args:
        size: capacity (number of transitions).
        stack_num: frames returned by ``get``/``__getitem__`` for ``obs``/``obs_next``.
        ignore_obs_next: do not store ``obs_next``; derive it via :meth:`next`.
        save_only_last_obs: store only the last frame of a stacked ``obs``.
        sample_avail: with ``stack_num > 1``, sample only indices with a full stack.
        seed: seed of the buffer's ``torch.Generator`` (all sampling draws from it);
            ``None`` draws one from torch's global RNG, so ``torch.manual_seed`` fixes it.
        device: device of the storage columns.
        memmap_dir: store the columns as memory-mapped files in this directory.

    Example:
        >>> buf = ReplayBuffer(size=10)
        >>> for i in range(3):
        ...     out = buf.add({"obs": i, "act": i, "rew": float(i), "terminated": i == 2,
        ...                    "truncated": False, "obs_next": i + 1, "info": {}})
        >>> [a.tolist() for a in out]
        [[2], [3.0], [3], [0]]
        >>> len(buf), buf.maxsize, buf.obs[:4].tolist()
        (3, 10, [0, 1, 2, 0])
        >>> buf[1].obs_next.item(), buf.prev(np.array([0, 1, 2])).tolist()
        (2, [0, 0, 1])
    """

    def __init__(
        self,
        size: int,
        stack_num: int = 1,
        ignore_obs_next: bool = False,
        save_only_last_obs: bool = False,
        sample_avail: bool = False,
        seed: int | None = None,
        device: str | torch.device = "cpu",
        memmap_dir: str | os.PathLike[str] | None = None,
        **kwargs: Any,
    ) -> None:
        num_rings = int(kwargs.pop("_num_rings", 1))
        self._vector = bool(kwargs.pop("_vector", False))
        if kwargs:
            raise TypeError(f"ReplayBuffer: unexpected keyword arguments {sorted(kwargs)}")
        if int(stack_num) < 1:
            raise ValueError(f"stack_num: expected an integer >= 1, got {stack_num!r}")
        storage = EpisodeStorage(size, num_rings, device=device, memmap_dir=memmap_dir)
        self._plan_cache: tuple | None = None
        self.stack_num = int(stack_num)
        self._save_obs_next = not ignore_obs_next
        self._save_only_last_obs = bool(save_only_last_obs)
        self._sample_avail = bool(sample_avail)
        self._fast_plan: _FastPlan | None = None
        self._all_ids = list(range(num_rings))
        self._tdrl_config = {
            "size": int(size),
            "stack_num": self.stack_num,
            "ignore_obs_next": bool(ignore_obs_next),
            "save_only_last_obs": self._save_only_last_obs,
            "sample_avail": self._sample_avail,
            "seed": seed,
            "device": str(device),
        }
        gen = torch.Generator()
        if seed is None:  # drawn from torch's global RNG: torch.manual_seed fixes it
            seed = int(torch.randint(0, 2**62, (1,)).item())
        gen.manual_seed(int(seed))
        super().__init__(
            storage=storage, sampler=EpisodeSampler(), writer=EpisodeWriter(), generator=gen
        )

    # ------------------------------------------------------------ properties
    @property
    def stack_num(self) -> int:
        """Frames ``buf[idx]``, ``sample`` and ``get`` return for ``obs``/``obs_next``/``info``/
        ``policy``; it may be changed at any time (the next read uses the new value)."""
        return self._stack_num

    @stack_num.setter
    def stack_num(self, value: int) -> None:
        if isinstance(value, bool) or int(value) != value or int(value) < 1:
            raise ValueError(f"stack_num: expected an integer >= 1, got {value!r}")
        self._stack_num = int(value)
        self._plan_cache = None  # the read plan depends on the stack

    @property
    def generator(self) -> torch.Generator:
        """The buffer's ``torch.Generator``; every sampler of the buffer draws from it."""
        return self._rng

    @property
    def maxsize(self) -> int:
        """Total capacity (all sub-buffers)."""
        return self._storage.max_size

    @property
    def buffer_num(self) -> int:
        """Number of sub-buffers (1 for a plain ``ReplayBuffer``)."""
        return self._storage.num_rings

    @property
    def last_index(self) -> np.ndarray:
        """Last written global index of every sub-buffer."""
        return self._storage.last_index

    @property
    def subbuffer_edges(self) -> np.ndarray:
        """Edges ``[0, s, 2s, ..., maxsize]`` of the sub-buffers."""
        return np.append(self._storage.offsets, self.maxsize)

    @property
    def options(self) -> dict[str, Any]:
        """The constructor options (Tianshou's ``options``)."""
        return {
            "stack_num": self.stack_num,
            "ignore_obs_next": not self._save_obs_next,
            "save_only_last_obs": self._save_only_last_obs,
            "sample_avail": self._sample_avail,
        }

    def _constructor_kwargs(self) -> dict[str, Any]:
        """Arguments that rebuild an empty twin of this buffer (used by ``load_hdf5``)."""
        return {**self._tdrl_config, "stack_num": self.stack_num}

    def __len__(self) -> int:
        return len(self._storage)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_fast_plan"] = None  # holds numpy views of the columns
        state["_plan_cache"] = None
        return state

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        storage = self.__dict__.get("_storage")
        if storage is not None and storage.columns:
            groups = {k[0] for k in storage.columns}
            if name in groups:
                return storage.td.get(name)
        raise AttributeError(f"{type(self).__name__} has no attribute or column {name!r}")

    def __repr__(self) -> str:
        """Tianshou's: ``ReplayBuffer()`` when nothing was stored, else the class name and
        the stored columns (all ``maxsize`` rows) as a Batch shows them."""
        name = type(self).__name__
        if not self._storage.columns:
            return f"{name}()"
        return name + repr(self._storage.td).removeprefix("Batch")

    # ------------------------------------------------------------ episodes
    def prev(self, index: Any) -> Any:
        """Index of the previous transition; unchanged at the start of an episode."""
        if isinstance(index, (int, np.integer)):
            return self._storage.prev(int(index))
        return self._storage.prev(as_index(index))

    def next(self, index: Any) -> Any:
        """Index of the next transition; unchanged at a done or the newest step."""
        if isinstance(index, (int, np.integer)):
            return self._storage.next(int(index))
        return self._storage.next(as_index(index))

    def unfinished_index(self) -> np.ndarray:
        """Newest index of every sub-buffer whose episode is still open."""
        return self._storage.unfinished_index()

    def _nstep_arrays(self) -> tuple[np.ndarray, ...] | None:
        """``(stop, nxt_base, rew, done, terminated)``: the flat numpy arrays an n-step
        chain reads (:func:`tdrl.algorithm.returns.nstep_reward_discount`'s compiled path:
        ``next(i) = i if stop[i] else nxt_base[i]``), or ``None`` where they would not give
        what :meth:`next` and the columns give (a subclass with its own ``next``, columns
        off the CPU, no scalar reward column).

        >>> buf = ReplayBuffer(4)
        >>> buf._nstep_arrays() is None  # nothing stored yet
        True
        """
        if (
            type(self).next is not ReplayBuffer.next
            or type(self).unfinished_index is not ReplayBuffer.unfinished_index
        ):
            return None
        st = self._storage
        cols = st.np_columns
        rew, done, term = cols.get(("rew",)), cols.get(DONE), cols.get(("terminated",))
        if rew is None or done is None or term is None or rew.size != rew.shape[0]:
            return None
        return st.stop, st.nxt_base, rew.reshape(-1), done, term

    def sample_indices(self, batch_size: int | None) -> np.ndarray:
        """``0``: all valid indices (chronological per sub-buffer); ``None``: a random
        permutation of them; ``n > 0``: ``n`` uniform draws with replacement; ``< 0``: empty.
        """
        st = self._storage
        if batch_size is not None and batch_size < 0:
            return _EMPTY
        if self.stack_num > 1 and self._sample_avail:
            all_idx = st.valid_indices()
            prev = all_idx
            for _ in range(self.stack_num - 2):
                prev = st.prev(prev)
            all_idx = all_idx[prev != st.prev(prev)]
            return draw_indices(all_idx, batch_size, self._rng)
        if batch_size == 0:
            return st.valid_indices()
        if batch_size is None:
            all_idx = st.valid_indices()
            return all_idx[torch.randperm(len(all_idx), generator=self._rng).numpy()]
        idx, _ = self._sampler.sample(st, batch_size)
        return idx.numpy() if isinstance(idx, torch.Tensor) else np.asarray(idx)

    def sample(self, batch_size: int | None) -> tuple[Batch, np.ndarray]:  # type: ignore[override]
        """``(self[indices], indices)`` with ``indices = sample_indices(batch_size)``."""
        if len(self) == 0:
            raise ValueError("cannot sample from an empty buffer: expected len(buffer) > 0, got 0")
        indices = self.sample_indices(batch_size)
        return self[indices], indices

    # ---------------------------------------------------------- management
    def update(self, buffer: ReplayBuffer) -> np.ndarray:
        """Append all valid data of ``buffer`` (chronologically); return the new indices.

        Episode statistics are left untouched, as in Tianshou.
        """
        if self._storage.num_rings != 1:
            raise NotImplementedError("update: a vector buffer cannot be updated by a buffer")
        if len(buffer) == 0:
            return _EMPTY
        src = buffer._storage
        from_idx = src.valid_indices()
        leaves = {
            k: src.np_columns[k][from_idx]
            if k in src.np_columns
            else src.columns[k][torch.as_tensor(from_idx)].cpu().numpy()
            for k in src.columns
            if k != DONE
        }
        done = src._done_at(from_idx)
        self._storage.check(leaves)
        self._fast_plan = None
        return self._storage.write_sequence(0, leaves, done, None, track_episodes=False)

    def reset(self, keep_statistics: bool = False) -> None:
        """Forget all data; ``keep_statistics`` keeps running episode return/length."""
        self._storage.reset_bookkeeping(keep_statistics)

    def drop_open_episodes(self) -> None:
        """End the running statistics of every unfinished episode (a collector calls it
        when it resets its envs mid-episode): the next episode's return and length count
        from its own first step, not from the dropped episode's. The rows stay."""
        self._storage.drop_open_episodes()

    def set_batch(self, batch: Any) -> None:
        """Replace the storage columns by ``batch`` (leading dimension ``maxsize``)."""
        leaves = flatten_full_batch(batch, self.maxsize)
        if DONE not in leaves:
            leaves[DONE] = np.zeros(self.maxsize, dtype=bool)
        self._storage.load_columns(leaves)
        self._fast_plan = None

    def get_buffer_indices(self, start: int, stop: int) -> np.ndarray:
        """Indices from ``start`` to ``stop`` (exclusive) within one sub-buffer, wrapping."""
        edges = self.subbuffer_edges
        first = int(np.searchsorted(edges, start, side="right")) - 1
        last = int(np.searchsorted(edges, stop - 1, side="right")) - 1
        if first != last:
            raise ValueError(
                f"start/stop: expected indices within one sub-buffer, got start={start} "
                f"(sub-buffer {first}) and stop={stop} (sub-buffer {last})"
            )
        if stop >= start:
            return np.arange(start, stop, dtype=np.int64)
        lo, hi = int(edges[first]), int(edges[first + 1])
        return np.concatenate([np.arange(start, hi), np.arange(lo, stop)]).astype(np.int64)

    def set_array_at_key(
        self, seq: Any, key: str, index: Any = None, default_value: float | None = None
    ) -> None:
        """Write the array ``seq`` into column ``key`` at the buffer indices ``index``
        (default: every row, ``maxsize`` of them), in place (Tianshou's method).

        A new column is filled with ``default_value`` elsewhere (NaN for a float array when
        ``None``, else 0).
        """
        arr = np.asarray(seq)
        idx = np.arange(self.maxsize) if index is None else np.asarray(index, dtype=np.int64)
        if arr.shape[:1] != idx.shape[:1]:
            raise ValueError(f"{key}: expected {len(idx)} rows, got shape {arr.shape}")
        st, col = self._storage, (key,)
        if col not in st.columns:
            st.allocate(col, tuple(arr.shape[1:]), arr.dtype)
            if default_value is not None or arr.dtype.kind == "f":
                fill = np.nan if default_value is None else default_value
                st._write(col, np.arange(self.maxsize), fill)
            self._fast_plan = None
        st._write(col, idx, arr)

    def isnull(self) -> Batch:
        """Per-element NaN mask of ``self[:]``."""
        return self[:].apply(
            lambda t: (
                torch.isnan(t) if t.is_floating_point() else torch.zeros_like(t, dtype=torch.bool)
            )
        )

    def hasnull(self) -> bool:
        """Whether any valid transition contains a NaN."""
        idx = self.sample_indices(0)
        return bool(persist.nan_rows(self._storage, idx).any())

    def dropnull(self) -> None:
        """Remove transitions containing NaN, compacting each sub-buffer."""
        persist.dropnull(self._storage)
        self._fast_plan = None

    # --------------------------------------------------------- persistence
    def save_hdf5(self, path: str | os.PathLike[str], compression: str | None = None) -> None:
        """Save data, bookkeeping, options and generator state to an HDF5 file."""
        with persist.open_hdf5(path, "w") as f:
            self.save_group(f, compression)

    @classmethod
    def load_hdf5(cls, path: str | os.PathLike[str], device: str | None = None) -> Any:
        """Rebuild a buffer saved by :meth:`save_hdf5`."""
        with persist.open_hdf5(path, "r") as f:
            return cls.load_group(f, device)

    def save_group(self, grp: Any, compression: str | None = None) -> None:
        """Write what :meth:`save_hdf5` saves into the open h5py group ``grp``."""
        persist.save_group(self, grp, compression)

    @classmethod
    def load_group(cls, grp: Any, device: str | None = None) -> Any:
        """Rebuild a buffer from an h5py group written by :meth:`save_group`."""
        return persist.load_group(cls, grp, device)

    @classmethod
    def from_data(
        cls,
        obs: Any,
        act: Any,
        rew: Any,
        terminated: Any,
        truncated: Any,
        done: Any,
        obs_next: Any,
    ) -> Any:
        """Build a full buffer from arrays or h5py datasets of equal length."""
        return persist.from_data(cls, obs, act, rew, terminated, truncated, done, obs_next)
