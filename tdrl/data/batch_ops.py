"""Helpers behind :class:`tdrl.data.batch.Batch`: value conversion and batch-size inference.

Conversion policy (the dtype policy of :class:`~tdrl.data.batch.Batch`):

* ``torch.Tensor`` entries are stored as given (no copy unless ``copy=True``).
* Numeric and bool ``numpy`` arrays become tensors that share memory with the array
  (``torch.from_numpy``); the dtype is kept (float64 stays float64). Read-only or
  negatively strided arrays are copied first.
* Python scalars and (nested) lists/tuples of numbers are converted as numpy would:
  ``int -> int64``, ``float -> float64``, ``bool -> bool``. This matches Tianshou, which
  stores ``np.asarray(value)``; it differs from plain TensorDict, which makes floats float32.
* A list/tuple whose items are all tensors is stacked with ``torch.stack``.
* A list/tuple/object array whose items are all mappings (dicts, Batches, TensorDicts) is
  stacked into a nested Batch (one sample per item).
* Anything else (strings, ``None``, arbitrary objects, mixed lists, object or string arrays)
  is non-tensor data, converted with numpy first as Tianshou does (``["a", 1]`` holds
  ``'1'``). Sequences of such objects are split along the batch dimensions
  (``NonTensorStack``). A single object counts as a 0-d entry when the batch size is
  inferred (``Batch(a=[1, 2], s="x")`` is 0-d, as in Tianshou); with an explicit batch size
  it is stored once (``NonTensorData``) and shared by every sample.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
import torch
from tensordict import NonTensorData, NonTensorStack, TensorDict, TensorDictBase
from torch.distributions import Distribution

__all__ = [
    "NUMERIC_KINDS",
    "BatchShapeError",
    "ObjectEntry",
    "batch_repr",
    "common_prefix",
    "convert_value",
    "entry_shape",
    "fit_entry",
    "from_numpy",
    "inference_shape",
    "object_array",
    "shape_str",
    "wrap_object",
]

NUMERIC_KINDS = frozenset("biufc")
_SCALAR_DTYPES: dict[type, torch.dtype] = {
    bool: torch.bool,
    int: torch.int64,
    float: torch.float64,
    complex: torch.complex128,
}


class BatchShapeError(ValueError, RuntimeError):
    """An entry's leading dimensions disagree with a Batch's batch size.

    A ``ValueError`` (Tianshou-style) that is also a ``RuntimeError``, the type TensorDict
    raises for the same mistake, so code written for either keeps catching it.
    """


class ObjectEntry:
    """Non-tensor data waiting for the batch size: ``shape`` is ``None`` for one object."""

    __slots__ = ("shape", "value")

    def __init__(self, value: Any, shape: tuple[int, ...] | None) -> None:
        self.value = value
        self.shape = shape


def from_numpy(arr: np.ndarray) -> torch.Tensor:
    """Tensor sharing ``arr``'s memory; read-only or negatively strided arrays are copied."""
    if arr.flags.writeable:
        try:
            return torch.from_numpy(arr)
        except ValueError:  # negative strides
            pass
    return torch.from_numpy(np.array(arr))


def _object_array(seq: Any) -> np.ndarray:
    """Build an object array from a sequence without numpy's ragged-shape errors."""
    try:
        arr = np.asarray(seq)
    except ValueError:
        arr = np.empty(len(seq), dtype=object)
        for i, item in enumerate(seq):
            arr[i] = item
    return arr if arr.dtype == object else arr.astype(object)


def _is_mapping(value: Any) -> bool:
    return isinstance(value, (Mapping, TensorDictBase))


