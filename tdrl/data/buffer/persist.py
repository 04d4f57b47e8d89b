"""Persistence and maintenance helpers for tdrl buffers: HDF5, ``from_data``, NaN handling.

Pickle, ``state_dict``/``load_state_dict`` and TorchRL ``dumps``/``loads`` go through the
storage (:mod:`tdrl.data.buffer.storage`); this module holds the HDF5 format::

    /columns/<dotted.key>   one dataset per column (length maxsize)
    /meta/<name>            cursor, lengths, last_index, ep_return, ep_len, ep_start
    attrs: class, config (JSON constructor kwargs), rng_state

Buffers write this layout into an h5py group (``save_group``/``load_group``; subclasses add
their extras there, e.g. ``/prio``), so a plain file is the layout at the root and a
``CachedReplayBuffer`` file holds its main buffer and its cache as groups ``/main`` and
``/cache`` plus attrs ``class``, ``config``, ``main_class`` and ``rng_state``.
"""

from __future__ import annotations

import importlib
import json
import os
from typing import Any

import numpy as np
import torch

from tdrl.data.buffer.schema import REQUIRED_KEYS, Key, flatten_batch
from tdrl.data.buffer.storage import EpisodeStorage

_META = ("cursor", "lengths", "last_index", "ep_return", "ep_len", "ep_start")


def _h5py() -> Any:
    try:
        import h5py
    except ImportError as err:  # pragma: no cover - h5py is an optional dependency
        raise ImportError("HDF5 persistence needs h5py: pip install 'tdrl[hdf5]'") from err
    return h5py


def open_hdf5(path: str | os.PathLike[str], mode: str) -> Any:
    """Open ``path`` with h5py (``mode`` ``"w"`` or ``"r"``); a clear error without h5py."""
    return _h5py().File(os.fspath(path), mode)


def save_group(buf: Any, grp: Any, compression: str | None = None) -> None:
    """Write ``buf`` (data, bookkeeping, options, generator state) into the h5py group ``grp``
    (the file's root group for a plain buffer file)."""
    st: EpisodeStorage = buf._storage
    grp.attrs["class"] = type(buf).__name__
    grp.attrs["config"] = json.dumps(buf._constructor_kwargs())
    grp.attrs["rng_state"] = buf.generator.get_state().numpy()
    cols = grp.create_group("columns")
    for key, col in st.columns.items():
        cols.create_dataset(".".join(key), data=col.cpu().numpy(), compression=compression)
    meta = grp.create_group("meta")
    state = st.meta_state()
    for name in _META:
        meta.create_dataset(name, data=state[name])
    meta.attrs["max_size"] = st.max_size
    meta.attrs["num_rings"] = st.num_rings


def _where(grp: Any) -> str:
    """``file.hdf5`` or ``file.hdf5:/group`` for error messages."""
    name = os.fspath(grp.file.filename)
    return name if grp.name == "/" else f"{name}:{grp.name}"


def _require(grp: Any, names: tuple[str, ...], what: str, attrs: bool = False) -> None:
    have = sorted(grp.attrs) if attrs else sorted(grp)
    missing = [n for n in names if n not in have]
    if missing:
        raise ValueError(
            f"{_where(grp)}: missing {what} {missing}; expected a buffer written by "
            f"save_hdf5 with {what} {list(names)}, got {have}"
        )


def _datasets(grp: Any) -> list[tuple[str, Any]]:
    """``(name, dataset)`` of every member of ``grp``; a non-dataset member raises."""
    h5py = _h5py()
    out = []
    for name, item in grp.items():
        if not isinstance(item, h5py.Dataset):
            raise ValueError(
                f"{_where(grp)}/{name}: expected a dataset (one column), got {type(item).__name__}"
            )
        out.append((name, item))
    return out


