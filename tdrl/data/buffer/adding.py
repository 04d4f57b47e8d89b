"""The write path of tdrl buffers: ``add`` with validation and a cached fast path.

The first ``add`` of a given input layout goes through full validation and conversion
(:meth:`AddMixin._add_checked`); it then records a :class:`_FastPlan` (key layout, shapes,
dtypes, numpy column views). A repeat of that exact layout is checked with a few cheap
shape/dtype comparisons and written with one numpy assignment per key, no TensorDict built.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict

from tdrl.data.batch import Batch
from tdrl.data.batch_ops import numpy_entries
from tdrl.data.buffer.schema import REQUIRED_KEYS, Key, check_missing, flatten_batch
from tdrl.data.buffer.storage import EpisodeStorage

_RING0 = np.zeros(1, dtype=np.int64)
_EMPTY = np.zeros(0, dtype=np.int64)
_shape_of = attrgetter("shape")
_dtype_of = attrgetter("dtype")


def _structure(data: Any) -> tuple | None:
    """Nested key layout of a dict input: ``(names, subs)``.

    ``names`` is the tuple of keys in order; ``subs`` is ``None`` when every value is a
    leaf, else a tuple holding the sub-layout of each nested dict value (``None`` for a
    leaf).
    """
    if type(data) is not dict:
        return None
    subs = tuple(_structure(value) if type(value) is dict else None for value in data.values())
    return tuple(data), (None if all(sub is None for sub in subs) else subs)


def _extract(struct: tuple, data: Any, out: list) -> bool:
    """Append the leaves of ``data`` to ``out`` if its layout is exactly ``struct``."""
    names, subs = struct
    if type(data) is not dict or tuple(data) != names:
        return False
    if subs is None:
        out.extend(data.values())
        return True
    for sub, value in zip(subs, data.values()):
        if sub is None:
            out.append(value)
        elif not _extract(sub, value, out):
            return False
    return True


def _one_level(struct: tuple) -> tuple[tuple[int, tuple[str, ...]], ...] | None:
    """For a layout whose nested dicts hold only leaves: ``(position, names)`` of each
    nested dict among the top-level values, last first (see :func:`_extract_one_level`);
    ``None`` for deeper layouts."""
    subs = struct[1]
    if subs is None:
        return ()
    out = []
    for pos, sub in enumerate(subs):
        if sub is not None:
            if sub[1] is not None:
                return None
            out.append((pos, sub[0]))
    return tuple(reversed(out))


def _extract_one_level(
    names: tuple[str, ...], nested: tuple[tuple[int, tuple[str, ...]], ...], data: dict
) -> list[Any] | None:
    """The leaves of ``data`` in order if its layout is ``names`` with the nested dicts
    ``nested`` (from :func:`_one_level`), else ``None``: :func:`_extract` without the
    recursion, for the collector's ``{..., "info": {"env_id": ...}}``."""
    if tuple(data) != names:
        return None
    out = list(data.values())
    for pos, sub_names in nested:
        sub = out[pos]
        if type(sub) is not dict or tuple(sub) != sub_names:
            return None
        out[pos : pos + 1] = sub.values()
    return out


def _flat_td_arrays(
    entries: dict[str, Any], plan: _FastPlan, batch: Any = None
) -> list[Any] | None:
    """The CPU tensors of a flat TensorDict's entries as numpy arrays, when their keys are
    ``plan.flat`` once empty nested TensorDicts (``info={}``, ``policy={}``) are left out.

    The key layout with the empty entries is remembered in ``plan`` (``td_keys``,
    ``td_empty``), so a repeat only checks that those entries are still empty.
    """
    flat = plan.flat
    keys = tuple(entries)
    if keys != flat:
        if keys != plan.td_keys:
            names, empty = [], []
            for name, value in entries.items():
                if type(value) is torch.Tensor:
                    names.append(name)
                elif isinstance(value, TensorDict) and not value._tensordict:
                    empty.append(name)
                else:
                    return None
            if tuple(names) != flat:
                return None
            plan.td_keys, plan.td_empty = keys, tuple(empty)
        for name in plan.td_empty:
            value = entries[name]
            if (
                not (type(value) is plan.td_type or isinstance(value, TensorDict))
                or value._tensordict  # type: ignore[union-attr]
            ):
                return None
    try:
        if batch is not None and flat is not None:
            return numpy_entries(batch, flat)
        return [entries[name].numpy() for name in flat]  # type: ignore[union-attr]
    except (RuntimeError, TypeError, AttributeError):  # grad, device, non-tensor
        return None


