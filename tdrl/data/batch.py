"""``Batch``: a :class:`tensordict.TensorDict` with Tianshou's ``Batch`` semantics.

``Batch`` is a real ``TensorDict`` subclass, so every TensorDict/TorchRL function accepts it,
and adds what Tianshou users expect: construction from keyword arguments, dicts, lists of
samples, numpy arrays and Python scalars; attribute access (``b.obs``, ``b.obs = x``,
``del b.obs``); ``Batch.stack`` / ``Batch.cat`` / ``split`` that fill missing keys;
``empty_`` / ``Batch.empty``; ``to_numpy`` / ``to_torch``; a Tianshou-style repr.

Conversion rules (dtype policy) are documented in :mod:`tdrl.data.batch_ops`.

Batch size: given explicitly with ``batch_size=``, or inferred as the leading dimensions on
which all entries agree (a numeric scalar entry makes the Batch 0-d, as in Tianshou).
Single non-tensor objects (strings, ``None``) and empty nested Batches do not constrain it.
A Batch whose batch size was inferred re-infers it when a new key is set through
attribute or string-item assignment (it can only shrink to the common leading dims, and the
new entry must agree on the first dim or be a scalar); a Batch with no entries adopts the
shape of its first entry. An index with more dimensions than the batch size (``b[:, 1]`` on
a 1-d Batch) is applied leaf by leaf, as Tianshou does.

Example:
    >>> import numpy as np, torch
    >>> b = Batch(obs=np.zeros((4, 3)), act=[0, 1, 2, 3], info={"env_id": np.arange(4)})
    >>> b.shape, b.obs.dtype, b.act.dtype
    (torch.Size([4]), torch.float64, torch.int64)
    >>> b.info.env_id
    tensor([0, 1, 2, 3])
    >>> b[1:3].act
    tensor([1, 2])
    >>> type(b[0].info).__name__
    'Batch'
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import NonTensorData, NonTensorStack, TensorDict, TensorDictBase, is_non_tensor

from tdrl.data.batch_ops import (
    NUMERIC_KINDS,
    ObjectEntry,
    batch_repr,
    common_prefix,
    convert_value,
    entry_shape,
    from_numpy,
    object_array,
    wrap_object,
)
from tdrl.data.batch_stack import cat_batches, empty_batch_, stack_batches

__all__ = ["Batch"]


def _index_ndim(index: Any) -> int | None:
    """Number of batch dims an index consumes, or ``None`` when it holds an Ellipsis."""
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


_FAST_INDEX = frozenset({int, slice, np.ndarray, torch.Tensor})


def _is_key(index: Any) -> bool:
    return isinstance(index, str) or (
        isinstance(index, tuple) and len(index) > 0 and all(isinstance(i, str) for i in index)
    )


def _shape_str(shape: Any) -> str:
    return str(list(shape))


class _HybridEmpty:
    """``Batch.empty(batch, index=None)`` (Tianshou) on the class, TensorDict's on instances."""

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return _empty_copy
        return TensorDict.empty.__get__(obj, objtype)


def _empty_copy(batch: Batch, index: Any = None) -> Batch:
    """Return an emptied deep copy of ``batch`` (see :meth:`Batch.empty_`)."""
    return empty_batch_(Batch.from_tensordict(batch).clone(), index)


