"""Input normalisation and validation for buffer writes.

A batch handed to ``add`` (a ``Batch``/``TensorDict`` or a nested mapping of numpy arrays,
tensors or scalars) is flattened once into ``{key_tuple: np.ndarray}``; validation is a
handful of cheap shape/dtype comparisons against the allocated columns.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase, is_non_tensor

Key = tuple[str, ...]

RESERVED_KEYS = (
    "obs",
    "act",
    "rew",
    "terminated",
    "truncated",
    "done",
    "obs_next",
    "info",
    "policy",
)
REQUIRED_KEYS = ("obs", "act", "rew", "terminated", "truncated")
# Groups whose keys may come and go between adds (a missing one is stored as zeros, as in
# Tianshou): env infos vary from step to step, and random-action steps carry no policy data.
OPTIONAL_GROUPS = ("info", "policy")

_KIND_NAMES = {"b": "bool", "i": "integer", "u": "integer", "f": "float", "c": "complex"}


class BufferKeyError(KeyError, ValueError):
    """A buffer write lacks a key (column) the buffer holds.

    Both a ``KeyError`` and a ``ValueError``; its message is printed as is (no quotes).

    >>> err = BufferKeyError("obs_next: missing")
    >>> isinstance(err, KeyError) and isinstance(err, ValueError), str(err)
    (True, 'obs_next: missing')
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def dtype_kind(dtype: np.dtype) -> str:
    """The kind of ``dtype`` a column keeps: ``bool``, ``integer``, ``float`` or ``complex``.

    >>> dtype_kind(np.dtype(np.uint8)), dtype_kind(np.dtype(np.float32))
    ('integer', 'float')
    """
    return _KIND_NAMES.get(dtype.kind, dtype.kind)


def check_missing(columns: Any, keys: Any) -> None:
    """Raise :class:`BufferKeyError` if ``keys`` (of one write) lack a stored column.

    ``done`` (recomputed) and keys under :data:`OPTIONAL_GROUPS` may be absent.

    Example:
        >>> check_missing([("obs",), ("obs_next",), ("done",)], [("obs",)])
        Traceback (most recent call last):
        ...
        tdrl.data.buffer.schema.BufferKeyError: obs_next: missing from this add; expected the \
keys earlier adds stored ['obs', 'obs_next'], got ['obs']
    """
    have = set(keys)
    missing = [
        k for k in columns if k not in have and k != ("done",) and k[0] not in OPTIONAL_GROUPS
    ]
    if missing:
        names = ", ".join(".".join(k) for k in missing)
        stored = sorted(".".join(k) for k in columns if k != ("done",))
        raise BufferKeyError(
            f"{names}: missing from this add; expected the keys earlier adds stored "
            f"{stored}, got {sorted('.'.join(k) for k in have)}"
        )


_WARNED_DROPPED: set[Key] = set()


def warn_dropped(key: Key, what: str) -> None:
    """Warn (once per key and process) that a non-numeric ``info`` leaf is not stored.

    Buffers hold tensors only; strings and other objects under ``info`` are skipped rather
    than rejected, since envs commonly put them there.
    """
    if key in _WARNED_DROPPED:
        return
    _WARNED_DROPPED.add(key)
    warnings.warn(
        f"{'.'.join(key)}: expected a numeric or boolean value, got {what}; "
        "this non-numeric info entry is not stored in the buffer",
        UserWarning,
        stacklevel=4,
    )


def to_numpy(key: Key, value: Any) -> np.ndarray | None:
    """Convert one leaf to numpy; ``None`` for non-numeric leaves under ``info``.

    Example:
        >>> to_numpy(("rew",), 1.5)
        array(1.5)
        >>> to_numpy(("info", "name"), "abc") is None
        True
    """
    if isinstance(value, torch.Tensor):
        arr = value.detach().cpu().numpy()
    elif isinstance(value, np.ndarray):
        arr = value
    else:
        arr = np.asarray(value)
    if arr.dtype.kind not in "biufc":
        if key[0] == "info":
            warn_dropped(key, f"dtype {arr.dtype}")
            return None
        raise TypeError(
            f"{'.'.join(key)}: expected a numeric or boolean array, got dtype {arr.dtype}"
        )
    return arr


def _flatten_mapping(prefix: Key, data: Mapping[str, Any], out: dict[Key, np.ndarray]) -> None:
    for name, value in data.items():
        key = (*prefix, name)
        tp = type(value)
        if tp is np.ndarray and value.dtype.kind in "biuf":
            out[key] = value
        elif tp is dict:
            _flatten_mapping(key, value, out)
        elif isinstance(value, TensorDictBase):
            _flatten_td_into(key, value, out)
        elif isinstance(value, Mapping):
            _flatten_mapping(key, value, out)
        elif value is not None:
            arr = to_numpy(key, value)
            if arr is not None:
                out[key] = arr


def _flatten_td_into(prefix: Key, td: TensorDictBase, out: dict[Key, np.ndarray]) -> None:
    if isinstance(td, TensorDict):
        for name, value in td._tensordict.items():
            key = (*prefix, name)
            if type(value) is torch.Tensor and value.device.type == "cpu":
                arr = value.numpy() if not value.requires_grad else value.detach().numpy()
                if arr.dtype.kind in "biufc":
                    out[key] = arr
                    continue
            if isinstance(value, TensorDictBase) and not is_non_tensor(value):
                _flatten_td_into(key, value, out)
            elif isinstance(value, torch.Tensor):
                conv = to_numpy(key, value)
                if conv is not None:
                    out[key] = conv
            elif key[0] != "info":
                raise TypeError(f"{'.'.join(key)}: expected a tensor, got {type(value).__name__}")
            else:
                warn_dropped(key, type(value).__name__)
        return
    for name, value in td.items(include_nested=True, leaves_only=True):
        key = (*prefix, name) if isinstance(name, str) else (*prefix, *name)
        leaf: np.ndarray | None
        if isinstance(value, torch.Tensor):
            leaf = to_numpy(key, value)
        elif key[0] == "info" or (prefix and prefix[0] == "info"):
            warn_dropped(key, type(value).__name__)
            leaf = None
        else:
            raise TypeError(f"{'.'.join(key)}: expected a tensor, got {type(value).__name__}")
        if leaf is not None:
            out[key] = leaf