def convert_value(value: Any, cls: Any, copy: bool = False) -> Any:
    """Convert one constructor/assignment value to a tensor, a ``cls`` Batch or an ObjectEntry.

    Args:
        value: the user's value.
        cls: the Batch class, used for nested mappings.
        copy: deep-copy tensors and arrays instead of sharing memory.

    Returns:
        a ``torch.Tensor``, an instance of ``cls``, or an :class:`ObjectEntry`.
    """
    vtype = type(value)
    if vtype is ObjectEntry:
        return value
    if vtype is torch.Tensor or isinstance(value, torch.Tensor):
        return value.clone() if copy else value
    if isinstance(value, cls):
        return value.clone() if copy else value  # type: ignore[attr-defined]
    if isinstance(value, np.ndarray):
        kind = value.dtype.kind
        if kind in NUMERIC_KINDS:
            return torch.from_numpy(np.array(value)) if copy else from_numpy(value)
        if kind == "O" and value.size > 0 and value.ndim == 1:
            items = value.tolist()
            if all(_is_mapping(x) for x in items):
                return cls.stack([cls(x) for x in items])
        arr = value.astype(object) if kind != "O" else (value.copy() if copy else value)
        return ObjectEntry(arr, tuple(arr.shape))
    if vtype in _SCALAR_DTYPES:
        return torch.tensor(value, dtype=_SCALAR_DTYPES[vtype])
    if isinstance(value, np.generic):
        if value.dtype.kind in NUMERIC_KINDS:
            return torch.from_numpy(np.array(value))
        return ObjectEntry(value, None)
    if isinstance(value, (NonTensorData, NonTensorStack)):  # before TensorDictBase: a subclass
        return value
    if isinstance(value, TensorDictBase):
        return cls.from_tensordict(value.clone() if copy else value)
    if isinstance(value, Mapping):
        return cls(dict(value), copy=copy)
    if isinstance(value, (list, tuple, range)):
        if len(value) > 0:
            if all(isinstance(x, torch.Tensor) for x in value):
                return torch.stack([x for x in value if isinstance(x, torch.Tensor)])
            if all(_is_mapping(x) for x in value):
                return cls.stack([x if isinstance(x, cls) else cls(x) for x in value])
        try:
            arr = np.asarray(value)
        except ValueError:
            arr = _object_array(value)
        if arr.dtype.kind in NUMERIC_KINDS:
            return torch.from_numpy(arr)
        arr = arr if arr.dtype == object else arr.astype(object)
        return ObjectEntry(arr, tuple(arr.shape))
    if isinstance(value, Distribution):  # batched along its batch_shape, sliced on indexing
        return ObjectEntry(value, tuple(value.batch_shape))
    return ObjectEntry(value, None)


def entry_shape(value: Any) -> tuple[int, ...] | None:
    """Shape that constrains the batch size, or ``None`` for entries that adapt to any size."""
    vtype = type(value)
    if vtype is torch.Tensor or isinstance(value, torch.Tensor):
        return tuple(value.shape)
    if vtype is ObjectEntry:
        return value.shape
    if isinstance(value, TensorDict):  # Batch and TensorDict (NonTensor* are not TensorDicts)
        return None if _empty_tree(value) else tuple(value.batch_size)
    if isinstance(value, NonTensorStack):
        return tuple(value.batch_size)
    if isinstance(value, TensorDictBase) and not isinstance(value, NonTensorData):
        return tuple(value.batch_size) if len(value.keys()) > 0 else None
    return None


def _empty_tree(value: TensorDict) -> bool:
    """Whether ``value`` holds nothing but (nested) empty TensorDicts."""
    return all(isinstance(v, TensorDict) and _empty_tree(v) for v in value._tensordict.values())


def _resize_tree(value: Any, bs: torch.Size) -> Any:
    """An empty tree (see :func:`_empty_tree`) with batch size ``bs`` at every level."""
    if len(value._tensordict) > 0:
        value = value.clone(recurse=False)
        for key, child in list(value._tensordict.items()):
            value._tensordict[key] = _resize_tree(child, bs)
    value.__dict__["_batch_size"] = torch.Size(bs)
    value.__dict__.pop("_inferred", None)  # its size now follows the parent's
    return value


