"""``Batch``: a :class:`tensordict.TensorDict` with Tianshou's ``Batch`` semantics.

``Batch`` is a real ``TensorDict`` subclass, so every TensorDict/TorchRL function accepts it
(``torch.stack``, ``torch.cat``, ``clone``, ``apply``, ``to``, replay-buffer storages, ...)
and the results of indexing, stacking and slicing are Batches again, nested entries too.
On top it adds what Tianshou users expect: construction from keyword arguments, dicts,
lists of samples, numpy arrays and Python scalars; attribute access (``b.obs``,
``b.obs = x``, ``del b.obs``); ``Batch.stack`` / ``Batch.cat`` / ``split`` that fill missing
keys; ``empty_`` / ``Batch.empty``; ``to_numpy`` / ``to_torch``; a Tianshou-style repr.

Conversion rules (the dtype policy: numpy dtypes are kept and numpy memory is shared, Python
floats become float64 and ints int64 as in numpy/Tianshou) are in :mod:`tdrl.data.batch_ops`.

Batch size: given with ``batch_size=``, or inferred as the leading dimensions on which all
entries agree; a scalar entry (number or single object such as a string) makes the Batch
0-d, as in Tianshou. Empty nested Batches and ``None`` do not constrain it; a
``torch.distributions`` object counts with its ``batch_shape`` and is sliced on indexing. A
Batch whose batch size was inferred re-infers it when a key is set by attribute or string
item (it shrinks to the common leading dims; the new entry must agree on the first dim, so a
numeric scalar set on a batched Batch raises instead of silently making it 0-d; a single
object such as a string is shared by all samples); a 0-d Batch with no entries adopts the
full shape of its first entry. An explicit batch size never changes: a disagreeing entry
raises ``ValueError`` naming the key and both shapes. An index with more dimensions than the
batch size (``b[:, 1]`` on a 1-d Batch) is applied leaf by leaf, as Tianshou does.

Deliberate differences from Tianshou 2.0.1:

* Entries are always tensors (or TensorDict non-tensor data), never numpy arrays.
  ``to_numpy()`` therefore returns a nested dict of numpy arrays (zero-copy on CPU), and
  ``to_numpy_()`` only detaches and moves tensors to the CPU in place.
* Leading dims that disagree give the agreeing prefix, not Tianshou's per-dim minimum:
  ``Batch(a=np.zeros((2, 2)), b=[[5, -5]])`` is 0-d (Tianshou: shape ``[1, 2]``), so ``len``
  and iteration raise ``TypeError``; ``data[0]`` and ``data[:, 1] += 1`` still work leaf-wise
  with Tianshou's values.
* ``split`` defaults to ``shuffle=False`` (Tianshou: ``True``) and returns a list; a list of
  sizes or ``dim=`` keeps ``TensorDict.split``'s meaning.
* ``Batch.empty(b)`` on the class is Tianshou's; ``b.empty()`` on an instance is
  TensorDict's (same batch size, no keys), because TensorDict's internals call it.
* Item assignment ``b[i] = other`` creates keys that only ``other`` has (zero elsewhere,
  as TensorDict does; Tianshou raises). Keys only ``b`` has are reset to 0 / ``None`` at
  ``i``, as in Tianshou. ``Batch.cat`` fills missing keys (Tianshou 2.0.1 raises).
* Keys that are TensorDict attributes (``data``, ``names``, ``shape``, ``device``,
  ``batch_size``, ``keys``, ``items``, ``values``, ``get``, ``split``, ``mean``, ...) are read
  and written with ``b["key"]``; none of the reserved RL keys collides.
* Object columns read back (``b.key`` / ``b["key"]``) as numpy object arrays, strings as
  ``str``; ``b.get(key)`` returns TensorDict's ``NonTensorStack`` / ``NonTensorData``.
* ``np.mean(b)`` is not supported: use ``b.mean(0)`` (TensorDict). ``bool(b)`` raises, as
  for any TensorDict. ``-`` works (Tianshou has no ``__sub__``).
* ``b == c`` / ``b != c`` are element-wise, as TensorDict's, and their truth value is
  Tianshou's ("all equal" / "some differ"; different keys or shapes: not equal). The
  Tianshou-only methods are in :mod:`tdrl.data.batch_compat`.

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
    >>> Batch(obs=np.arange(6).reshape(2, 3), act=np.zeros((2, 2)))[:, 1].obs  # leaf-wise
    tensor([1, 4])
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import NonTensorData, NonTensorStack, TensorDict, TensorDictBase, is_non_tensor

from tdrl.data.batch_compat import BatchCompatMixin, dist_to_atleast_2d, get_sliced_dist
from tdrl.data.batch_index import (
    FAST_INDEX,
    empty_at,
    fast_index,
    index_ndim,
    is_key,
    leafwise_get,
    leafwise_set,
)
from tdrl.data.batch_ops import (
    _SOURCES,
    NUMERIC_KINDS,
    BatchShapeError,
    _explicit_size,
    batch_repr,
    common_prefix,
    convert_value,
    entry_shape,
    fit_entry,
    from_numpy,
    inference_shape,
    object_array,
    shape_str,
    torch_size,
)
from tdrl.data.batch_stack import cat_batches, empty_batch_, stack_batches

__all__ = ["Batch", "BatchShapeError", "dist_to_atleast_2d", "get_sliced_dist"]


_ndarray = np.ndarray
_Tensor = torch.Tensor
_torch_from_numpy = torch.from_numpy
_TD_UPDATE_OPTIONS = frozenset(
    {"non_blocking", "keys_to_update", "is_leaf", "update_batch_size", "ignore_lock"}
)


class _HybridEmpty:
    """``Batch.empty(batch, index=None)`` (Tianshou) on the class, TensorDict's on instances."""

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return _empty_copy
        return TensorDict.empty.__get__(obj, objtype)