def _check_columns(grp: Any, columns: dict[Key, np.ndarray], meta: dict[str, Any]) -> None:
    """Raise naming the first required column that is missing or mis-shaped."""
    where = _where(grp)
    size, rings = meta["max_size"], meta["num_rings"]
    for name in _META:
        arr = meta[name]
        if arr.ndim == 0 or arr.shape[0] != rings:
            raise ValueError(
                f"{where}: meta/{name}: expected shape ({rings}, ...) (one entry per "
                f"sub-buffer), got {arr.shape}"
            )
    if rings <= 0 or size % rings:
        raise ValueError(
            f"{where}: meta: expected max_size a positive multiple of num_rings, got "
            f"max_size={size}, num_rings={rings}"
        )
    ring = size // rings
    lengths, cursor = meta["lengths"], meta["cursor"]
    if not (((lengths >= 0) & (lengths <= ring)).all() and ((cursor >= 0) & (cursor < ring)).all()):
        raise ValueError(
            f"{where}: meta/lengths, meta/cursor: expected values in [0, {ring}] and "
            f"[0, {ring}), got {lengths.tolist()} and {cursor.tolist()}"
        )
    if not columns and not lengths.any():
        return  # a buffer that never held data
    have = sorted(".".join(k) for k in columns)
    for name in (*REQUIRED_KEYS, "done"):
        keys = [k for k in columns if k[0] == name]
        if not keys:
            raise ValueError(
                f"{where}: columns/{name}: missing; expected the required columns "
                f"{[*REQUIRED_KEYS, 'done']}, got {have}"
            )
        for key in keys:
            arr = columns[key]
            dotted = ".".join(key)
            if arr.ndim == 0 or arr.shape[0] != size:
                raise ValueError(
                    f"{where}: columns/{dotted}: expected leading dimension {size} "
                    f"(max_size), got shape {arr.shape}"
                )
        if name in ("terminated", "truncated", "done"):
            arr = columns[(name,)] if (name,) in columns else columns[keys[0]]
            if arr.shape != (size,) or arr.dtype != np.bool_:
                raise ValueError(
                    f"{where}: columns/{name}: expected bool flags of shape ({size},), got "
                    f"{arr.dtype} of shape {arr.shape}"
                )
        if name == "rew" and ((name,) not in columns or columns[(name,)].dtype.kind != "f"):
            got = {".".join(k): str(columns[k].dtype) for k in keys}
            raise ValueError(f"{where}: columns/rew: expected one float column, got {got}")


def load_group(cls: Any, grp: Any, device: str | None = None) -> Any:
    """Rebuild a buffer of class ``cls`` from a group written by :func:`save_group`.

    A group lacking a part of that layout, or with a required column (``obs``, ``act``,
    ``rew``, ``terminated``, ``truncated``, ``done``) missing or mis-shaped, raises a
    ``ValueError`` naming the file and the part.
    """
    _require(grp, ("config", "rng_state"), "attributes", attrs=True)
    _require(grp, ("columns", "meta"), "groups")
    _require(grp["meta"], _META, "datasets")
    _require(grp["meta"], ("max_size", "num_rings"), "attributes", attrs=True)
    try:
        config = json.loads(grp.attrs["config"])
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"{_where(grp)}: attribute config: expected JSON constructor arguments, got "
            f"{grp.attrs['config']!r}"
        ) from err
    if not isinstance(config, dict):
        raise ValueError(f"{_where(grp)}: attribute config: expected a JSON object, got {config!r}")
    columns = {tuple(name.split(".")): ds[()] for name, ds in _datasets(grp["columns"])}
    meta: dict[str, Any] = {name: np.asarray(grp["meta"][name][()]) for name in _META}
    meta["max_size"] = int(grp["meta"].attrs["max_size"])
    meta["num_rings"] = int(grp["meta"].attrs["num_rings"])
    _check_columns(grp, columns, meta)
    if device is not None:
        config["device"] = device
    buf = cls(**config)
    rng_state = np.asarray(grp.attrs["rng_state"], dtype=np.uint8)
    buf._storage.load_columns(columns)
    buf._storage.load_meta_state(meta)
    buf.generator.set_state(torch.from_numpy(rng_state.copy()))
    return buf


def save_cached_hdf5(buf: Any, path: str | os.PathLike[str], compression: str | None) -> None:
    """Write a ``CachedReplayBuffer``: groups ``/main`` and ``/cache`` plus attrs ``class``,
    ``config`` (JSON constructor kwargs), ``main_class`` (``module:qualname``), ``rng_state``.
    """
    main = buf.main_buffer
    with open_hdf5(path, "w") as f:
        f.attrs["class"] = type(buf).__name__
        f.attrs["config"] = json.dumps(buf._constructor_kwargs())
        f.attrs["main_class"] = f"{type(main).__module__}:{type(main).__qualname__}"
        f.attrs["rng_state"] = buf.generator.get_state().numpy()
        main.save_group(f.create_group("main"), compression)
        buf.cache.save_group(f.create_group("cache"), compression)


def load_cached_hdf5(
    cls: Any,
    cache_cls: Any,
    path: str | os.PathLike[str],
    device: str | None = None,
    *,
    buffer_base: type,
) -> Any:
    """Rebuild a ``cls`` (cached) buffer from a file written by :func:`save_cached_hdf5`;
    the file's main buffer class must subclass ``buffer_base``."""
    with open_hdf5(path, "r") as f:
        if "main" not in f or "cache" not in f or "main_class" not in f.attrs:
            raise ValueError(
                f"{os.fspath(path)}: expected a file written by CachedReplayBuffer.save_hdf5 "
                f"(groups ['cache', 'main']), got class={f.attrs.get('class')!r} with "
                f"groups {sorted(f)}"
            )
        config = json.loads(f.attrs["config"])
        main = _buffer_class(str(f.attrs["main_class"]), buffer_base).load_group(f["main"], device)
        cache = cache_cls.load_group(f["cache"], device)
        rng_state = np.asarray(f.attrs["rng_state"], dtype=np.uint8)
    buf = cls(main, **config)
    buf.cache._storage.load_state_dict(cache._storage.state_dict())
    buf.cache.generator.set_state(cache.generator.get_state())
    buf.generator.set_state(torch.from_numpy(rng_state.copy()))
    return buf


