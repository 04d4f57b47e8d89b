"""Tianshou 2.0 ``Batch`` methods that are not TensorDict's: the :class:`BatchCompatMixin`.

``Batch`` inherits these ahead of ``TensorDict``. They keep Tianshou's names and meanings with
tdrl's storage (entries are tensors; object columns are numpy object arrays):

* :meth:`~BatchCompatMixin.get_keys`, :meth:`~BatchCompatMixin.cat_` (in place),
  :meth:`~BatchCompatMixin.set_array_at_key`, :meth:`~BatchCompatMixin.isnull`,
  :meth:`~BatchCompatMixin.hasnull`, :meth:`~BatchCompatMixin.dropnull`,
  :meth:`~BatchCompatMixin.apply_values_transform`, :meth:`~BatchCompatMixin.to_at_least_2d`,
  ``to_dict(recursive=...)``;
* the module functions :func:`dist_to_atleast_2d` and :func:`get_sliced_dist` for
  ``torch.distributions`` objects.

Example:
    >>> from tdrl.data import Batch
    >>> b = Batch(a=[4, 5, 6], b=[7.0, 8.0, float("nan")])
    >>> b.hasnull(), b.dropnull().a
    (True, tensor([4, 5]))
    >>> b.set_array_at_key(np.array([1, 2]), "c", index=[0, 1], default_value=0).c
    tensor([1, 2, 0])
"""

from __future__ import annotations

from collections.abc import Callable, KeysView
from typing import Any

import numpy as np
import torch
from tensordict import NonTensorData, TensorDict, TensorDictBase
from torch.distributions import Categorical, Distribution, Independent, Normal

__all__ = [
    "AllEqual",
    "AnyDifferent",
    "BatchCompatMixin",
    "dist_to_atleast_2d",
    "get_sliced_dist",
]

_MISMATCH = (KeyError, RuntimeError, ValueError, TypeError, IndexError)


class AllEqual(TensorDict):
    """The element-wise result of ``batch == other`` (a TensorDict of bool tensors), whose
    truth value is ``all()``: ``assert a == b`` and ``if a == b`` mean "every entry equal"."""

    def __bool__(self) -> bool:
        return bool(self.all())


class AnyDifferent(TensorDict):
    """The element-wise result of ``batch != other``, whose truth value is ``any()``."""

    def __bool__(self) -> bool:
        return bool(self.any())


def _same_keys(a: TensorDictBase, b: TensorDictBase) -> bool:
    keys_a = set(a.keys(include_nested=True, leaves_only=True))
    return keys_a == set(b.keys(include_nested=True, leaves_only=True))


def dist_to_atleast_2d(dist: Distribution) -> Distribution:
    """``dist`` with a batch shape of at least one dimension (Tianshou's name).

    A distribution that already has a batch dimension is returned as is (the same object),
    so the function is idempotent. Supports ``Categorical``, ``Normal`` and ``Independent``
    over them.

    >>> dist_to_atleast_2d(Normal(torch.tensor(0.0), torch.tensor(1.0))).batch_shape
    torch.Size([1])
    """
    if len(dist.batch_shape) > 0:
        return dist
    if isinstance(dist, Categorical):
        return Categorical(probs=dist.probs.unsqueeze(0))
    if isinstance(dist, Normal):
        return Normal(loc=dist.loc.unsqueeze(0), scale=dist.scale.unsqueeze(0))
    if isinstance(dist, Independent):
        base = dist_to_atleast_2d(dist.base_dist)
        return Independent(base, dist.reinterpreted_batch_ndims)
    raise NotImplementedError(f"dist_to_atleast_2d: unsupported distribution {type(dist)}")