class Batch(TensorDict):
    """A TensorDict with Tianshou ``Batch`` semantics (see the module docstring).

    Args:
        batch_dict: a mapping (dict, Batch, TensorDict) of entries, or a sequence of
            mappings stacked as samples.
        copy: copy tensors and arrays instead of sharing their memory.
        batch_size: explicit batch size; inferred from the entries when ``None``.
        device: optional device for every tensor.
        names: optional dimension names (TensorDict).
        non_blocking: passed to TensorDict when a device is given.
        lock: lock the result (TensorDict).
        **kwargs: entries, when ``batch_dict`` is not given.

    Example:
        >>> b = Batch(a=4, b=[5, 5], c="2312312")
        >>> b.shape
        torch.Size([])
        >>> b.b
        tensor([5, 5])
        >>> b.c
        '2312312'
        >>> Batch([{"x": 1.0}, {"x": 2.0}]).x
        tensor([1., 2.], dtype=torch.float64)
    """

    _inferred: bool = False

    def __init__(
        self,
        batch_dict: Any = None,
        copy: bool = False,
        batch_size: Any = None,
        device: Any = None,
        names: Any = None,
        non_blocking: bool | None = None,
        lock: bool = False,
        **kwargs: Any,
    ) -> None:
        if batch_dict is not None and kwargs:
            raise ValueError("Batch takes either a mapping/sequence or keyword entries, not both.")
        if batch_dict is None:
            source: Mapping[str, Any] = kwargs
        elif isinstance(batch_dict, TensorDictBase):
            if batch_size is None:
                batch_size = batch_dict.batch_size
            source = {k: batch_dict._get_str(k, None) for k in batch_dict.keys()}  # noqa: SIM118
        elif isinstance(batch_dict, Mapping):
            source = batch_dict
        elif isinstance(batch_dict, (list, tuple, np.ndarray)):
            stacked = type(self).stack([convert_value(x, type(self)) for x in batch_dict])
            source = dict(stacked._tensordict)
            if batch_size is None:
                batch_size = stacked.batch_size
        else:
            raise TypeError(
                f"Batch expects a mapping or a sequence of mappings, got {type(batch_dict)}."
            )
        cls = type(self)
        entries: dict[str, Any] = {}
        shapes: list[tuple[int, ...]] = []
        others = False  # entries that are not plain tensors need _fit
        for key, value in source.items():
            vtype = type(value)
            if vtype is np.ndarray and value.dtype.kind in NUMERIC_KINDS and not copy:
                entry: Any = from_numpy(value)
            elif vtype is torch.Tensor and not copy:
                entry = value
            else:
                if not isinstance(key, str):
                    raise TypeError(f"Batch keys must be str, got {key!r} ({vtype.__name__}).")
                entry = convert_value(value, cls, copy)
                if type(entry) is not torch.Tensor:
                    others = True
                    shape = _inference_shape(entry)
                    if shape is not None:
                        shapes.append(shape)
                    entries[key] = entry
                    continue
            shapes.append(entry.shape)
            entries[key] = entry
        if batch_size is None:
            bs = torch.Size(common_prefix(shapes))
            inferred = True
        else:
            bs = torch.Size([batch_size] if isinstance(batch_size, int) else batch_size)
            inferred = False
        if others or not inferred:
            for key, entry in entries.items():
                entries[key] = _fit(key, entry, bs)
        if device is None and names is None and not lock:
            attrs = self.__dict__
            attrs["_tensordict"] = entries
            attrs["_batch_size"] = bs
            attrs["_device"] = None
            attrs["_td_dim_names"] = None
        else:
            super().__init__(
                entries,
                batch_size=bs,
                device=device,
                names=names,
                non_blocking=non_blocking,
                lock=lock,
            )
        if inferred:
            self._inferred = True

    # ------------------------------------------------------------------ attribute access
    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            value = self.__dict__["_tensordict"][name]
        except KeyError:
            raise AttributeError(
                f"'{type(self).__name__}' object has no attribute or key {name!r}"
            ) from None
        if isinstance(value, (torch.Tensor, TensorDictBase)) and not is_non_tensor(value):
            return value
        return self[name]

    def __setattr__(self, name: str, value: Any) -> None:
        if name[0] == "_" or hasattr(type(self), name):
            object.__setattr__(self, name, value)
        else:
            self._set_key(name, value)

    def __delattr__(self, name: str) -> None:
        if name[0] != "_" and name in self.__dict__.get("_tensordict", ()):
            self.del_(name)
        else:
            object.__delattr__(self, name)

    def _set_key(self, key: str, value: Any) -> None:
        entry = convert_value(value, type(self))
        shape = _inference_shape(entry)
        bs: torch.Size = self.__dict__["_batch_size"]
        if shape is not None:
            if not self._tensordict:
                bs = self.__dict__["_batch_size"] = torch.Size(shape)
                self._inferred = True
            elif shape[: len(bs)] != tuple(bs):
                if self._inferred and (len(shape) == 0 or shape[0] == bs[0]):
                    bs = torch.Size(common_prefix([tuple(bs), shape]))
                    self.batch_size = bs
                elif entry_shape(entry) is not None:
                    raise ValueError(
                        f"Batch entry {key!r} has shape {_shape_str(shape)}, whose leading "
                        f"dimensions do not match the batch size {_shape_str(bs)}."
                    )
        TensorDict._set_str(self, key, _fit(key, entry, bs), inplace=False, validated=False)

    # ------------------------------------------------------------------ indexing
    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, str):
            value = self._tensordict.get(index)
            if type(value) is torch.Tensor:
                return value
            if isinstance(value, NonTensorStack):
                return object_array(value, self.batch_size)
            return TensorDict.__getitem__(self, index)
        itype = type(index)
        if itype in _FAST_INDEX and self._batch_size:
            out = self._fast_index(index, itype)
            if out is not None:
                return out
        if _is_key(index):
            return TensorDict.__getitem__(self, index)
        ndim = _index_ndim(index)
        if ndim is not None and ndim > self.batch_dims:
            return self._leafwise_get(index)
        return TensorDict.__getitem__(self, index)

    __getitems__ = __getitem__

    def _fast_index(self, index: Any, itype: type) -> Batch | None:
        """Index along dim 0 with an int, a slice or a 1-d integer array, leaf by leaf.

        Integer arrays go through one ``index_select`` per tensor (cheaper than TensorDict's
        generic path and than torch's advanced indexing). Returns ``None`` (use TensorDict's
        path) for non-tensor entries, boolean or multi-dim indices and locked/named Batches.
        """
        if self._td_dim_names is not None or self._is_locked:
            return None
        bs: torch.Size = self.__dict__["_batch_size"]
        if itype is int:
            new_bs = bs[1:]
            t_index = None
        elif itype is slice:
            new_bs = torch.Size((len(range(*index.indices(bs[0]))), *bs[1:]))
            t_index = None
        else:
            if index.ndim != 1:
                return None
            t_index = torch.from_numpy(index) if itype is np.ndarray else index
            if t_index.dtype not in (torch.int64, torch.int32):
                return None
            if t_index.numel() and int(t_index.min()) < 0:
                t_index = t_index % bs[0]
            new_bs = torch.Size((t_index.shape[0], *bs[1:]))
        out: dict[str, Any] = {}
        for key, value in self._tensordict.items():
            if type(value) is torch.Tensor:
                if t_index is None:
                    out[key] = value[index]
                else:
                    if t_index.device != value.device:
                        t_index = t_index.to(value.device)
                    out[key] = value.index_select(0, t_index)
            elif type(value) is type(self):
                sub = value._fast_index(index, itype)
                if sub is None:
                    return None
                out[key] = sub
            else:
                return None
        result = type(self).__new__(type(self))
        attrs = result.__dict__
        attrs["_tensordict"] = out
        attrs["_batch_size"] = new_bs
        attrs["_device"] = self._device
        attrs["_td_dim_names"] = None
        return result

    def _leafwise_get(self, index: Any) -> Batch:
        out: dict[str, Any] = {}
        for key, value in self._tensordict.items():
            try:
                out[key] = _index_leaf(value, index)
            except (IndexError, RuntimeError, TypeError, ValueError) as err:
                raise IndexError(
                    f"cannot index Batch entry {key!r} of shape {_shape_str(entry_shape(value))} "
                    f"with {index!r}: {err}"
                ) from err
        return type(self)(out)

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, str):
            self._set_key(index, value)
            return
        if _is_key(index):
            TensorDict.__setitem__(self, index, value)
            return
        if isinstance(value, Mapping) and not isinstance(value, TensorDictBase):
            value = type(self)(value)
        if not isinstance(value, TensorDictBase):
            TensorDict.__setitem__(self, index, value)
            return
        ndim = _index_ndim(index)
        if ndim is not None and ndim > self.batch_dims:
            self._leafwise_set(index, value)
            return
        TensorDict.__setitem__(self, index, value)
        for key in self._tensordict.keys() - set(value.keys()):
            _empty_at(self, key, index)

    def _leafwise_set(self, index: Any, value: TensorDictBase) -> None:
        vkeys = set(value.keys())
        for key, leaf in self._tensordict.items():
            if key not in vkeys:
                _empty_at(self, key, index)
            elif isinstance(leaf, (Batch, torch.Tensor)):
                leaf[index] = value.get(key)
            else:
                raise IndexError(
                    f"cannot assign to non-tensor Batch entry {key!r} with index {index!r} "
                    "beyond the batch dimensions."
                )

    # ------------------------------------------------------------------ sizes
    def __len__(self) -> int:
        """Length of the first batch dim; ``TypeError`` for a 0-d Batch, as in numpy."""
        if not self.batch_size:
            raise TypeError(f"Object of type '{type(self).__name__}' has no len()")
        return self.batch_size[0]

    def __iter__(self) -> Iterator[Any]:
        """Iterate over the samples along the first batch dim (not over keys)."""
        if not self.batch_size:
            raise TypeError(f"iteration over a 0-d {type(self).__name__}")
        for i in range(self.batch_size[0]):
            yield self[i]

    def __repr__(self) -> str:
        return batch_repr(self)

    __str__ = __repr__

    def is_empty(self, recurse: bool = False) -> bool:
        """Whether the Batch has no keys (``recurse``: no keys except empty nested Batches).

        Example:
            >>> Batch().is_empty(), Batch(a=Batch()).is_empty(), Batch(a=Batch()).is_empty(True)
            (True, False, True)
        """
        if not recurse:
            return len(self._tensordict) == 0
        return all(
            isinstance(v, TensorDictBase)
            and not is_non_tensor(v)
            and (v.is_empty(recurse=True) if isinstance(v, Batch) else v.is_empty())
            for v in self._tensordict.values()
        )

    # ------------------------------------------------------------------ combining
    @classmethod
    def stack(  # type: ignore[override]
        cls, batches: Sequence[Any], axis: int = 0, *, dim: int | None = None, out: Any = None
    ) -> Any:
        """Stack Batches (or dicts) along a new axis; missing keys become zeros or ``None``.

        Example:
            >>> b = Batch.stack([Batch(a=np.zeros(2)), Batch(a=np.ones(2), b="done")])
            >>> b.a.shape, b.b
            (torch.Size([2, 2]), array([None, 'done'], dtype=object))
        """
        if out is not None:
            return TensorDict.stack(batches, axis if dim is None else dim, out=out)
        return stack_batches(cls, batches, axis if dim is None else dim)

    @classmethod
    def cat(  # type: ignore[override]
        cls, batches: Sequence[Any], axis: int = 0, *, dim: int | None = None, out: Any = None
    ) -> Any:
        """Concatenate Batches (or dicts) along the first axis, filling missing keys.

        Empty Batches (no keys) are skipped. Other axes use TensorDict's strict ``cat``.

        Example:
            >>> Batch.cat([Batch(a=[1, 2]), Batch(), Batch(a=[3], b=[1.0])]).b
            tensor([0., 0., 1.], dtype=torch.float64)
        """
        d = axis if dim is None else dim
        if out is not None or d != 0:
            return TensorDict.cat(batches, d, out=out)
        return cat_batches(cls, batches)

    def split(  # type: ignore[override]
        self,
        size: int | list[int],
        shuffle: bool | int = False,
        merge_last: bool = False,
        *,
        dim: int | None = None,
    ) -> list[Any]:
        """Split into chunks of ``size`` samples along the first dim.

        ``shuffle`` permutes the samples first; ``merge_last`` folds a short last chunk
        into the one before it; ``size=-1`` (or ``size >= len``) gives the whole Batch.
        A list of sizes or an explicit ``dim`` falls back to :meth:`TensorDict.split`.
        Unlike Tianshou (default ``shuffle=True``) the default keeps TensorDict's order.

        Example:
            >>> [len(c) for c in Batch(a=np.arange(5)).split(2, merge_last=True)]
            [2, 3]
        """
        if dim is not None or not isinstance(size, int) or not isinstance(shuffle, bool):
            d = dim if dim is not None else int(shuffle)
            return list(TensorDict.split(self, size, d))
        length = len(self)
        if size == -1:
            size = length
        if size < 1:
            raise ValueError(f"split size must be >= 1 or -1, got {size}.")
        if shuffle:
            indices: Any = torch.randperm(length)
        else:
            indices = None
        merge_last = merge_last and length % size > 0
        chunks = []
        for start in range(0, length, size):
            stop = length if merge_last and start + 2 * size >= length else start + size
            chunks.append(self[start:stop] if indices is None else self[indices[start:stop]])
            if stop >= length:
                break
        return chunks

    def empty_(self, index: Any = None) -> Batch:
        """Set tensor entries (at ``index``) to 0 and non-tensor entries to ``None``, in place.

        Example:
            >>> b = Batch(a=[1.0, 2.0], s=["x", "y"]).empty_(0)
            >>> b.a, b.s
            (tensor([0., 2.], dtype=torch.float64), array([None, 'y'], dtype=object))
        """
        return empty_batch_(self, index)

    empty = _HybridEmpty()

    # ------------------------------------------------------------------ numpy / torch
    def to_numpy(self) -> dict[str, Any]:
        """Nested dict of numpy arrays (zero-copy on CPU); non-tensor data as stored objects.

        tdrl Batches always hold tensors, so unlike Tianshou this returns a plain dict.

        Example:
            >>> Batch(a=[1, 2], n={"s": "x"}).to_numpy()
            {'a': array([1, 2]), 'n': {'s': 'x'}}
        """
        out: dict[str, Any] = {}
        for key, value in self._tensordict.items():
            if isinstance(value, torch.Tensor):
                out[key] = value.detach().cpu().numpy()
            elif isinstance(value, NonTensorData):
                out[key] = value.data
            elif isinstance(value, NonTensorStack):
                out[key] = object_array(value, self.batch_size)
            else:
                out[key] = Batch.from_tensordict(value).to_numpy()
        return out

    def to_numpy_(self) -> Batch:
        """Detach every tensor and move it to the CPU in place, so ``np.asarray`` is free."""
        for key, value in list(self._tensordict.items()):
            if isinstance(value, torch.Tensor):
                self._tensordict[key] = value.detach().cpu()
            elif isinstance(value, Batch):
                value.to_numpy_()
        self._device = None
        return self

    def to_torch(self, dtype: torch.dtype | None = None, device: Any = "cpu") -> Batch:
        """New Batch with every tensor on ``device`` (and cast to ``dtype`` if given).

        Example:
            >>> Batch(a=[1, 2]).to_torch(torch.float32).a
            tensor([1., 2.])
        """
        return self.clone(recurse=False).to_torch_(dtype, device)

    def to_torch_(self, dtype: torch.dtype | None = None, device: Any = "cpu") -> Batch:
        """In-place :meth:`to_torch`: replace every tensor by its converted version."""
        dev = torch.device(device)
        for key, value in list(self._tensordict.items()):
            if isinstance(value, torch.Tensor):
                self._tensordict[key] = value.to(device=dev, dtype=dtype)
            elif isinstance(value, Batch):
                self._tensordict[key] = value.clone(recurse=False).to_torch_(dtype, device)
        return self

    # ------------------------------------------------------------------ conversion
    @classmethod
    def from_tensordict(cls, td: TensorDictBase) -> Batch:
        """Wrap a TensorDict (nested ones too) as a Batch that shares its tensors.

        Example:
            >>> td = TensorDict({"a": torch.zeros(3), "n": {"x": torch.ones(3)}}, [3])
            >>> b = Batch.from_tensordict(td)
            >>> type(b.n).__name__, b.batch_size
            ('Batch', torch.Size([3]))
        """
        if isinstance(td, cls):
            return td
        if not isinstance(td, TensorDict):
            td = td.to_tensordict()
        source: dict[str, Any] = {}
        for key, value in td._tensordict.items():
            if isinstance(value, TensorDictBase) and not is_non_tensor(value):
                value = cls.from_tensordict(value)
            source[key] = value
        return cls._new_unsafe(source, batch_size=td.batch_size, device=td.device, nested=False)


