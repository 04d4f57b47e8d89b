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
from tensordict import TensorDict
from torchrl.data import ReplayBuffer as TorchRLReplayBuffer

from tdrl.data.batch import Batch
from tdrl.data.buffer import persist
from tdrl.data.buffer.sampler import EpisodeSampler, EpisodeWriter
from tdrl.data.buffer.schema import REQUIRED_KEYS, RESERVED_KEYS, Key, flatten_batch
from tdrl.data.buffer.storage import DONE, EpisodeStorage

_RING0 = np.zeros(1, dtype=np.int64)
_EMPTY = np.zeros(0, dtype=np.int64)
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


def _structure(data: Any) -> tuple | None:
    """Nested key layout of a dict input: ``((name, sub-layout or None), ...)``."""
    if type(data) is not dict:
        return None
    out = []
    for key, value in data.items():
        sub = _structure(value) if type(value) is dict else None
        out.append((key, sub))
    return tuple(out)


def _extract(struct: tuple, data: Any, out: list) -> bool:
    """Append the leaves of ``data`` to ``out`` if its layout is exactly ``struct``."""
    if type(data) is not dict or len(data) != len(struct):
        return False
    for (name, sub), (key, value) in zip(struct, data.items()):
        if name != key:
            return False
        if sub is None:
            out.append(value)
        elif not _extract(sub, value, out):
            return False
    return True


class _FastPlan:
    """What ``add`` needs to repeat an input layout it has already validated once."""

    __slots__ = (
        "cols",
        "cols3",
        "flat",
        "k",
        "keys",
        "layout",
        "rew",
        "specs",
        "stacked",
        "struct",
        "term",
        "trunc",
    )

    def __init__(self) -> None:
        self.cols: list[np.ndarray | None] = []
        self.cols3: list[np.ndarray | None] = []
        self.specs: list[tuple[tuple[int, ...], np.dtype]] = []
        self.flat: tuple[str, ...] | None = None
        self.struct: tuple | None = None
        self.keys: tuple[Key, ...] = ()
        self.k = self.layout = self.rew = self.term = self.trunc = 0
        self.stacked = False


