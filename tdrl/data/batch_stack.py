"""Stacking, concatenation and empty-filling of Batches with inconsistent keys.

TensorDict refuses to stack or concatenate TensorDicts with different key sets. Tianshou
fills the holes instead: a key missing from some members becomes zeros (tensors, nested
Batches) or ``None`` (non-tensor data). These helpers implement that, one ``torch.stack`` /
``torch.cat`` per leaf.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from tensordict import NonTensorData, TensorDictBase, is_non_tensor

from tdrl.data.batch_ops import ObjectEntry, common_prefix, object_array, wrap_object

__all__ = ["cat_batches", "empty_batch_", "stack_batches"]


def _members(cls: Any, batches: Sequence[Any]) -> list[Any]:
    out = []
    for b in batches:
        if not isinstance(b, cls):
            b = cls.from_tensordict(b) if isinstance(b, TensorDictBase) else cls(b)
        if len(b.keys()) > 0:
            out.append(b)
    return out


def _ordered_keys(members: Sequence[Any]) -> list[str]:
    keys: dict[str, None] = {}
    for m in members:
        for k in m._tensordict:
            keys.setdefault(k, None)
    return list(keys)


def _kind(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return "tensor"
    if is_non_tensor(value):
        return "object"
    return "batch"


def _check_kinds(key: str, present: Sequence[Any]) -> str:
    kinds = {_kind(v) for v in present}
    if len(kinds) > 1:
        raise TypeError(
            f"cannot combine Batch entry {key!r}: it is {sorted(kinds)} in different members."
        )
    return kinds.pop()


def stack_batches(cls: Any, batches: Sequence[Any], dim: int = 0) -> Any:
    """Stack Batches along a new ``dim``; missing keys are filled with zeros / ``None``."""
    members = _members(cls, batches)
    if not members:
        return cls()
    sizes = [tuple(m.batch_size) for m in members]
    base = common_prefix(sizes)
    if dim < 0:
        dim += len(base) + 1
    if not 0 <= dim <= len(base):
        raise IndexError(f"stack dim {dim} is out of range for batch size {list(base)}.")
    new_bs = [*base[:dim], len(members), *base[dim:]]
    out: dict[str, Any] = {}
    for key in _ordered_keys(members):
        values = [m._tensordict.get(key) for m in members]
        present = [v for v in values if v is not None]
        kind = _check_kinds(key, present)
        if kind == "tensor":
            proto = present[0]
            if any(v.shape != proto.shape for v in present):
                shapes = sorted({tuple(v.shape) for v in present})
                raise ValueError(f"cannot stack Batch entry {key!r}: shapes differ {shapes}.")
            filled = [torch.zeros_like(proto) if v is None else v for v in values]
            out[key] = torch.stack(filled, dim)
        elif kind == "batch":
            proto = present[0]
            filled = [
                _empty_like(cls, proto) if v is None else cls.from_tensordict(v) for v in values
            ]
            out[key] = stack_batches(cls, filled, dim)
        else:
            arrs = [
                np.full(base, None, dtype=object) if v is None else object_array(v, base)
                for m, v in zip(members, values)
            ]
            arr = np.stack(arrs, axis=dim)
            out[key] = ObjectEntry(arr, tuple(arr.shape))
    return cls(out, batch_size=new_bs)


def cat_batches(cls: Any, batches: Sequence[Any]) -> Any:
    """Concatenate Batches along dim 0; missing keys are filled with zeros / ``None``."""
    members = _members(cls, batches)
    if not members:
        return cls()
    for m in members:
        if m.batch_dims == 0:
            raise TypeError(f"cannot concatenate a 0-d Batch (keys {sorted(m.keys())}).")
    sizes = [tuple(m.batch_size) for m in members]
    rest = common_prefix([s[1:] for s in sizes])
    lengths = [s[0] for s in sizes]
    new_bs = [sum(lengths), *rest]
    out: dict[str, Any] = {}
    for key in _ordered_keys(members):
        values = [m._tensordict.get(key) for m in members]
        present = [v for v in values if v is not None]
        kind = _check_kinds(key, present)
        if kind == "tensor":
            proto = present[0]
            if any(v.shape[1:] != proto.shape[1:] for v in present):
                shapes = sorted({tuple(v.shape) for v in present})
                raise ValueError(f"cannot concatenate Batch entry {key!r}: shapes {shapes}.")
            filled = [
                proto.new_zeros((n, *proto.shape[1:])) if v is None else v
                for n, v in zip(lengths, values)
            ]
            out[key] = torch.cat(filled, 0)
        elif kind == "batch":
            proto = present[0]
            filled = []
            for n, v in zip(lengths, values):
                if v is None:
                    v = _empty_like(cls, proto[:1]).expand(n, *proto.batch_size[1:]).clone()
                filled.append(cls.from_tensordict(v))
            out[key] = cat_batches(cls, filled)
        else:
            arrs = [
                np.full(m.batch_size, None, dtype=object)
                if v is None
                else object_array(v, m.batch_size)
                for m, v in zip(members, values)
            ]
            arr = np.concatenate(arrs, axis=0)
            out[key] = ObjectEntry(arr, tuple(arr.shape))
    return cls(out, batch_size=new_bs)


def _empty_like(cls: Any, proto: Any) -> Any:
    out = cls.from_tensordict(proto).clone()
    empty_batch_(out, None)
    return out


def empty_batch_(batch: Any, index: Any = None) -> Any:
    """Set every tensor entry (at ``index``) to 0 and every non-tensor entry to ``None``."""
    td = batch._tensordict
    for key, value in list(td.items()):
        if isinstance(value, torch.Tensor):
            if index is None:
                value.zero_()
            else:
                value[index] = 0
        elif is_non_tensor(value):
            if index is None:
                arr = np.full(batch.batch_size, None, dtype=object)
            else:
                arr = object_array(value, batch.batch_size)
                arr[index] = None
            if arr.ndim == 0:
                td[key] = NonTensorData(data=None, batch_size=batch.batch_size)
            else:
                td[key] = wrap_object(ObjectEntry(arr, tuple(arr.shape)), batch.batch_size)
        else:
            empty_batch_(value, index)
    return batch