def _inference_shape(value: Any) -> tuple[int, ...] | None:
    """Shape used to infer the batch size: a single non-tensor object counts as 0-d."""
    if isinstance(value, ObjectEntry) and value.shape is None:
        return ()
    return entry_shape(value)


def _fit(key: str, value: Any, bs: torch.Size) -> Any:
    """Check ``value`` against the batch size ``bs`` and wrap non-tensor data for it."""
    if isinstance(value, ObjectEntry):
        if value.shape is not None and value.shape[: len(bs)] != tuple(bs):
            raise ValueError(
                f"Batch entry {key!r} has shape {_shape_str(value.shape)}, whose leading "
                f"dimensions do not match the batch size {_shape_str(bs)}."
            )
        return wrap_object(value, bs)
    shape = entry_shape(value)
    if shape is None:
        if isinstance(value, TensorDictBase) and tuple(value.batch_size) != tuple(bs):
            value = value.clone(recurse=False)
            value.batch_size = bs
        return value
    if shape[: len(bs)] != tuple(bs):
        raise ValueError(
            f"Batch entry {key!r} has shape {_shape_str(shape)}, whose leading dimensions "
            f"do not match the batch size {_shape_str(bs)}."
        )
    return value


def _index_leaf(value: Any, index: Any) -> Any:
    if isinstance(value, NonTensorData):
        data = value.data
        return data[index] if isinstance(data, np.ndarray) else data
    if isinstance(value, NonTensorStack):
        return np.asarray(value.tolist(), dtype=object)[index]
    return value[index]


def _empty_at(batch: Batch, key: str, index: Any) -> None:
    """Tianshou's fill for keys missing from an item assignment: 0, empty Batch or None."""
    leaf = batch._tensordict[key]
    if isinstance(leaf, torch.Tensor):
        leaf[index] = 0
    elif isinstance(leaf, Batch):
        leaf.empty_(index)
    elif isinstance(leaf, NonTensorStack):
        arr = np.asarray(leaf.tolist(), dtype=object)
        arr[index] = None
        batch._tensordict[key] = wrap_object(ObjectEntry(arr, arr.shape), batch.batch_size)