def flatten_td(td: TensorDictBase) -> dict[Key, np.ndarray]:
    """Flatten a TensorDict into ``{key_tuple: array}`` (non-tensor ``info`` leaves dropped).

    Example:
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"obs": {"id": torch.zeros(2)}, "act": torch.ones(2)}, [2])
        >>> sorted(flatten_td(td))
        [('act',), ('obs', 'id')]
    """
    out: dict[Key, np.ndarray] = {}
    _flatten_td_into((), td, out)
    return out


def flatten_batch(batch: Any) -> dict[Key, np.ndarray]:
    """Flatten a Batch/TensorDict or nested mapping into ``{key_tuple: np.ndarray}``.

    Example:
        >>> leaves = flatten_batch({"obs": {"id": 1}, "rew": 0.5, "info": {}})
        >>> {k: v.tolist() for k, v in leaves.items()}
        {('obs', 'id'): 1, ('rew',): 0.5}
    """
    out: dict[Key, np.ndarray] = {}
    if isinstance(batch, TensorDictBase):
        _flatten_td_into((), batch, out)
    elif isinstance(batch, Mapping):
        _flatten_mapping((), batch, out)
    else:
        raise TypeError(
            f"batch: expected a Batch, TensorDict or mapping, got {type(batch).__name__}"
        )
    return out


def flatten_full_batch(batch: Any, maxsize: int) -> dict[Key, np.ndarray]:
    """Flatten a ``set_batch`` argument: reserved keys only, leading dimension ``maxsize``.

    Example:
        >>> sorted(flatten_full_batch({"obs": np.zeros(3), "rew": np.ones(3)}, 3))
        [('obs',), ('rew',)]
        >>> flatten_full_batch({"obs": np.zeros(2)}, 3)
        Traceback (most recent call last):
        ...
        ValueError: obs: expected leading dimension 3, got (2,)
    """
    leaves = flatten_batch(batch)
    bad = sorted({k[0] for k in leaves} - set(RESERVED_KEYS))
    if bad:
        raise ValueError(f"batch: expected only reserved keys {list(RESERVED_KEYS)}, got {bad}")
    for key, arr in leaves.items():
        if arr.ndim == 0 or arr.shape[0] != maxsize:
            raise ValueError(
                f"{'.'.join(key)}: expected leading dimension {maxsize}, got {arr.shape}"
            )
    return leaves


def check_leaf(key: Key, arr: np.ndarray, col: Any) -> None:
    """Raise if ``arr`` (rows) cannot be written into column ``col``.

    The per-transition shape must match; the dtype must be of the column's kind (bool,
    integer, float, complex; any kind under ``info``) and cast safely (``rew``: within
    its kind).

    Example:
        >>> check_leaf(("obs",), np.zeros((2, 3)), np.zeros((10, 4)))
        Traceback (most recent call last):
        ...
        ValueError: obs: expected per-transition shape (4,), got (3,)
        >>> check_leaf(("act",), np.zeros(2, np.int64), np.zeros(10, np.float32))
        Traceback (most recent call last):
        ...
        ValueError: act: expected dtype float32, got int64 (integer values into a float column)
    """
    tail = tuple(col.shape[1:])
    if tuple(arr.shape[1:]) != tail:
        raise ValueError(
            f"{'.'.join(key)}: expected per-transition shape {tail}, got {tuple(arr.shape[1:])}"
        )
    cdt = col.dtype if isinstance(col, np.ndarray) else numpy_dtype(col.dtype)
    if arr.dtype != cdt:
        kind, ckind = dtype_kind(arr.dtype), dtype_kind(cdt)
        if kind != ckind and key[0] != "info":
            raise ValueError(
                f"{'.'.join(key)}: expected dtype {cdt}, got {arr.dtype} "
                f"({kind} values into {'an' if ckind[0] in 'aeiou' else 'a'} {ckind} column)"
            )
        ok = np.can_cast(arr.dtype, cdt, "same_kind" if key == ("rew",) else "safe")
        if not ok:
            raise ValueError(f"{'.'.join(key)}: expected dtype {cdt}, got {arr.dtype}")


def numpy_dtype(dtype: torch.dtype) -> np.dtype:
    """The numpy dtype of torch ``dtype``.

    >>> numpy_dtype(torch.float32)
    dtype('float32')
    """
    return torch.empty(0, dtype=dtype).numpy().dtype


def nest(leaves: Mapping[Key, Any]) -> dict[str, Any]:
    """Inverse of flattening: ``{("obs", "id"): x}`` -> ``{"obs": {"id": x}}``.

    >>> nest({("obs", "id"): 1, ("rew",): 2})
    {'obs': {'id': 1}, 'rew': 2}
    """
    root: dict[str, Any] = {}
    for key, value in leaves.items():
        node = root
        for part in key[:-1]:
            node = node.setdefault(part, {})
        node[key[-1]] = value
    return root