def common_prefix(shapes: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """Longest run of leading dimensions on which every shape agrees.

    Example:
        >>> common_prefix([(4, 3), (4,), (4, 3, 2)]), common_prefix([(2, 2), (1, 2)])
        ((4,), ())
    """
    if not shapes:
        return ()
    # the common prefix of a set of sequences is that of its lexicographic extremes (two
    # C-level passes, then one short comparison)
    ordered = cast("Sequence[tuple[int, ...]]", shapes)  # tuples, torch.Size: comparable
    lo, hi = min(ordered), max(ordered)
    n = len(lo)
    if tuple(hi[:n]) == tuple(lo):  # the usual case: the shortest shape is the prefix
        return tuple(lo)
    i = 0
    while lo[i] == hi[i]:  # stops before n: hi[:n] differs from lo
        i += 1
    return tuple(lo[:i])


def _build_stack(arr: np.ndarray, batch_size: tuple[int, ...]) -> NonTensorStack:
    if len(batch_size) == 1:
        return NonTensorStack(*(NonTensorData(data=x, batch_size=[]) for x in arr))
    return NonTensorStack(*(_build_stack(arr[i], batch_size[1:]) for i in range(batch_size[0])))


def wrap_object(entry: ObjectEntry, batch_size: torch.Size) -> NonTensorData | NonTensorStack:
    """Wrap non-tensor data for a Batch of ``batch_size``: split over the batch dims if batched."""
    if entry.shape is None or len(batch_size) == 0:
        return NonTensorData(data=entry.value, batch_size=batch_size)
    arr = entry.value
    nb = len(batch_size)
    if arr.ndim > nb:
        # keep the trailing dims of each sample together as one object array
        flat = np.empty(arr.shape[:nb], dtype=object)
        for idx in np.ndindex(*arr.shape[:nb]):
            flat[idx] = arr[idx]
        arr = flat
    return _build_stack(arr, tuple(batch_size))


def object_array(value: Any, batch_size: Sequence[int]) -> np.ndarray:
    """Non-tensor entry ``value`` of a Batch of ``batch_size`` as an object array of that shape."""
    shape = tuple(batch_size)
    if isinstance(value, NonTensorStack):
        items = value.tolist()
        arr = np.empty(shape, dtype=object)
        for idx in np.ndindex(*shape):
            item = items
            for i in idx:
                item = item[i]
            arr[idx] = item
        return arr
    data = value.data if isinstance(value, NonTensorData) else value
    arr = np.empty(shape, dtype=object)
    for idx in np.ndindex(*shape):
        arr[idx] = data
    return arr


def _value_repr(value: Any) -> str:
    if isinstance(value, NonTensorData):
        return repr(value.data)
    if isinstance(value, NonTensorStack):
        return repr(object_array(value, value.batch_size))
    if isinstance(value, TensorDictBase) and not isinstance(value, torch.Tensor):
        return batch_repr(value)
    return repr(value)


def batch_repr(batch: TensorDictBase) -> str:
    """Tianshou-style repr: ``Batch(`` then one ``key: value,`` line per entry, then ``)``."""
    name = type(batch).__name__
    lines = []
    for key, value in batch.items():
        text = _value_repr(value).replace("\n", "\n" + " " * (4 + len(key) + 2))
        lines.append(f"    {key}: {text},")
    if not lines:
        return f"{name}()"
    return f"{name}(\n" + "\n".join(lines) + "\n)"


def shape_str(shape: Any) -> str:
    """A shape as a list string, for error messages."""
    return str(list(shape)) if shape is not None else "[]"


def inference_shape(value: Any) -> tuple[int, ...] | None:
    """Shape used to infer the batch size: a single non-tensor object counts as 0-d, except
    ``None``, which fits any batch size (as in Tianshou)."""
    if isinstance(value, ObjectEntry) and value.shape is None:
        return None if value.value is None else ()
    return entry_shape(value)


def fit_entry(key: str, value: Any, bs: torch.Size) -> Any:
    """Check ``value`` against the batch size ``bs`` and wrap non-tensor data for it."""
    if isinstance(value, ObjectEntry):
        if value.shape is not None and value.shape[: len(bs)] != tuple(bs):
            raise BatchShapeError(
                f"Batch entry {key!r} has shape {shape_str(value.shape)}, whose leading "
                f"dimensions do not match the batch size {shape_str(bs)}."
            )
        if isinstance(value.value, Distribution):
            return NonTensorData(value.value, batch_size=bs)
        return wrap_object(value, bs)
    shape = entry_shape(value)
    if shape is None:
        if isinstance(value, TensorDict) and tuple(value.batch_size) != tuple(bs):
            if len(value._tensordict) > 0:
                return _resize_tree(value, bs)
            value.batch_size = bs  # an empty Batch is resized in place and stays shared
            value.__dict__.pop("_inferred", None)  # its size now follows the parent's
        return value
    if shape[: len(bs)] != tuple(bs):
        raise BatchShapeError(
            f"Batch entry {key!r} has shape {shape_str(shape)}, whose leading dimensions "
            f"do not match the batch size {shape_str(bs)}."
        )
    return value


_SOURCES = "_np_sources"
"""``Batch.__dict__`` key: ``{key: (tensor, array, data pointer)}`` of the entries the
``Batch`` constructor wrapped from writeable numpy arrays (see :func:`numpy_entries`)."""


def numpy_entries(batch: Any, keys: tuple[str, ...]) -> list[np.ndarray]:
    """``[batch[k].numpy() for k in keys]`` for tensor entries, without the conversion for
    an entry the constructor wrapped from a numpy array and nothing has touched since.

    Untouched means: the entry is the same tensor object, no in-place operation ran on
    it (version 0; an inference tensor, which has no version, never counts), its memory
    did not move (``share_memory_``, ``.data = ...``) and it does not require grad. Such a
    tensor shares the array's memory, shape, strides and dtype, so the array is what
    ``Tensor.numpy`` would return. Raises what ``Tensor.numpy`` raises (the buffer's
    ``add`` falls back to its general path then).

    >>> from tdrl.data.batch import Batch
    >>> b = Batch(obs=np.zeros((2, 3), np.float32))
    >>> [a.shape for a in numpy_entries(b, ("obs",))]
    [(2, 3)]
    >>> b.obs.add_(1.0).shape  # an in-place update: the array is no longer reused as is
    torch.Size([2, 3])
    >>> numpy_entries(b, ("obs",))[0].tolist()
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """
    entries = batch._tensordict
    sources = batch.__dict__.get(_SOURCES)
    if sources is None:
        return [entries[k].numpy() for k in keys]
    out = []
    for k in keys:
        t = entries[k]
        src = sources.get(k)
        if src is not None and src[0] is t and not t.requires_grad and t.data_ptr() == src[2]:
            try:
                if t._version == 0:
                    out.append(src[1])
                    continue
            except RuntimeError:  # an inference tensor keeps no version counter
                pass
        out.append(t.numpy())
    return out


_SIZES: dict[Any, torch.Size] = {}
"""``torch.Size`` by ``int`` or shape tuple (see :func:`torch_size`)."""


def torch_size(key: int | tuple[int, ...]) -> torch.Size:
    """``torch.Size([key])`` for an ``int``, ``torch.Size(key)`` for a tuple of ints, built
    once per value (a program uses a handful of batch sizes; the per-step paths reuse them).

    >>> torch_size(3), torch_size((2, 4))
    (torch.Size([3]), torch.Size([2, 4]))
    """
    size = _SIZES.get(key)
    if size is None:
        size = torch.Size([key] if isinstance(key, int) else key)
        if len(_SIZES) < 256:
            _SIZES[key] = size
    return size


def _explicit_size(batch_size: Any) -> torch.Size | None:
    """:func:`torch_size` of an explicit ``batch_size`` given as an ``int``, a list or tuple
    of ``int`` or a ``torch.Size``; ``None`` for anything else (the general path converts
    or rejects it).

    >>> _explicit_size(3), _explicit_size([2, 4]), _explicit_size(torch.Size([1]))
    (torch.Size([3]), torch.Size([2, 4]), torch.Size([1]))
    >>> _explicit_size([2.0]) is None, _explicit_size(True) is None
    (True, True)
    """
    btype = type(batch_size)
    if btype is int:
        return torch_size(batch_size)
    if btype is list or btype is tuple or btype is torch.Size:
        key = tuple(batch_size)
        for dim in key:
            if type(dim) is not int:
                return None
        return torch_size(key)
    return None
