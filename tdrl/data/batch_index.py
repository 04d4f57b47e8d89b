"""Indexing helpers behind :class:`tdrl.data.batch.Batch`.

* :func:`fast_index`: dim-0 indexing with an int, a slice or a 1-d integer array, one
  ``index_select`` per tensor, without TensorDict's generic machinery (the buffer-sampling
  hot path).
* :func:`leafwise_get` / :func:`leafwise_set`: indices with more dims than the batch size
  (``b[:, 1]`` on a 1-d Batch) are applied entry by entry, as Tianshou does.
* :func:`empty_at`: Tianshou's reset of entries missing from an item assignment.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import NonTensorData, NonTensorStack, TensorDictBase

from tdrl.data.batch_ops import ObjectEntry, entry_shape, object_array, shape_str, wrap_object
from tdrl.data.batch_stack import empty_batch_

__all__ = [
    "FAST_INDEX",
    "empty_at",
    "fast_index",
    "index_ndim",
    "is_key",
    "leafwise_get",
    "leafwise_set",
]

FAST_INDEX = frozenset({int, slice, np.ndarray, torch.Tensor})


def index_ndim(index: Any) -> int | None:
    """Number of batch dims an index consumes, or ``None`` when it holds an Ellipsis.

    Example:
        >>> index_ndim((slice(None), 1)), index_ndim(np.zeros((2, 3), bool)), index_ndim(...)
        (2, 2, None)
    """
    items = index if isinstance(index, tuple) else (index,)
    n = 0
    for i in items:
        if i is None:
            continue
        if i is Ellipsis:
            return None
        if isinstance(i, (torch.Tensor, np.ndarray)) and i.dtype in (torch.bool, np.bool_):
            n += i.ndim
        else:
            n += 1
    return n


def is_key(index: Any) -> bool:
    """Whether ``index`` is a (nested) key rather than a batch index."""
    return isinstance(index, str) or (
        isinstance(index, tuple) and len(index) > 0 and all(isinstance(i, str) for i in index)
    )


def fast_index(batch: Any, index: Any, itype: type) -> Any:
    """``batch[index]`` along dim 0 for an int, slice or 1-d integer array/tensor.

    Returns ``None`` (the caller then uses TensorDict's path) for non-tensor entries,
    boolean or multi-dim indices and locked or named Batches. Negative array indices are
    normalised only when ``index_select`` rejects them, so the common case pays nothing.
    """
    attrs = batch.__dict__
    if attrs.get("_td_dim_names") is not None or batch._is_locked:
        return None
    bs: torch.Size = attrs["_batch_size"]
    if itype is int:
        return _take(batch, index, None, None)
    if itype is slice:
        return _take(batch, index, None, len(range(*index.indices(bs[0]))))
    if index.ndim != 1:
        return None
    t_index = torch.from_numpy(index) if itype is np.ndarray else index
    if t_index.dtype not in (torch.int64, torch.int32):
        if t_index.dtype == torch.bool or t_index.is_floating_point():
            return None
        t_index = t_index.long()  # uint8 etc. are integer indices, as in numpy
    try:
        return _take(batch, None, t_index, t_index.shape[0])
    except (IndexError, RuntimeError):
        n = bs[0]
        low, high = int(t_index.min()), int(t_index.max())
        if low < -n or high >= n:
            bad = low if low < -n else high
            raise IndexError(f"index {bad} is out of bounds for a Batch of length {n}") from None
        return _take(batch, None, t_index % n, t_index.shape[0])


def _take(batch: Any, index: Any, t_index: torch.Tensor | None, n0: int | None) -> Any:
    """Gather every entry of ``batch``: ``value[index]``, or ``index_select`` with ``t_index``."""
    attrs = batch.__dict__
    bs: torch.Size = attrs["_batch_size"]
    cls: Any = type(batch)
    out: dict[str, Any] = {}
    for key, value in attrs["_tensordict"].items():
        if type(value) is torch.Tensor:
            if t_index is None:
                out[key] = value[index]
            else:
                if t_index.device != value.device:
                    t_index = t_index.to(value.device)
                out[key] = value.index_select(0, t_index)
        elif type(value) is cls and value.__dict__.get("_td_dim_names") is None:
            sub = _take(value, index, t_index, n0)
            if sub is None:
                return None
            out[key] = sub
        else:
            return None
    result = cls.__new__(cls)
    new_attrs = result.__dict__
    new_attrs["_tensordict"] = out
    new_attrs["_batch_size"] = bs[1:] if n0 is None else torch.Size((n0, *bs[1:]))
    new_attrs["_device"] = attrs["_device"]
    new_attrs["_td_dim_names"] = None
    return result


def _index_leaf(value: Any, index: Any) -> Any:
    if isinstance(value, NonTensorData):
        data = value.data
        return data[index] if isinstance(data, np.ndarray) else data
    if isinstance(value, NonTensorStack):
        return object_array(value, value.batch_size)[index]
    return value[index]


def leafwise_get(batch: Any, index: Any) -> Any:
    """Apply ``index`` to every entry and build a new Batch (batch size inferred)."""
    out: dict[str, Any] = {}
    for key, value in batch._tensordict.items():
        try:
            out[key] = _index_leaf(value, index)
        except (IndexError, RuntimeError, TypeError, ValueError) as err:
            raise IndexError(
                f"cannot index Batch entry {key!r} of shape {shape_str(entry_shape(value))} "
                f"with {index!r}: {err}"
            ) from err
    return type(batch)(out)


def leafwise_set(batch: Any, index: Any, value: TensorDictBase) -> None:
    """``batch[index] = value`` entry by entry; entries missing from ``value`` are reset."""
    vkeys = set(value.keys())
    for key, leaf in batch._tensordict.items():
        if key not in vkeys:
            empty_at(batch, key, index)
        elif isinstance(leaf, torch.Tensor) or (
            isinstance(leaf, TensorDictBase)
            and not isinstance(leaf, NonTensorStack)
            and not isinstance(leaf, NonTensorData)
        ):
            leaf[index] = value.get(key)
        else:
            raise IndexError(
                f"cannot assign to non-tensor Batch entry {key!r} with index {index!r} "
                "beyond the batch dimensions."
            )


def empty_at(batch: Any, key: str, index: Any) -> None:
    """Tianshou's fill for an entry missing from an item assignment: 0, emptied or None."""
    leaf = batch._tensordict[key]
    if isinstance(leaf, torch.Tensor):
        leaf[index] = 0
    elif isinstance(leaf, NonTensorStack):
        arr = object_array(leaf, batch.batch_size)
        arr[index] = None
        batch._tensordict[key] = wrap_object(ObjectEntry(arr, arr.shape), batch.batch_size)
    elif isinstance(leaf, TensorDictBase) and not isinstance(leaf, NonTensorData):
        empty_batch_(leaf, index)