def get_sliced_dist(dist: Distribution, index: Any) -> Distribution:
    """The distribution of the rows ``index`` of ``dist``'s batch (Tianshou's name).

    >>> get_sliced_dist(Categorical(probs=torch.ones(4, 2)), [1, 3]).batch_shape
    torch.Size([2])
    """
    if isinstance(dist, Categorical):
        return Categorical(probs=dist.probs[index])
    if isinstance(dist, Normal):
        return Normal(loc=dist.loc[index], scale=dist.scale[index])
    if isinstance(dist, Independent):
        return Independent(get_sliced_dist(dist.base_dist, index), dist.reinterpreted_batch_ndims)
    raise NotImplementedError(f"get_sliced_dist: unsupported distribution {type(dist)}")


def _null(value: Any) -> Any:
    """Element-wise null mask of one leaf: NaN for floating tensors, ``None``/NaN for objects."""
    if isinstance(value, torch.Tensor):
        if value.is_floating_point():
            return torch.isnan(value)
        return torch.zeros_like(value, dtype=torch.bool)
    arr = np.asarray(value, dtype=object)
    flat = [x is None or (isinstance(x, float) and x != x) for x in arr.reshape(-1)]
    return torch.as_tensor(np.array(flat, dtype=bool).reshape(arr.shape))