def _buffer_class(spec: str, base: type) -> Any:
    """The class named ``module:qualname``; it must be a subclass of ``base`` (the tdrl
    ``ReplayBuffer``, passed in: this module is imported by ``base.py``, never the reverse).
    """
    module, _, qualname = spec.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise ValueError(f"main_class: expected a tdrl ReplayBuffer subclass, got {spec!r}")
    return obj


def from_data(
    cls: Any,
    obs: Any,
    act: Any,
    rew: Any,
    terminated: Any,
    truncated: Any,
    done: Any,
    obs_next: Any,
) -> Any:
    """A full ``cls`` buffer holding the given arrays (or h5py datasets) in order.

    ``done`` is stored as ``done | terminated | truncated``; unlike Tianshou, the newest
    index is the last row, so ``next``/``prev``/``unfinished_index`` are meaningful.

    Example:
        >>> from tdrl.data.buffer import ReplayBuffer
        >>> z = np.zeros(4, dtype=bool)
        >>> buf = ReplayBuffer.from_data(np.arange(4), np.arange(4), np.ones(4),
        ...                              np.array([0, 1, 0, 0], bool), z, z, np.arange(1, 5))
        >>> len(buf), buf.next(np.arange(4)).tolist(), buf.unfinished_index().tolist()
        (4, [1, 1, 3, 3], [3])
    """
    parts = {
        "obs": obs,
        "act": act,
        "rew": rew,
        "terminated": terminated,
        "truncated": truncated,
        "done": done,
        "obs_next": obs_next,
    }
    leaves = flatten_batch(parts)
    for name in parts:
        if not any(k[0] == name for k in leaves):
            got = "None" if parts[name] is None else f"an empty {type(parts[name]).__name__}"
            raise ValueError(f"{name}: expected an array (one row per transition), got {got}")
    size = len(leaves[("obs",)]) if ("obs",) in leaves else len(next(iter(leaves.values())))
    for key, arr in leaves.items():
        if arr.ndim == 0 or arr.shape[0] != size:
            raise ValueError(
                f"{'.'.join(key)}: expected length {size} (= len(obs)), got shape {arr.shape}"
            )
    for name in ("rew", "terminated", "truncated", "done"):
        if (name,) not in leaves:
            raise ValueError(f"{name}: expected an array, got a nested mapping")
        shape = leaves[(name,)].shape
        if name != "rew" and shape[1:] not in ((), (1,)):
            raise ValueError(f"{name}: expected shape ({size},) (one flag per row), got {shape}")
    buf = cls(max(size, 1))
    if size == 0:
        return buf
    flags = np.zeros(size, dtype=bool)
    for name in ("terminated", "truncated", "done"):
        flag = leaves.pop((name,)).astype(bool).reshape(size)
        flags |= flag
        if name != "done":
            leaves[(name,)] = flag
    rew_arr = leaves[("rew",)]
    if rew_arr.dtype.kind != "f":
        leaves[("rew",)] = rew_arr.astype(np.float64)
    buf._storage.write_sequence(0, leaves, flags, leaves[("rew",)])
    return buf


def nan_rows(st: EpisodeStorage, idx: np.ndarray) -> np.ndarray:
    """Bool mask over ``idx``: rows holding a NaN in any floating column."""
    bad = np.zeros(len(idx), dtype=bool)
    for col in st.columns.values():
        if col.is_floating_point():
            vals = col[torch.as_tensor(idx, device=col.device)].cpu().numpy()
            flat = vals.reshape(len(idx), int(np.prod(vals.shape[1:])))  # -1 fails on 0 rows
            bad |= np.isnan(flat).any(-1)
    return bad


def dropnull(st: EpisodeStorage) -> None:
    """Drop NaN-holding rows from every ring and compact the remaining rows in order."""
    new_cols: dict[Key, np.ndarray] = {k: v.cpu().numpy().copy() for k, v in st.columns.items()}
    for ring in range(st.num_rings):
        off = int(st.offsets[ring])
        idx = st.ring_indices(ring)
        keep = idx[~nan_rows(st, idx)]
        m = len(keep)
        for key, col in st.columns.items():
            src = col.cpu().numpy()
            new_cols[key][off : off + m] = src[keep]
        st.lengths[ring] = m
        st.cursor[ring] = m % st.ring_size
        st.last_index[ring] = off + max(m - 1, 0)
    for key, arr in new_cols.items():
        st.columns[key].copy_(torch.from_numpy(arr))
    st.refresh_links()