class _FastPlan:
    """What ``add`` needs to repeat an input layout it has already validated once."""

    __slots__ = (
        "cols",
        "cols3",
        "dtypes",
        "flat",
        "k",
        "keys",
        "layout",
        "nested",
        "rew",
        "shapes",
        "stacked",
        "struct",
        "td_empty",
        "td_keys",
        "td_type",
        "term",
        "trunc",
        "types",
    )

    def __init__(self) -> None:
        self.cols: list[np.ndarray | None] = []
        self.cols3: list[np.ndarray | None] = []
        self.flat: tuple[str, ...] | None = None
        self.td_keys: tuple[str, ...] | None = None  # a TensorDict input's keys, empties too
        self.td_empty: tuple[str, ...] = ()
        self.td_type: type | None = None  # the TensorDict class of the last input
        self.struct: tuple | None = None
        self.nested: tuple[tuple[int, tuple[str, ...]], ...] | None = None
        # the planned leaves' types, shapes and dtypes, compared as lists (one C-level pass
        # per attribute)
        self.types: list[type] = []
        self.shapes: list[tuple[int, ...]] = []
        self.dtypes: list[np.dtype] = []
        self.keys: tuple[Key, ...] = ()
        self.k = self.layout = self.rew = self.term = self.trunc = 0
        self.stacked = False


class AddMixin:
    """``add`` for :class:`~tdrl.data.buffer.base.ReplayBuffer` (see the module docstring)."""

    _storage: EpisodeStorage
    _vector: bool
    _all_ids: list[int]
    _save_obs_next: bool
    _save_only_last_obs: bool
    _fast_plan: _FastPlan | None

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
        Bad input raises before anything is written: a key that earlier adds stored
        missing (:class:`~tdrl.data.buffer.schema.BufferKeyError`; keys under ``info`` and
        ``policy`` may come and go, stored as zeros when absent, as in Tianshou), or a
        value of another per-transition shape or dtype kind than its column (``ValueError``).
        """
        st = self._storage
        plan = self._fast_plan
        leaves: dict[Key, np.ndarray] | None = None
        arrs: list[Any] | None = None
        if plan is not None and plan.flat is not None:
            if type(batch) is dict:
                if tuple(batch) == plan.flat:
                    arrs = list(batch.values())
            elif type(batch) is plan.td_type or isinstance(batch, TensorDict):
                arrs = _flat_td_arrays(
                    batch._tensordict,  # type: ignore[union-attr]
                    plan,
                    batch if type(batch) is Batch else None,
                )
                plan.td_type = type(batch)  # the next isinstance is a type identity
        elif plan is not None and plan.struct is not None and type(batch) is dict:
            if plan.nested is not None:
                arrs = _extract_one_level(plan.struct[0], plan.nested, batch)
            else:
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
        elif (
            type(buffer_ids) is np.ndarray
            and buffer_ids.dtype.kind in "iu"
            and buffer_ids.tolist() == self._all_ids
        ) or (type(buffer_ids) is list and buffer_ids == self._all_ids):
            # every ring in order (the collector's call): what ``_rings`` would return
            rings, stacked, sel = st.all_rings, True, None
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
            and list(map(type, arrs)) == plan.types  # numpy arrays of the planned layout
            and list(map(_shape_of, arrs)) == plan.shapes
            and list(map(_dtype_of, arrs)) == plan.dtypes
        ):
            rew = arrs[plan.rew]
            done = arrs[plan.term] | arrs[plan.trunc]
            if sel is None and stacked and st._lockstep:
                return st._write_lockstep(arrs, plan.cols3, done, rew)
            if not stacked:
                done, rew = done.reshape(1), rew[None]
            return st.write_step(sel, arrs, done, rew, cols=plan.cols, cols3=plan.cols3)
        if leaves is None:
            leaves = flatten_batch(batch)
        res = self._add_checked(leaves, tuple(leaves), rings, sel, stacked)
        if self._fast_plan is not None and self._fast_plan.flat is None:
            self._fast_plan.struct = struct = _structure(batch)
            self._fast_plan.nested = None if struct is None else _one_level(struct)
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
        if st.columns:
            check_missing(st.columns, out)
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
        shape3 = (st.num_rings, st.ring_size)  # cols3: viewed (ring_size, num_rings, ...)
        for key, arr in leaves.items():
            if type(arr) is not np.ndarray:
                return None
            if key in out:
                col = st.np_columns[key]
                if arr.dtype != col.dtype:
                    return None
                plan.cols.append(col)
                plan.cols3.append(col.reshape(shape3 + col.shape[1:]).swapaxes(0, 1))
            else:
                plan.cols.append(None)
                plan.cols3.append(None)
            plan.types.append(np.ndarray)
            plan.shapes.append(arr.shape)
            plan.dtypes.append(arr.dtype)
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