def _leaf_numpy(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return value


class BatchCompatMixin:
    """Tianshou ``Batch`` methods for :class:`~tdrl.data.Batch` (see the module docstring)."""

    def _compare(self, other: Any, equal: bool) -> Any:
        if isinstance(other, TensorDictBase) and not _same_keys(self, other):  # type: ignore[arg-type]
            return not equal
        try:
            out = super().__eq__(other) if equal else super().__ne__(other)  # type: ignore[misc]
        except _MISMATCH:  # shapes that do not broadcast: not equal
            return not equal
        if isinstance(out, TensorDict):
            out.__class__ = AllEqual if equal else AnyDifferent
        return out

    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        """Element-wise ``==`` (a TensorDict of bools, as TensorDict's) whose truth value is
        "all equal"; ``False`` (a bool) when the keys differ or the shapes do not broadcast."""
        return self._compare(other, True)

    def __ne__(self, other: object) -> Any:  # type: ignore[override]
        """Element-wise ``!=`` whose truth value is "any different"; ``True`` when the keys
        differ or the shapes do not broadcast."""
        return self._compare(other, False)

    __hash__ = None  # type: ignore[assignment]  # as TensorDict: mutable, not hashable

    def _dist_keys(self) -> list[str]:
        """Top-level keys holding a ``torch.distributions`` object (batched entries)."""
        return [
            k
            for k, v in self._tensordict.items()  # type: ignore[attr-defined]
            if isinstance(v, NonTensorData) and isinstance(v.data, Distribution)
        ]

    def _index_with_dists(self, index: Any) -> Any:
        """``self[index]`` when distributions are stored: they are sliced along their batch
        shape with :func:`get_sliced_dist` (Tianshou's rule)."""
        keys = self._dist_keys()
        out = self.exclude(*keys)[index]  # type: ignore[attr-defined]
        for key in keys:
            dist = get_sliced_dist(self._tensordict[key].data, index)  # type: ignore[attr-defined]
            out._tensordict[key] = NonTensorData(dist, batch_size=out.batch_size)
        if keys:
            out.__dict__["_dists"] = True
        return out

    def _leaf_items(self) -> list[tuple[str, Any]]:
        """``(key, value)`` of the top level, values as ``b.key`` returns them."""
        return [(k, self[k]) for k in list(self.keys())]  # type: ignore[attr-defined,index]

    def get_keys(self) -> KeysView:
        """The top-level keys (Tianshou's ``get_keys``)."""
        return dict.fromkeys(self.keys()).keys()  # type: ignore[attr-defined]

    def to_dict(self, recursive: bool = True, **kwargs: Any) -> dict[str, Any]:
        """A dict of the entries; ``recursive=False`` keeps nested Batches as they are.

        Values are tdrl's (tensors; object columns as numpy object arrays). Other keyword
        arguments are TensorDict's ``to_dict`` options and imply ``recursive=True``.
        """
        if recursive or kwargs:
            return super().to_dict(**kwargs)  # type: ignore[misc]
        return dict(self._leaf_items())

    def cat_(self, batches: Any) -> Any:
        """Concatenate ``batches`` (one or a sequence) after this Batch, in place."""
        others = [batches] if not isinstance(batches, (list, tuple)) else list(batches)
        out = type(self).cat([self, *others])  # type: ignore[attr-defined]
        attrs = self.__dict__
        attrs["_tensordict"] = out._tensordict
        attrs["_batch_size"] = out.batch_size
        return self

    def set_array_at_key(
        self,
        seq: Any,
        key: str,
        index: Any = None,
        default_value: float | None = None,
    ) -> Any:
        """Set ``self.key`` (``[index]`` only, if given) to the array ``seq``, in place.

        A new key with an ``index`` is filled with ``default_value`` elsewhere (NaN for a
        float array when ``None``). ``seq`` must match the rows it is written to
        (``ValueError``); an index out of range raises ``IndexError``.
        """
        value = torch.as_tensor(np.asarray(seq))
        n = len(self)  # type: ignore[arg-type]
        if index is None:
            if value.shape[:1] != (n,):
                raise ValueError(f"{key}: expected {n} rows, got shape {tuple(value.shape)}")
            self[key] = value  # type: ignore[index]
            return self
        rows = np.arange(n)[index]  # IndexError when out of range
        if value.shape[:1] != np.shape(rows)[:1]:
            raise ValueError(f"{key}: expected {len(rows)} rows, got shape {tuple(value.shape)}")
        if key in self.keys():  # type: ignore[attr-defined]
            column = self[key].clone()  # type: ignore[index]
        else:
            fill = default_value
            if fill is None:
                if not value.is_floating_point():
                    raise ValueError(f"{key}: default_value is needed for a non-float array")
                fill = float("nan")
            column = torch.full((n, *value.shape[1:]), fill, dtype=value.dtype)
        column[torch.as_tensor(rows)] = value.to(column.dtype)
        self[key] = column  # type: ignore[index]
        return self

    def isnull(self) -> Any:
        """A Batch of bool masks: True where a value is NaN or ``None``."""
        return self.apply_values_transform(_null, numpy=False)

    def hasnull(self) -> bool:
        """Whether any value is NaN or ``None``."""
        masks = self.isnull()
        return any(bool(m.any()) for m in masks.values(include_nested=True, leaves_only=True))

    def dropnull(self) -> Any:
        """The rows (along the first dim) without any NaN or ``None`` value."""
        keep = torch.ones(len(self), dtype=torch.bool)  # type: ignore[arg-type]
        for mask in self.isnull().values(include_nested=True, leaves_only=True):
            keep &= ~mask.reshape(mask.shape[0], -1).any(dim=1)
        return self[keep]  # type: ignore[index]

    def apply_values_transform(self, fn: Callable[[Any], Any], numpy: bool = True) -> Any:
        """A new Batch with ``fn`` applied to every leaf value (nested Batches recursed).

        ``fn`` receives numpy arrays (tensors converted without a copy on the CPU), as
        Tianshou's values are; ``numpy=False`` passes tdrl's values as they are.
        """
        out: dict[str, Any] = {}
        for key, value in self._leaf_items():
            if isinstance(value, BatchCompatMixin):
                out[key] = value.apply_values_transform(fn, numpy)
            else:
                out[key] = fn(_leaf_numpy(value) if numpy else value)
        cls: Any = type(self)
        return cls(out)

    def to_at_least_2d(self) -> Any:
        """A new Batch whose values have at least two dims (distributions one batch dim)."""

        def grow(value: Any) -> Any:
            if isinstance(value, Distribution):
                return dist_to_atleast_2d(value)
            return np.atleast_2d(value)

        return self.apply_values_transform(grow)