def _empty_copy(batch: Batch, index: Any = None) -> Batch:
    """Return an emptied deep copy of ``batch`` (see :meth:`Batch.empty_`)."""
    return empty_batch_(Batch.from_tensordict(batch).clone(), index)


def wrap_entries(cls: type[Batch], entries: dict[str, Any], batch_size: torch.Size) -> Batch:
    """A ``cls`` that holds ``entries`` as they are: no conversion, no check (internal).

    The caller guarantees that every value is a CPU ``torch.Tensor`` or a Batch whose
    leading dimensions are ``batch_size``; the result then equals
    ``cls(entries, batch_size=batch_size)`` (what the collector builds for its policy every
    step, at a fraction of the cost).

    >>> b = wrap_entries(Batch, {"obs": torch.zeros(2, 3)}, torch.Size([2]))
    >>> b.batch_size, b.obs.shape
    (torch.Size([2]), torch.Size([2, 3]))
    """
    out = cls.__new__(cls)
    attrs = out.__dict__
    attrs["_tensordict"] = entries
    attrs["_batch_size"] = batch_size
    attrs["_device"] = None
    attrs["_td_dim_names"] = None
    return out


class Batch(BatchCompatMixin, TensorDict):
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
        if (
            type(batch_dict) is dict
            and batch_size is not None
            and not kwargs
            and not copy
            and device is None
            and names is None
            and not lock
        ):
            # the policy-output case ``Batch({"act": tensor}, batch_size=[n])``: plain
            # tensors that fit the explicit size are stored as they are (what the general
            # path below does with them); anything else takes the general path
            bs = _explicit_size(batch_size)
            if bs is not None:
                nb = len(bs)
                for key, value in batch_dict.items():
                    if type(value) is not _Tensor or type(key) is not str:
                        break
                    if value.shape[:nb] != bs:
                        break
                else:
                    attrs = self.__dict__
                    attrs["_tensordict"] = dict(batch_dict)
                    attrs["_batch_size"] = bs
                    attrs["_device"] = None
                    attrs["_td_dim_names"] = None
                    return
        if batch_dict is not None and kwargs:
            if not isinstance(batch_dict, Mapping):
                raise ValueError("Batch: keyword entries go with a mapping, not a sequence.")
            batch_dict = {**_as_source(batch_dict), **kwargs}  # Batch(mapping, **kwargs)
            kwargs = {}
        if batch_dict is None:
            source: Mapping[str, Any] = kwargs
        elif type(batch_dict) is dict:
            source = batch_dict
            for key in source:
                if type(key) is not str:
                    raise TypeError(f"Batch keys must be str, got {key!r} ({type(key).__name__}).")
        elif isinstance(batch_dict, TensorDictBase):
            if batch_size is None:
                batch_size = batch_dict.batch_size
            source = {k: batch_dict._get_str(k, None) for k in batch_dict.keys()}  # noqa: SIM118
        elif isinstance(batch_dict, Mapping):
            source = batch_dict
            for key in source:
                if type(key) is not str:
                    raise TypeError(f"Batch keys must be str, got {key!r} ({type(key).__name__}).")
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
        others: list[str] = []  # entries that are not plain tensors need fit_entry
        empty: list[str] = []  # ``{}`` values: empty Batches made once the size is known
        sources: dict[str, tuple[torch.Tensor, np.ndarray, int]] = {}  # see numpy_entries
        for key, value in source.items():
            vtype = type(value)
            if vtype is _ndarray and value.dtype.kind in NUMERIC_KINDS and not copy:
                # inlined ``from_numpy`` (the per-step hot path: a collector's arrays)
                if value.flags.writeable:
                    try:
                        entries[key] = tensor = _torch_from_numpy(value)
                        sources[key] = (tensor, value, tensor.data_ptr())
                    except ValueError:  # negative strides
                        entries[key] = from_numpy(value)
                else:
                    entries[key] = from_numpy(value)
                shapes.append(value.shape)  # a tuple: cheaper than the tensor's torch.Size
                continue
            if vtype is _Tensor and not copy:
                entry: Any = value
            elif vtype is dict and not value:
                empty.append(key)
                entries[key] = None
                continue
            else:
                entry = convert_value(value, cls, copy)
                if type(entry) is not torch.Tensor:
                    others.append(key)
                    shape = inference_shape(entry)
                    if shape is not None:
                        shapes.append(shape)
                    entries[key] = entry
                    continue
            shapes.append(entry.shape)
            entries[key] = entry
        if batch_size is None:
            bs = torch_size(common_prefix(shapes))
            inferred = True
        else:
            bs = torch.Size([batch_size] if isinstance(batch_size, int) else batch_size)
            inferred = False
        if not inferred:
            nb = len(bs)
            for key, entry in entries.items():
                if type(entry) is torch.Tensor and entry.shape[:nb] != bs:
                    fit_entry(key, entry, bs)  # raises the error naming the key
        for key in others:
            entries[key] = fit_entry(key, entries[key], bs)
        for key in empty:
            entries[key] = wrap_entries(cls, {}, bs)
        if device is None and names is None and not lock:
            attrs = self.__dict__
            attrs["_tensordict"] = entries
            attrs["_batch_size"] = bs
            attrs["_device"] = None
            attrs["_td_dim_names"] = None
            if sources:
                attrs[_SOURCES] = sources
            if inferred:
                attrs["_inferred"] = True
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
                self.__dict__["_inferred"] = True
        if others and self._dist_keys():
            self.__dict__["_dists"] = True

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
        if type(value) is torch.Tensor or (
            isinstance(value, (torch.Tensor, TensorDictBase)) and not is_non_tensor(value)
        ):
            return value
        return self[name]

    def __setattr__(self, name: str, value: Any) -> None:
        if name[0] == "_":
            object.__setattr__(self, name, value)
        elif hasattr(type(self), name):
            try:
                object.__setattr__(self, name, value)
            except AttributeError:
                raise AttributeError(
                    f"{name!r} is a read-only TensorDict attribute of {type(self).__name__}; "
                    f"set the entry with batch[{name!r}] = value"
                ) from None
        else:
            self._set_key(name, value)

    def __delattr__(self, name: str) -> None:
        if name[0] != "_" and name in self.__dict__.get("_tensordict", ()):
            self.del_(name)
        else:
            object.__delattr__(self, name)

    def _set_key(self, key: str, value: Any) -> None:
        entry = convert_value(value, type(self))
        shape = inference_shape(entry)
        bs: torch.Size = self.__dict__["_batch_size"]
        if shape is not None:
            if not self._tensordict and (not bs or self._inferred):
                bs = self.__dict__["_batch_size"] = torch.Size(shape)
                self._inferred = True
            elif shape[: len(bs)] != tuple(bs):
                if self._inferred and len(shape) > 0 and shape[0] == bs[0]:
                    bs = torch.Size(common_prefix([tuple(bs), shape]))
                    self.batch_size = bs
                elif entry_shape(entry) is not None:
                    raise BatchShapeError(
                        f"Batch entry {key!r} has shape {shape_str(shape)}, whose leading "
                        f"dimensions do not match the batch size {shape_str(bs)}."
                    )
        TensorDict._set_str(self, key, fit_entry(key, entry, bs), inplace=False, validated=False)

    def update(  # type: ignore[override]
        self,
        input_dict_or_td: Any = None,
        clone: bool = False,
        inplace: bool = False,
        **kwargs: Any,
    ) -> Batch:
        """Set entries from a mapping and/or keyword arguments (``b.update(x=1)``).

        Plain mappings and keyword entries go through the Batch conversion rules (nested
        mappings update nested Batches); a TensorDict source or TensorDict's options
        (``clone``, ``inplace``, ``keys_to_update``, ...) use :meth:`TensorDict.update`.

        Example:
            >>> b = Batch(a=[0, 0])
            >>> b.update({"n": {"x": [1.0, 2.0]}}, c=[3, 4]).n.x
            tensor([1., 2.], dtype=torch.float64)
        """
        td_options = kwargs.keys() & _TD_UPDATE_OPTIONS
        if clone or inplace or td_options or isinstance(input_dict_or_td, TensorDictBase):
            if td_options != kwargs.keys():
                raise TypeError("keyword entries cannot be mixed with TensorDict.update options.")
            TensorDict.update(self, input_dict_or_td, clone, inplace, **kwargs)
            return self
        items = dict(input_dict_or_td or {})
        items.update(kwargs)
        for key, value in items.items():
            current = self._tensordict.get(key)
            if isinstance(current, Batch) and isinstance(value, Mapping):
                current.update(value)
            else:
                self._set_key(key, value)
        return self

    # ------------------------------------------------------------------ indexing
    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, str):
            value = self._tensordict.get(index)
            if type(value) is torch.Tensor:
                return value
            if isinstance(value, NonTensorStack):
                return object_array(value, self.batch_size)
            return TensorDict.__getitem__(self, index)
        if self.__dict__.get("_dists") and not is_key(index):
            return self._index_with_dists(index)
        itype = type(index)
        if itype in FAST_INDEX and self.__dict__["_batch_size"]:
            out = fast_index(self, index, itype)
            if out is not None:
                return out
        if is_key(index):
            return TensorDict.__getitem__(self, index)
        ndim = index_ndim(index)
        if ndim is None:  # with an Ellipsis: leaf by leaf when the rest exceeds the batch dims
            items = index if isinstance(index, tuple) else (index,)
            ndim = index_ndim(tuple(i for i in items if i is not Ellipsis))
        if ndim is not None and ndim > self.batch_dims:
            return leafwise_get(self, index)
        return TensorDict.__getitem__(self, index)

    __getitems__ = __getitem__

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, str):
            self._set_key(index, value)
            return
        if is_key(index):
            TensorDict.__setitem__(self, index, value)
            return
        if isinstance(value, Mapping) and not isinstance(value, TensorDictBase):
            value = type(self)(value)
        if not isinstance(value, TensorDictBase):
            TensorDict.__setitem__(self, index, value)
            return
        ndim = index_ndim(index)
        if ndim is not None and ndim > self.batch_dims:
            leafwise_set(self, index, value)
            return
        TensorDict.__setitem__(self, index, value)
        for key in self._tensordict.keys() - set(value.keys()):
            empty_at(self, key, index)

    # ------------------------------------------------------------------ sizes
    def __len__(self) -> int:
        """Length of the first batch dim; ``TypeError`` for a 0-d Batch, as in numpy, except
        that a Batch without keys (or with only empty nested Batches) has length 0, as
        Tianshou's ``len(Batch())``."""
        if not self.batch_size:
            if self.is_empty(recurse=True):
                return 0
            raise TypeError(f"Object of type '{type(self).__name__}' has no len()")
        return self.batch_size[0]

    def __iter__(self) -> Iterator[Any]:
        """Iterate over the samples along the first batch dim (not over keys); a Batch
        without keys (or with only empty nested Batches) yields nothing."""
        if not self.batch_size:
            if self.is_empty(recurse=True):
                return
            raise TypeError(f"iteration over a 0-d {type(self).__name__}")
        for i in range(self.batch_size[0]):
            yield self[i]

    def __repr__(self) -> str:
        return batch_repr(self)

    __str__ = __repr__

    def __getstate__(self) -> dict[str, Any]:
        """TensorDict's state, without the source arrays of :func:`numpy_entries` (a copy
        of them would not share the tensors' memory)."""
        state = super().__getstate__()
        state.pop(_SOURCES, None)
        return state

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
        # shuffling gathers once, then every chunk is a cheap slice of the permuted copy
        source = self[torch.randperm(length)] if shuffle and length > 1 else self
        merge_last = merge_last and length % size > 0
        chunks = []
        for start in range(0, length, size):
            stop = length if merge_last and start + 2 * size >= length else start + size
            chunks.append(source[start:stop])
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
        return _tree_copy(self).to_torch_(dtype, device)

    def to_torch_(self, dtype: torch.dtype | None = None, device: Any = "cpu") -> Batch:
        """In-place :meth:`to_torch`: replace every tensor by its converted version."""
        dev = torch.device(device)
        for key, value in list(self._tensordict.items()):
            if isinstance(value, torch.Tensor):
                self._tensordict[key] = value.to(device=dev, dtype=dtype)
            elif isinstance(value, Batch):
                value.to_torch_(dtype, device)
        if self.__dict__.get("_device") is not None:
            self.__dict__["_device"] = dev
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


def _as_source(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of a mapping (a TensorDict's values as stored)."""
    if isinstance(mapping, TensorDictBase):
        return {k: mapping._get_str(k, None) for k in mapping.keys()}  # noqa: SIM118
    return dict(mapping)


def _tree_copy(batch: Batch) -> Batch:
    """Copy of the Batch structure (nested Batches too) that shares the tensors."""
    out = batch.clone(recurse=False)
    for key, value in out._tensordict.items():
        if isinstance(value, Batch):
            out._tensordict[key] = _tree_copy(value)
    return out