class ReplayBuffer(TorchRLReplayBuffer):
    """Circular replay buffer that tracks episodes, with Tianshou's API.

    Args:
        size: capacity (number of transitions).
        stack_num: frames returned by ``get``/``__getitem__`` for ``obs``/``obs_next``.
        ignore_obs_next: do not store ``obs_next``; derive it via :meth:`next`.
        save_only_last_obs: store only the last frame of a stacked ``obs``.
        sample_avail: with ``stack_num > 1``, sample only indices with a full stack.
        seed: seed of the buffer's ``torch.Generator`` (all sampling draws from it).
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
        self.stack_num = int(stack_num)
        self._save_obs_next = not ignore_obs_next
        self._save_only_last_obs = bool(save_only_last_obs)
        self._sample_avail = bool(sample_avail)
        self._fast_plan: _FastPlan | None = None
        self._plan_cache: tuple | None = None
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
        if seed is None:
            gen.seed()
        else:
            gen.manual_seed(int(seed))
        super().__init__(
            storage=storage, sampler=EpisodeSampler(), writer=EpisodeWriter(), generator=gen
        )

    # ------------------------------------------------------------ properties
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
        return dict(self._tdrl_config)

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
            if name in ("info", "policy"):
                return make_batch({}, (storage.max_size,))
        raise AttributeError(f"{type(self).__name__} has no attribute or column {name!r}")

    def __repr__(self) -> str:
        keys = sorted({".".join(k) for k in self._storage.columns})
        return (
            f"{type(self).__name__}(maxsize={self.maxsize}, len={len(self)}, "
            f"buffer_num={self.buffer_num}, keys={keys})"
        )

    # ------------------------------------------------------------------- add
    def _rings(self, buffer_ids: Any) -> tuple[np.ndarray, bool]:
        """Validated ring ids and whether they are exactly ``0..buffer_num-1`` in order."""
        if isinstance(buffer_ids, torch.Tensor):
            buffer_ids = buffer_ids.cpu().numpy()
        ids = np.asarray(buffer_ids, dtype=np.int64).reshape(-1)
        lst = ids.tolist()
        n = self._storage.num_rings
        if lst == self._all_ids:
            return ids, True
        if lst and (min(lst) < 0 or max(lst) >= n):
            raise ValueError(f"buffer_ids: expected ids in [0, {n}), got {lst}")
        if len(set(lst)) != len(lst):
            raise ValueError(f"buffer_ids: expected distinct ids, got {lst}")
        return ids, False

    def _normalize(self, leaves: dict[Key, np.ndarray], k: int, stacked: bool) -> dict:
        out: dict[Key, np.ndarray] = {}
        last_obs = self._save_only_last_obs
        for key, arr in leaves.items():
            head = key[0]
            if head == "done" or (head == "obs_next" and not self._save_obs_next):
                continue
            if not stacked:
                arr = arr[None]
            elif arr.ndim == 0 or arr.shape[0] != k:
                raise ValueError(
                    f"{'.'.join(key)}: expected leading dimension {k} (= len(buffer_ids)), "
                    f"got shape {arr.shape}"
                )
            if head == "rew":
                if arr.dtype.kind != "f":
                    arr = arr.astype(np.float64)
            elif head == "terminated" or head == "truncated":
                if arr.dtype != np.bool_:
                    arr = arr.astype(bool)
                if arr.shape != (k,):
                    raise ValueError(
                        f"{head}: expected shape ({k},) (one flag per transition), got {arr.shape}"
                    )
            elif last_obs and (head == "obs" or head == "obs_next"):
                arr = arr[:, -1]
            out[key] = arr
        return out

    def add(
        self, batch: Any, buffer_ids: Any = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Add transitions; return ``(ptr, ep_rew, ep_len, ep_idx)`` (global indices).

        ``batch`` holds ``obs, act, rew, terminated, truncated`` (+ optional
        ``obs_next, info, policy`` and extra keys). Without ``buffer_ids`` a plain
        ``ReplayBuffer`` takes one non-stacked transition and a vector buffer one per
        sub-buffer. ``done`` is recomputed as ``terminated | truncated``. ``ep_rew`` and
        ``ep_len`` are 0 unless the episode ended; ``ep_idx`` is the episode start.
        Bad input raises before anything is written.
        """
        st = self._storage
        plan = self._fast_plan
        leaves: dict[Key, np.ndarray] | None = None
        arrs: list[Any] | None = None
        if plan is not None and plan.flat is not None:
            if type(batch) is dict:
                if tuple(batch) == plan.flat:
                    arrs = list(batch.values())
            elif isinstance(batch, TensorDict) and tuple(batch._tensordict) == plan.flat:
                try:
                    arrs = [v.numpy() for v in batch._tensordict.values()]
                except (RuntimeError, TypeError, AttributeError):
                    arrs = None
        elif plan is not None and plan.struct is not None and type(batch) is dict:
            arrs = []
            if not _extract(plan.struct, batch, arrs):
                arrs = None
        if arrs is None:
            leaves = flatten_batch(batch)
            arrs = list(leaves.values())
        if buffer_ids is None:
            rings = st.all_rings if self._vector else _RING0
            stacked = self._vector
            sel = None
        else:
            rings, every = self._rings(buffer_ids)
            stacked = True
            sel = None if every else rings
        k = len(rings)
        if (
            plan is not None
            and plan.k == k
            and plan.stacked == stacked
            and plan.layout == st.layout_version
            and (leaves is None or tuple(leaves) == plan.keys)
            and len(arrs) == len(plan.specs)
        ):
            for arr, (shape, dtype) in zip(arrs, plan.specs):
                if (
                    type(arr) is not np.ndarray
                    or arr.shape != shape
                    or (arr.dtype is not dtype and arr.dtype != dtype)
                ):
                    break
            else:
                rew = arrs[plan.rew]
                done = arrs[plan.term] | arrs[plan.trunc]
                if not stacked:
                    done, rew = done.reshape(1), rew[None]
                return st.write_step(sel, arrs, done, rew, cols=plan.cols, cols3=plan.cols3)
        if leaves is None:
            leaves = flatten_batch(batch)
        res = self._add_checked(leaves, tuple(leaves), rings, sel, stacked)
        if self._fast_plan is not None and self._fast_plan.flat is None:
            self._fast_plan.struct = _structure(batch)
        return res

    def _add_checked(
        self,
        leaves: dict[Key, np.ndarray],
        keys: tuple[Key, ...],
        rings: np.ndarray,
        sel: np.ndarray | None,
        stacked: bool,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The general ``add`` path: full validation, conversion and allocation."""
        st = self._storage
        k = len(rings)
        missing = [name for name in REQUIRED_KEYS if not any(x[0] == name for x in keys)]
        if missing:
            raise ValueError(
                f"batch: missing reserved key(s) {missing}; expected at least "
                f"{list(REQUIRED_KEYS)}, got {sorted({x[0] for x in keys})}"
            )
        out = self._normalize(leaves, k, stacked)
        if k == 0:
            return _EMPTY, np.zeros(0), _EMPTY, _EMPTY
        if ("terminated",) not in out or ("truncated",) not in out:
            raise ValueError("terminated/truncated: expected arrays of flags, got nested values")
        st.check(out)
        done = out[("terminated",)] | out[("truncated",)]
        res = st.write_step(sel, out, done, out[("rew",)])
        self._fast_plan = self._make_plan(leaves, keys, out, k, stacked)
        return res

    def _make_plan(
        self,
        leaves: dict[Key, np.ndarray],
        keys: tuple[Key, ...],
        out: dict,
        k: int,
        stacked: bool,
    ) -> _FastPlan | None:
        """Cache what a repeat of this exact input layout needs: no conversions allowed."""
        st = self._storage
        if not st._numpy_ok or len(out) != len(st.columns) - 1 or self._save_only_last_obs:
            return None
        plan = _FastPlan()
        shape3 = (st.num_rings, st.ring_size)
        for key, arr in leaves.items():
            if type(arr) is not np.ndarray:
                return None
            if key in out:
                col = st.np_columns[key]
                if arr.dtype != col.dtype:
                    return None
                plan.cols.append(col)
                plan.cols3.append(col.reshape(shape3 + col.shape[1:]))
            else:
                plan.cols.append(None)
                plan.cols3.append(None)
            plan.specs.append((arr.shape, arr.dtype))
        pos = {key: i for i, key in enumerate(keys)}
        plan.keys, plan.k, plan.stacked, plan.layout = keys, k, stacked, st.layout_version
        plan.term, plan.trunc, plan.rew = (
            pos[("terminated",)],
            pos[("truncated",)],
            pos[("rew",)],
        )
        if all(len(key) == 1 for key in keys):
            plan.flat = tuple(key[0] for key in keys)
        return plan

    # ------------------------------------------------------------ indexing
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
        root: dict[str, Any] = {}
        for sub, np_col, col in entries:
            node = root
            for part in sub[:-1]:
                node = node.setdefault(part, {})
            node[sub[-1]] = self._take(np_col, col, idx)
        return root

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
        self._plan_cache = (st.layout_version, plan)
        return plan

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
                else np.arange(len(self), dtype=np.int64)[index]
            )
        else:
            idx = as_index([index] if scalar else index)
        if idx.size and idx.min() < 0:
            idx = idx % self.maxsize
        out = self._gather(idx)
        return out[0] if scalar else out

    def _gather(self, idx: np.ndarray) -> Batch:
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
        return make_batch(src, (len(idx),))

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
            if batch_size == 0:
                return all_idx
            if batch_size is None:
                return all_idx[torch.randperm(len(all_idx), generator=self._rng).numpy()]
            if len(all_idx) == 0:
                raise ValueError("cannot sample: expected available indices, got none")
            pick = torch.randint(len(all_idx), (batch_size,), generator=self._rng).numpy()
            return all_idx[pick]
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

    def set_batch(self, batch: Any) -> None:
        """Replace the storage columns by ``batch`` (leading dimension ``maxsize``)."""
        leaves = flatten_batch(batch)
        bad = sorted({k[0] for k in leaves} - set(RESERVED_KEYS))
        if bad:
            raise ValueError(f"batch: expected only reserved keys {list(RESERVED_KEYS)}, got {bad}")
        for key, arr in leaves.items():
            if arr.ndim == 0 or arr.shape[0] != self.maxsize:
                raise ValueError(
                    f"{'.'.join(key)}: expected leading dimension {self.maxsize}, got {arr.shape}"
                )
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
        persist.save_hdf5(self, path, compression)

    @classmethod
    def load_hdf5(cls, path: str | os.PathLike[str], device: str | None = None) -> Any:
        """Rebuild a buffer saved by :meth:`save_hdf5`."""
        return persist.load_hdf5(cls, path, device)

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
